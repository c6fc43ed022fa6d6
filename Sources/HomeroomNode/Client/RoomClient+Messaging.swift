import HomeroomCore
import HomeroomWire
import HomeroomSupport

/// A property write this client made, until its fate is known.
struct PendingPropertyWrite: Sendable {
    var scope: PropertyScope
    var key: String
    var dot: Dot
    var revision: UInt64
    var sentAtMillis: UInt64
    /// The lock fence it was made under (0: unguarded).
    var fence: UInt64 = 0
}

/// What a property write became at the node that sequenced it.
public struct PropertyWriteResult: Hashable, Sendable {
    /// The delta the write became (for a later `propertyWriteKept(_:)`).
    public var dot: Dot
    /// The key's revision this write created.
    public var revision: UInt64
    public var scope: PropertyScope
    public var key: String
    /// The whole set's revision (room's or user's) at that node once the write applied.
    public var setRevision: UInt64 = 0
    /// The lock fence it was made under (0: unguarded).
    public var fence: UInt64 = 0

    public init(dot: Dot, revision: UInt64, scope: PropertyScope, key: String, setRevision: UInt64 = 0, fence: UInt64 = 0) {
        self.dot = dot
        self.revision = revision
        self.scope = scope
        self.key = key
        self.setRevision = setRevision
        self.fence = fence
    }
}

/// Messaging for a `RoomClient` (docs/MESSAGING.md): room and peer messages delivered
/// in each sender's order, the history, presence state and events, and property
/// writes with revisions whose loser is told.
extension RoomClient {
    // MARK: - Listening

