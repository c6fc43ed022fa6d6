import HomeroomCore

/// Translates the client's messaging callbacks into context events.
extension ContextEvent {
    static func messages(_ deliveries: [MessageInbox.Delivery], lookup: (UserID) -> UserInfo) -> [ContextEvent] {
        deliveries.map { delivery in
            let info = MessageInfo(delivery.message, sender: lookup(delivery.message.sender), late: delivery.late, gap: delivery.gap)
            return info.isPeer ? .peerMessageReceived(info) : .roomMessageReceived(info)
        }
    }

    /// The messaging changes a UI hears about directly. New messages come through the
    /// inbox (`messages`), presence through the batcher (`presence`).
    static func translate(_ changes: [MessagingChange], localUser: UserID, lookup: (UserID) -> UserInfo) -> [ContextEvent] {
        var events: [ContextEvent] = []
        for change in changes {
            switch change {
            case let .messagesRemoved(keys, _): events.append(.messagesRemoved(keys))
            case let .chatMuteUpdated(user, muted): events.append(.chatMuteUpdated(user: user.map(lookup), muted: muted))
            case let .propertyConflict(conflict): events.append(.propertyConflict(PropertyConflictInfo(conflict, localUser: localUser)))
            case .messageAdded, .historyLimitUpdated, .presenceStateUpdated, .userTimedOut: break
            }
        }
        return events
    }

    static func presence(_ events: [PresenceBatcher.Event], lookup: (UserID) -> UserInfo) -> [ContextEvent] {
        events.map { event in
            switch event {
            case let .joined(user): return .presence(.joined(lookup(user)))
            case let .left(user): return .presence(.left(lookup(user)))
            case let .timedOut(user): return .presence(.timedOut(lookup(user)))
            case let .stateChanged(user, state): return .presence(.stateChanged(lookup(user), state: state))
            case let .interval(interval):
                return .presence(.interval(joined: interval.joined, left: interval.left, timedOut: interval.timedOut, states: interval.states))
            }
        }
    }
}

extension MessageInfo {
    init(_ message: Message, sender: UserInfo, late: Bool = false, gap: Bool = false) {
        self.init(key: message.key, sender: sender, recipient: message.recipient, type: message.type, payload: message.payload,
                  sentAtMillis: message.sentAtMillis, late: late, gap: gap)
    }
}

extension PropertyConflictInfo {
    /// The client reports the local user's own lost writes without an author: it is the local user.
    init(_ conflict: PropertyConflict, localUser: UserID) {
        let owner: UserID?
        switch conflict.scope {
        case .room: owner = nil
        case let .user(user): owner = user
        }
        self.init(owner: owner, key: conflict.key, keptRevision: conflict.kept.revision, keptAuthor: conflict.kept.author,
                  keptValue: conflict.kept.value.map { String(decoding: $0, as: UTF8.self) }, lostRevision: conflict.lost.revision,
                  lostAuthor: conflict.lost.author.isEmpty ? localUser : conflict.lost.author)
    }
}
