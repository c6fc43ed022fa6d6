import HomeroomContext

/// Context events as short sentences, for `homeroom join` and the demo's narration.
enum EventText {
    static func describe(_ event: ContextEvent, local: UserID) -> String? {
        func who(_ user: UserInfo) -> String { user.id == local ? "you" : user.displayName }
        switch event {
        case let .joinedRoom(room): return "joined \(room.displayName)"
        case .leftRoom: return "left the room"
        case let .roomInfoUpdated(room): return "room: \(room.displayName), \(room.type), \(room.stageLimit) stage seats"
        case let .classStateUpdated(state):
            switch state {
            case .before: return "class not started"
            case .during: return "class started"
            case .after: return "class ended"
            }
        case let .roomPropertiesUpdated(keys): return "room properties changed: " + keys.joined(separator: ", ")
        case .allMicrophonesMuted: return "every microphone was muted"
        case .roomClosed: return "the class is over and the room is closed [room-closed]: nobody can rejoin it"
        case let .locksUpdated(names): return "locks changed: " + names.joined(separator: ", ")
        case let .breakoutUpdated(groups):
            if groups.isEmpty { return "no breakout groups: everyone is in the main room" }
            let listing = "breakout groups: " + groups.map { "\($0.name) (\($0.members.count))" }.joined(separator: ", ")
            guard let mine = groups.first(where: { $0.members.contains(local) }) else { return listing }
            return listing + "; you are in \(mine.name): its room is \(mine.roomID) (homeroom join --room \(mine.roomID))"
        case let .remoteUserJoined(user): return "\(user.displayName) (\(user.role)) joined"
        case let .remoteUserLeft(user): return "\(user.displayName) left"
        case let .userUpdated(user, previous): return renamed(user, previous: previous, local: local)
        case let .coHostsAdded(users): return users.map(who).joined(separator: ", ") + " on stage"
        case let .coHostsRemoved(users): return users.map(who).joined(separator: ", ") + " off stage"
        case let .boardUpdated(user, granted): return "whiteboard \(granted ? "granted to" : "revoked from") \(who(user))"
        case let .userRewarded(user, amount, total): return "\(who(user)) rewarded +\(amount) (now \(total))"
        case let .handWaved(user): return "\(who(user)) raised a hand"
        case let .handLowered(user): return "\(who(user)) lowered a hand"
        case let .handRaisingUpdated(policy):
            if !policy.allowed { return "hand raising is off (raised hands are lowered; students cannot raise theirs)" }
            return policy.autoStage ? "hand raising is on, with auto-stage (a raise takes a free stage seat)" : "hand raising is on"
        case let .invitationReceived(invitation):
            let by = invitation.inviter.map { " by \($0.displayName)" } ?? ""
            return "you are invited to the stage\(by) for \(invitation.seconds) s: invitation accept, or invitation decline"
        case let .invitationAnswered(invitation):
            return "\(who(invitation.user)) \(invitation.status == .accepted ? "accepted" : "declined") the invitation to the stage"
        case let .invitationTimedOut(invitation):
            return "\(who(invitation.user))'s invitation to the stage timed out unanswered"
        case let .userKickedOut(user): return "\(user.displayName) was kicked out"
        case let .userBanned(user): return "\(user.displayName) was banned"
        case let .localUserKickedOut(banned): return banned ? "you were banned from the room" : "you were kicked out of the room"
        case let .userPropertiesUpdated(user, keys): return "\(who(user)): properties changed: " + keys.joined(separator: ", ")
        case let .streamUpdated(stream):
            // An offline user publishes nothing, whatever its register says (the roster draws it ○ off).
            return "\(who(stream.owner)) \(stream.device): \(Action.describe(stream.state))" + (stream.ownerOnline ? "" : " (offline: nothing is published until they are back)")
        case let .roomMuteUpdated(device, muted):
            return muted ? "every student's \(device) is muted by the teacher (students cannot turn it on)"
                : "students' \(device)s are unmuted (each student turns theirs on again)"
        case let .connectionStateUpdated(state): return "connection \(state.rawValue)"
        case .latencyUpdated: return nil
        case let .tokenWillExpire(seconds):
            return seconds == 0 ? "your join token has expired: renew it now (renew <token-or-file> in `homeroom join`) before the nodes refuse you"
                : "your join token expires in \(seconds) s: renew it (renew <token-or-file> in `homeroom join`) to stay in the room"
        case let .roomMessageReceived(message), let .peerMessageReceived(message): return MessageText.line(message, local: local)
        case let .messagesRemoved(keys): return "\(keys.count) message\(keys.count == 1 ? "" : "s") left the history"
        case let .chatMuteUpdated(user, muted):
            return "chat \(muted ? "muted" : "unmuted") for " + (user.map(who) ?? "every student")
        case let .presence(event): return MessageText.presenceEvent(event, local: local)
        case let .propertyConflict(conflict):
            let owner = conflict.owner.map { "\($0)'s" } ?? "room"
            let loser = conflict.lostAuthor == local ? "your" : "\(conflict.lostAuthor)'s"
            return "\(owner) property \(conflict.key): \(loser) write (revision \(conflict.lostRevision)) was lost to "
                + "\(conflict.keptAuthor)'s (revision \(conflict.keptRevision)), made without seeing it"
        }
    }
}

extension EventText {
    /// "Cai is now Student Cai", "Cai is now an assistant", "Cai is now Student Cai, a
    /// teacher"; nil when neither the name shown nor the role changed.
    static func renamed(_ user: UserInfo, previous: UserInfo, local: UserID) -> String? {
        let nameChanged = user.displayName != previous.displayName
        let roleChanged = user.role != previous.role
        let role = "\(user.role == .assistant || user.role == .observer ? "an" : "a") \(user.role)"
        let isLocal = user.id == local
        switch (nameChanged, roleChanged) {
        case (false, false): return nil
        case (true, false): return isLocal ? "you are now called \(user.displayName) (were \(previous.displayName))"
                                           : "\(previous.displayName) is now \(user.displayName)"
        case (false, true): return isLocal ? "you are now \(role)" : "\(user.displayName) is now \(role)"
        case (true, true): return isLocal ? "you are now called \(user.displayName) (were \(previous.displayName)), \(role)"
                                          : "\(previous.displayName) is now \(user.displayName), \(role)"
        }
    }
}

/// Splits a command line into words; "double" or 'single' quotes keep spaces.
enum LineWords {
    static func split(_ line: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        var inWord = false
        for character in line {
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character.isWhitespace {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        if inWord { words.append(current) }
        return words
    }
}
