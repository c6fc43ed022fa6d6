/// Why a delta was refused. Every replica computes the same reason for the same delta.
public enum Rejection: Hashable, Sendable, CustomStringConvertible {
    /// Observers may not change anything.
    case observerIsReadOnly(operation: String)
    /// Only the teacher or an assistant may do this.
    case requiresModerator(operation: String, role: Role)
    /// A student may change only itself.
    case notOwnUser(operation: String, author: UserID, target: UserID)
    /// Only a node acting for the cluster may do this.
    case requiresSystem(operation: String)
    /// The delta carries a value no valid client would send.
    case invalidValue(operation: String, reason: String)

    /// A stable code, for metrics and for clients to match on.
    public var code: String {
        switch self {
        case .observerIsReadOnly: return "observer-read-only"
        case .requiresModerator: return "requires-moderator"
        case .notOwnUser: return "not-own-user"
        case .requiresSystem: return "requires-system"
        case .invalidValue: return "invalid-value"
        }
    }

    public var description: String {
        switch self {
        case let .observerIsReadOnly(operation):
            return "\(operation) refused: observers cannot change the room"
        case let .requiresModerator(operation, role):
            return "\(operation) refused: only a teacher or an assistant may do this, the author is a \(role)"
        case let .notOwnUser(operation, author, target):
            return "\(operation) refused: \(author) may change only itself, not \(target)"
        case let .requiresSystem(operation):
            return "\(operation) refused: only a node may do this"
        case let .invalidValue(operation, reason):
            return "\(operation) refused: \(reason)"
        }
    }
}

