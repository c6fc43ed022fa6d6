/// Why a node refuses a write before sequencing it. Unlike `Rejection`, these
/// depend on the room's current state, so they are checked once, at the origin,
/// and give the client a code it can match.
public enum WriteError: Error, Hashable, Sendable, CustomStringConvertible {
    case notAllowed(Rejection)
    case stageFull(limit: Int)
    case handLimitReached(limit: Int)
    case roomClosed
    case roomFull(reason: String)
    case userNotFound(UserID)
    case banned(UserID)
    case classStateCannotGoBack(from: ClassState, to: ClassState)
    case invalid(String)

    public var code: String {
        switch self {
        case .notAllowed: return "not-allowed"
        case .stageFull: return "stage-full"
        case .handLimitReached: return "hand-limit-reached"
        case .roomClosed: return "room-closed"
        case .roomFull: return "room-full"
        case .userNotFound: return "user-not-found"
        case .banned: return "banned"
        case .classStateCannotGoBack: return "class-state-backwards"
        case .invalid: return "invalid"
        }
    }

    public var description: String {
        switch self {
        case let .notAllowed(rejection): return rejection.description
        case let .stageFull(limit): return "the stage is full (\(limit) seats): take someone off the stage first"
        case let .handLimitReached(limit): return "\(limit) hands are already raised: wait until the teacher lowers one"
        case .roomClosed: return "the class is over and the room is closed"
        case let .roomFull(reason): return "the room is full: \(reason)"
        case let .userNotFound(user): return "no user \(user) has joined this room"
        case let .banned(user): return "\(user) is banned from this room"
        case let .classStateCannotGoBack(from, to): return "class state moves only forward: it is \(from), cannot go to \(to)"
        case let .invalid(reason): return reason
        }
    }
}

extension RoomState {
    /// Checks a write against the rules and the room as it is now. `nowMillis`
    /// is passed in, so this stays pure.
    public func admit(_ write: Write, nowMillis: UInt64) -> WriteError? {
        if let rejection = Authority.check(author: write.author, role: write.authorRole, operation: write.operation) {
            return .notAllowed(rejection)
        }
        if users[write.author]?.isBanned == true { return .banned(write.author) }
        if isClosed(nowMillis: nowMillis) { return .roomClosed }
        let op = write.operation
        if let target = op.target {
            if case let .joinSession(_, _, _, role, _, _) = op {
                if users[target]?.isBanned == true { return .banned(target) }
                if type.value == .oneToOne, role == .teacher || role == .student,
                   users.contains(where: { $0.key != target && $0.value.isKnown && !$0.value.isBanned && $0.value.role.value == role }) {
                    return .roomFull(reason: "a one-to-one room has one \(role) already")
                }
            } else if users[target]?.isKnown != true {
                return .userNotFound(target)
            }
        }
        switch op {
        case let .setStage(user, true) where !isOnStage(user) && type.value != .oneToOne:
            if stageWinners.count >= stageLimitValue { return .stageFull(limit: stageLimitValue) }
        case let .setHand(user, true) where !isHandUp(user):
            if raisedHands.count >= Int(handLimit.value) { return .handLimitReached(limit: Int(handLimit.value)) }
        case let .setClassState(state) where state < classState.state:
            return .classStateCannotGoBack(from: classState.state, to: state)
        case let .setRoomName(name) where name.utf8.count > 256:
            return .invalid("a room name is at most 256 bytes")
        case let .setName(_, name) where name.utf8.count > 128 || name.isEmpty:
            return .invalid("a display name is 1 to 128 bytes")
        default:
            break
        }
        return nil
    }

    /// The room closes `closeDelay` after the class ended.
    public func isClosed(nowMillis: UInt64) -> Bool {
        guard classState.state == .after, classState.stamp != .origin else { return false }
        return nowMillis >= classState.stamp.clock.millis + UInt64(schedule.value.closeDelaySeconds) * 1000
    }
}