    /// Calls `handler` with messages as they can be delivered: once each, in each
    /// sender's order (a message waits up to `messageHoldMillis` for the sender's
    /// previous one). Catch-up after a reconnect is delivered the same way; the
    /// history that came with the first join is not (read it from `history`).
    @discardableResult
    public func onMessage(_ handler: @escaping @Sendable ([MessageInbox.Delivery]) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextListener += 1
            state.messageListeners[state.nextListener] = handler
            return state.nextListener
        }
    }

    /// Calls `handler` with every messaging change set this client applies (messages
    /// entering and leaving the history, mutes, presence state, timeouts, property
    /// conflicts), plus a `.propertyConflict` for each of this user's own property
    /// writes found overwritten by a write that had not seen it.
    @discardableResult
    public func onMessagingChange(_ handler: @escaping @Sendable ([MessagingChange]) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextListener += 1
            state.messagingListeners[state.nextListener] = handler
            return state.nextListener
        }
    }

    /// Calls `handler` with presence events: joins, leaves, timeouts and state changes
    /// one by one, or as interval events above `presenceThreshold` online users.
    @discardableResult
    public func onPresence(_ handler: @escaping @Sendable ([PresenceBatcher.Event]) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextListener += 1
            state.presenceListeners[state.nextListener] = handler
            return state.nextListener
        }
    }

    public func removeMessagingListener(_ token: UInt64) {
        state.withLock { state in
            state.messageListeners[token] = nil
            state.messagingListeners[token] = nil
            state.presenceListeners[token] = nil
        }
    }

    // MARK: - Reading

    /// The history this user may see, oldest first, each sender's messages in its order.
    public var history: [Message] { state.withLock { $0.replica.history(for: user) } }

    /// Online users and their presence state, as a client shows them on joining.
    public var presenceSnapshot: [(user: UserID, state: [String: [UInt8]])] { state.withLock { $0.replica.presenceSnapshot() } }

    public func presenceState(of user: UserID) -> [String: [UInt8]] { state.withLock { $0.replica.presenceState(of: user) } }

    public func propertyRevision(_ scope: PropertyScope, key: String) -> UInt64 {
        state.withLock { $0.replica.propertyRevision(scope: scope, key: key) }
    }

    /// Whether a property write is part of what the property holds now (true), was
    /// overwritten by a write that never saw it (false), or cannot be told yet (nil).
    public func propertyWriteKept(_ result: PropertyWriteResult) -> Bool? {
        state.withLock { $0.replica.propertyWrite(result.dot, revision: result.revision, scope: result.scope, key: result.key, fence: result.fence) }
    }

    // MARK: - Sending

    /// Sends a room message; returns its key once the node has accepted it (or had it
    /// already: a retry is stored once). Refused with `muted` when chat is muted.
    @discardableResult
    public func send(type: String = "chat", _ payload: [UInt8]) throws(ClientError) -> MessageKey {
        try sendMessage(to: nil, type: type, payload)
    }

    /// Sends a peer message to one user of the room (wherever it is connected); only
    /// the two of them receive it.
    @discardableResult
    public func sendPeer(to recipient: UserID, type: String = "chat", _ payload: [UInt8]) throws(ClientError) -> MessageKey {
        try sendMessage(to: recipient, type: type, payload)
    }

    /// Sends a room message (`to` nil) or a peer message, and returns its key with the
    /// dot the node sequenced it under (nil for a retry the node already had and whose
    /// dot it no longer names): what a checker needs to find it in every replica.
    public func sendReceipted(to recipient: UserID?, type: String = "chat", _ payload: [UInt8]) throws(ClientError) -> (key: MessageKey, dot: Dot?) {
        try sendMessageAcknowledged(to: recipient, type: type, payload)
    }

    private func sendMessage(to recipient: UserID?, type: String, _ payload: [UInt8]) throws(ClientError) -> MessageKey {
        try sendMessageAcknowledged(to: recipient, type: type, payload).key
    }

    private func sendMessageAcknowledged(to recipient: UserID?, type: String, _ payload: [UInt8]) throws(ClientError) -> (key: MessageKey, dot: Dot?) {
        let conversation = recipient ?? ""
        let previous = state.withLock { state -> UInt64 in
            if let last = state.lastSent[conversation] { return last }
            // After a restart: the newest of this user's messages in the history.
            return state.replica.messages.entries.values
                .filter { $0.sender == user && $0.recipient == recipient }.map(\.key.counter).max() ?? 0
        }
        let operation: Operation = recipient.map { .sendPeerMessage(to: $0, type: type, payload: payload, previous: previous) }
            ?? .sendMessage(type: type, payload: payload, previous: previous)
        let (ack, write) = try sendWrite(operation, retries: 3)
        state.withLock { $0.lastSent[conversation] = max($0.lastSent[conversation] ?? 0, write.authorCounter) }
        return (MessageKey(sender: user, counter: write.authorCounter), ack.dot)
    }

    /// Sets (or, with nil values, removes) keys of this user's presence state. The
    /// state belongs to the current session: the client sets it again by itself after
    /// a reconnect, and it is gone for everyone when this client leaves or times out.
    /// Returns the write's dot (nil when there was nothing to set, or for a retry the node
    /// already had).
    @discardableResult
    public func setPresenceState(_ items: [String: [UInt8]?]) throws(ClientError) -> Dot? {
        let session = state.withLock { $0.session }
        let list = items.keys.sorted().map { PresenceItem(key: $0, value: items[$0]!) }
        guard !list.isEmpty else { return nil }
        let (ack, _) = try sendWrite(.setPresenceState(user: user, session: session, items: list), retries: 3)
        state.withLock { state in
            for (key, value) in items { state.presenceItems[key] = value }   // nil removes the key
        }
        return ack.dot
    }

    /// Writes a room property; `ifRevision` makes it conditional ("only if the key is
    /// still at this revision", 0: only if it was never written), refused with
    /// `revision-mismatch` otherwise. Under a partition two conditional writes can both
    /// be accepted on different sides; the merge keeps one, and this client is told
    /// (`onMessagingChange`, `.propertyConflict`) when its write is the one lost.
    @discardableResult
    /// `ifSetRevision` conditions it on the whole set instead, or as well ("only if the
    /// room's properties are still at this set revision", the sum of their keys'
    /// revisions: `RoomState.propertySetRevision`).
    /// `fence` guards it by a lock this user holds (`acquireLock`): refused unless that
    /// grant still holds, and it loses to every write of the key with a larger fence.
    public func setRoomProperty(_ key: String, value: [UInt8]?, cause: String = "", ifRevision: UInt64? = nil,
                                ifSetRevision: UInt64? = nil, fence: LockFence? = nil) throws(ClientError) -> PropertyWriteResult {
        try writeProperty(.room, key, .setRoomProperty(key: key, value: value, cause: cause,
                                                       revision: PropertyRevision(condition: ifRevision, setCondition: ifSetRevision, fence: fence)))
    }

    /// Writes a user property (the user's own, or anyone's for a teacher or an assistant).
    @discardableResult
    public func setUserProperty(of target: UserID, _ key: String, value: [UInt8]?, cause: String = "",
                                ifRevision: UInt64? = nil, ifSetRevision: UInt64? = nil, fence: LockFence? = nil) throws(ClientError) -> PropertyWriteResult {
        try writeProperty(.user(target), key, .setUserProperty(user: target, key: key, value: value, cause: cause,
                                                               revision: PropertyRevision(condition: ifRevision, setCondition: ifSetRevision, fence: fence)))
    }

    private func writeProperty(_ scope: PropertyScope, _ key: String, _ operation: Operation) throws(ClientError) -> PropertyWriteResult {
        let (ack, _) = try sendWrite(operation, retries: 3)
        let dot = ack.dot ?? Dot(origin: ReplicaID(0), sequence: 0)
        var fence: UInt64 = 0
        if case let .setRoomProperty(_, _, _, revision) = operation { fence = revision.fence?.fence ?? 0 }
        if case let .setUserProperty(_, _, _, _, revision) = operation { fence = revision.fence?.fence ?? 0 }
        if ack.status == .accepted {
            state.withLock { state in
                state.pendingProperties.append(PendingPropertyWrite(scope: scope, key: key, dot: dot, revision: ack.revision,
                                                                    sentAtMillis: WallClock.monotonicMillis(), fence: fence))
            }
        }
        return PropertyWriteResult(dot: dot, revision: ack.revision, scope: scope, key: key, setRevision: ack.setRevision, fence: fence)
    }

    // MARK: - The shell's side (called with `emitting` held)

    /// Hands a change set to the messaging listeners: messages through the inbox,
    /// presence through the batcher, own property writes checked for loss.
    func dispatch(_ changes: [RoomChange], _ messaging: [MessagingChange], deliver: Bool) {
        let now = WallClock.monotonicMillis()
        var presenceEvents: [PresenceBatcher.Event] = []
        let timedOut = Set(messaging.compactMap { if case let .userTimedOut(user) = $0 { return user } else { return nil } })
        for change in changes {
            switch change {
            case let .userJoined(user): presenceEvents.append(.joined(user))
            case let .userLeft(user): presenceEvents.append(timedOut.contains(user) ? .timedOut(user) : .left(user))
            default: break
            }
        }
        let added = messaging.compactMap { if case let .messageAdded(message) = $0 { return message } else { return nil } }
        let (deliveries, presence, ownLosses, listeners) = state.withLock { state in
            var deliveries: [MessageInbox.Delivery] = []
            if !added.isEmpty {
                if deliver {
                    let replica = state.replica
                    deliveries = state.inbox.offer(added, nowMillis: now, present: { replica.messages[$0] != nil })
                } else {
                    state.inbox.markKnown(added.map(\.key))
                }
            }
            for case let .presenceStateUpdated(user, _) in messaging {
                presenceEvents.append(.stateChanged(user, state.replica.presenceState(of: user)))
            }
            var presence: [PresenceBatcher.Event] = []
            if !presenceEvents.isEmpty || !state.presenceListeners.isEmpty {
                // Over the records themselves: by key it hashed every id of a 100,000-user snapshot twice.
                let dead = state.replica.deadIncarnations
                let online = presenceEvents.isEmpty ? 0 : state.replica.users.values.reduce(0) { $0 + ($1.isOnline(deadIncarnations: dead) ? 1 : 0) }
                if !presenceEvents.isEmpty { presence = state.presence.offer(presenceEvents, onlineCount: online, nowMillis: now) }
            }
            for case let .propertyConflict(conflict) in messaging { state.reportedLost.formUnion(conflict.lostDots) }
            let losses = Self.resolvePending(&state, nowMillis: now)
            return (deliveries, presence, losses,
                    (Array(state.messageListeners.values), Array(state.messagingListeners.values), Array(state.presenceListeners.values)))
        }
        let allMessaging = messaging + ownLosses
        if !deliveries.isEmpty { for listener in listeners.0 { listener(deliveries) } }
        if !allMessaging.isEmpty { for listener in listeners.1 { listener(allMessaging) } }
        if !presence.isEmpty { for listener in listeners.2 { listener(presence) } }
    }

    /// This user's property writes that turned out overwritten, as conflicts not yet told.
    static func resolvePending(_ state: inout State, nowMillis: UInt64) -> [MessagingChange] {
        guard !state.pendingProperties.isEmpty else { return [] }
        var losses: [MessagingChange] = []
        var keep: [PendingPropertyWrite] = []
        for pending in state.pendingProperties {
            let register: Register<PropertyValue>?
            switch pending.scope {
            case .room: register = state.replica.properties[pending.key]
            case let .user(target): register = state.replica.users[target]?.properties[pending.key]
            }
            switch state.replica.propertyWrite(pending.dot, revision: pending.revision, scope: pending.scope, key: pending.key, fence: pending.fence) {
            case false?:
                if state.reportedLost.insert(pending.dot).inserted, let current = register {
                    let kept = PropertyWriteInfo(author: current.value.operatorID, revision: current.value.revision, dot: current.stamp.dot,
                                                 value: current.value.bytes)
                    let lost = PropertyWriteInfo(author: "", revision: pending.revision, dot: pending.dot, value: nil)
                    losses.append(.propertyConflict(PropertyConflict(scope: pending.scope, key: pending.key, kept: kept, lost: lost,
                                                                      lostDots: [pending.dot])))
                }
            case true?:
                // Still the current write: a conflict may yet come (a partition heals).
                // Built upon by a later write: settled.
                if register?.stamp.dot == pending.dot && nowMillis &- pending.sentAtMillis < 60_000 { keep.append(pending) }
            case nil:
                if nowMillis &- pending.sentAtMillis < 60_000 { keep.append(pending) }
            }
        }
        state.pendingProperties = keep
        return losses
    }

    /// The sync loop's turn: messages whose predecessor did not come, presence intervals,
    /// property writes whose fate became known.
    func tickMessaging() {
        emitting.withLock { _ in
            let now = WallClock.monotonicMillis()
            let (deliveries, presence, losses, listeners) = state.withLock { state in
                (state.inbox.tick(nowMillis: now), state.presence.tick(nowMillis: now), Self.resolvePending(&state, nowMillis: now),
                 (Array(state.messageListeners.values), Array(state.messagingListeners.values), Array(state.presenceListeners.values)))
            }
            if !deliveries.isEmpty { for listener in listeners.0 { listener(deliveries) } }
            if !losses.isEmpty { for listener in listeners.1 { listener(losses) } }
            if !presence.isEmpty { for listener in listeners.2 { listener(presence) } }
        }
    }

    /// After a (re)join: the presence state this user had set, again, for the new session.
    func restorePresence(through requester: SPRequester, session: SessionID) {
        let (items, counter) = state.withLock { state -> ([PresenceItem], UInt64) in
            let items = state.presenceItems.keys.sorted().map { PresenceItem(key: $0, value: state.presenceItems[$0]) }
            if !items.isEmpty { state.writeCounter += AuthorCounter.stride }
            return (items, state.writeCounter)
        }
        guard !items.isEmpty else { return }
        let write = Write(author: user, authorRole: role, authorCounter: counter,
                          operation: .setPresenceState(user: user, session: session, items: items))
        _ = try? request(requester, .writeRequest(WireMessage.WriteRequest(requestID: 0, write: write)))
    }
}