/// The default authority rules (shared/DESIGN.md). A pure function of the delta
/// alone, so that every replica accepts or refuses it identically, in any order.
public enum Authority {
    public static func check(author: UserID, role: Role, operation: Operation) -> Rejection? {
        let name = operation.name
        if role == .observer {
            // Observers may only come and go.
            switch operation {
            case let .joinSession(user, _, _, _, _, _), let .leaveSession(user, _, _):
                return user == author ? nil : .notOwnUser(operation: name, author: author, target: user)
            default:
                return .observerIsReadOnly(operation: name)
            }
        }
        switch operation {
        case let .setRoomProperty(_, _, _, revision):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return revision.lineage.count <= PropertyRevision.lineageLength ? nil
                : .invalidValue(operation: name, reason: "a lineage has at most \(PropertyRevision.lineageLength) entries")

        case let .setCarousel(settings):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return !settings.running || Carousel.intervalRange.contains(settings.intervalSeconds) ? nil
                : .invalidValue(operation: name, reason: "a carousel turns every \(Carousel.intervalRange.lowerBound) to \(Carousel.intervalRange.upperBound) s, not \(settings.intervalSeconds)")

        case let .acquireLock(lock, ttl, fence):
            if fence > Locks.maxFence { return .invalidValue(operation: name, reason: "a fence is at most 2^62") }
            if lock.isEmpty || lock.utf8.count > Locks.maxNameBytes {
                return .invalidValue(operation: name, reason: "a lock name is 1 to \(Locks.maxNameBytes) bytes")
            }
            return Locks.ttlRange.contains(ttl) ? nil
                : .invalidValue(operation: name, reason: "a lock's TTL is \(Locks.ttlRange.lowerBound) to \(Locks.ttlRange.upperBound) s, not \(ttl)")

        case let .releaseLock(lock, fence, revoke):
            if fence > Locks.maxFence { return .invalidValue(operation: name, reason: "a fence is at most 2^62") }
            if revoke && !role.moderates { return .requiresModerator(operation: name, role: role) }
            return !lock.isEmpty && lock.utf8.count <= Locks.maxNameBytes ? nil
                : .invalidValue(operation: name, reason: "a lock name is 1 to \(Locks.maxNameBytes) bytes")

        case let .setBreakoutGroup(id, groupName):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            if !Breakout.isValidID(id) { return .invalidValue(operation: name, reason: "a group id is 1 to \(Breakout.maxIDBytes) bytes of a-z, 0-9, - and _") }
            if let groupName, groupName.isEmpty || groupName.utf8.count > Breakout.maxNameBytes {
                return .invalidValue(operation: name, reason: "a group name is 1 to \(Breakout.maxNameBytes) bytes")
            }
            return nil

        case let .assignBreakoutGroup(_, group):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return group.map(Breakout.isValidID) ?? true ? nil
                : .invalidValue(operation: name, reason: "a group id is 1 to \(Breakout.maxIDBytes) bytes of a-z, 0-9, - and _")

        case .endBreakout:
            return role.moderates ? nil : .requiresModerator(operation: name, role: role)

        case .setRoomName, .setRoomType, .setSchedule, .setClassState, .muteAll, .setChatMuted, .setDeviceMuted, .setHandRaising:
            return role.moderates ? nil : .requiresModerator(operation: name, role: role)

        case .trimHistory:
            return role.moderates ? nil : .requiresModerator(operation: name, role: role)

        case let .setHistoryLimit(limit):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return limit >= 1 && limit <= MessageLog.maxLimit ? nil
                : .invalidValue(operation: name, reason: "a history limit is 1 to \(MessageLog.maxLimit), not \(limit)")

        case let .sendMessage(type, payload, _), let .sendPeerMessage(_, type, payload, _):
            if type.isEmpty || type.utf8.count > Messaging.maxTypeBytes {
                return .invalidValue(operation: name, reason: "a message type is 1 to \(Messaging.maxTypeBytes) bytes")
            }
            return payload.count <= Messaging.maxPayloadBytes ? nil
                : .invalidValue(operation: name, reason: "a payload is at most \(Messaging.maxPayloadBytes) bytes, not \(payload.count)")

        case let .setPresenceState(user, _, items):
            if user != author && role != .system { return .notOwnUser(operation: name, author: author, target: user) }
            if items.isEmpty || items.count > Messaging.maxPresenceKeys {
                return .invalidValue(operation: name, reason: "a presence write has 1 to \(Messaging.maxPresenceKeys) keys")
            }
            for item in items {
                if item.key.isEmpty || item.key.utf8.count > Messaging.maxPresenceKeyBytes {
                    return .invalidValue(operation: name, reason: "a presence key is 1 to \(Messaging.maxPresenceKeyBytes) bytes")
                }
                if (item.value?.count ?? 0) > Messaging.maxPresenceValueBytes {
                    return .invalidValue(operation: name, reason: "a presence value is at most \(Messaging.maxPresenceValueBytes) bytes")
                }
            }
            return nil

        case let .setStageLimit(limit), let .setHandLimit(limit):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return limit <= 100_000 ? nil : .invalidValue(operation: name, reason: "limit \(limit) is above 100000")

        case .replicaDown:
            return role == .system ? nil : .requiresSystem(operation: name)

        case let .joinSession(user, _, _, joinRole, _, _):
            if role == .system { return nil }
            if user != author { return .notOwnUser(operation: name, author: author, target: user) }
            // A user joins in the role its credential gives, never a higher one.
            return joinRole == role ? nil : .invalidValue(operation: name, reason: "joins as \(joinRole) but is a \(role)")

        case let .leaveSession(user, _, _):
            return role == .system || user == author ? nil : .notOwnUser(operation: name, author: author, target: user)

        case let .foldSessions(_, _, keep):
            guard role == .system else { return .requiresSystem(operation: name) }
            return keep.count <= SessionFloor.maxKept ? nil
                : .invalidValue(operation: name, reason: "a fold keeps at most \(SessionFloor.maxKept) sessions")

        case let .foldRewards(_, _, sum, keep):
            guard role == .system else { return .requiresSystem(operation: name) }
            if keep.count > RewardFloor.maxKept { return .invalidValue(operation: name, reason: "a fold keeps at most \(RewardFloor.maxKept) rewards") }
            return sum >= 0 ? nil : .invalidValue(operation: name, reason: "a fold's sum is never negative")

        case let .retirePredecessors(_, floors):
            guard role == .system else { return .requiresSystem(operation: name) }
            if floors.contains(where: { $0.keep.count > RewardFloor.maxKept }) {
                return .invalidValue(operation: name, reason: "a floor keeps at most \(RewardFloor.maxKept) rewards")
            }
            if Set(floors.map(\.user)).count != floors.count { return .invalidValue(operation: name, reason: "a user appears twice") }
            return floors.allSatisfy { $0.sum >= 0 } ? nil : .invalidValue(operation: name, reason: "a floor's sum is never negative")

        case let .setName(user, _), let .setDevice(user, _, _):
            return user == author || role == .system ? nil : .notOwnUser(operation: name, author: author, target: user)

        case let .setHand(user, raised):
            if user == author { return nil }
            // Moderators may lower anyone's hand, never raise it for them.
            if role.moderates && !raised { return nil }
            return role.moderates
                ? .invalidValue(operation: name, reason: "a hand is raised only by its owner")
                : .notOwnUser(operation: name, author: author, target: user)

        case .setStage, .setBoard, .setPrivilege, .kick, .ban:
            return role.moderates ? nil : .requiresModerator(operation: name, role: role)

        case let .inviteToStage(_, seconds):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            let range = StageInvitation.durationRange
            return range.contains(seconds) ? nil
                : .invalidValue(operation: name, reason: "an invitation lasts \(range.lowerBound) to \(range.upperBound) s, not \(seconds)")

        case let .answerInvitation(_, invitation, seconds):
            // The author answers for itself (the open invitation is what authorises a
            // student's own way onto the stage); the invitation is filled in by its origin.
            let range = StageInvitation.durationRange
            return (invitation == .origin && seconds == 0) || (invitation != .origin && range.contains(seconds)) ? nil
                : .invalidValue(operation: name, reason: "an answer names an invitation of \(range.lowerBound) to \(range.upperBound) s")

        case let .reward(_, amount, _):
            guard role.moderates else { return .requiresModerator(operation: name, role: role) }
            return amount > 0 && amount <= 1_000 ? nil : .invalidValue(operation: name, reason: "a reward is 1 to 1000, not \(amount)")

        case let .setUserProperty(user, _, _, _, revision):
            guard user == author || role.moderates else { return .notOwnUser(operation: name, author: author, target: user) }
            return revision.lineage.count <= PropertyRevision.lineageLength ? nil
                : .invalidValue(operation: name, reason: "a lineage has at most \(PropertyRevision.lineageLength) entries")
        }
    }
}
