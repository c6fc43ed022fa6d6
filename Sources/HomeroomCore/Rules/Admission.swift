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
    /// Chat is muted for this user (`user`), or for the room (nil).
    case chatMuted(UserID?)
    /// A student turning a camera or microphone on while the room's mute of that device holds.
    case deviceMuted(Device)
    /// A raise while hand raising is switched off.
    case handRaisingOff
    /// An answer from a user with no invitation to the stage (never invited, or the
    /// invitation was withdrawn by a stage write or a kick after it).
    case noInvitation
    /// An answer to an invitation whose duration has passed (`expiresAtMillis`).
    case invitationExpired(expiresAtMillis: UInt64)
    /// An answer to an invitation already answered (`accepted`: how).
    case invitationAnswered(accepted: Bool)
    /// A conditional property write whose key has moved on.
    case revisionMismatch(key: String, expected: UInt64, actual: UInt64)
    /// A write conditional on the whole property set, which has moved on.
    case setRevisionMismatch(scope: PropertyScope, expected: UInt64, actual: UInt64)
    /// The user has `limit` live sessions already.
    case tooManySessions(UserID, limit: Int)
    /// A leave of a session this node does not know (or that was folded away).
    case sessionUnknown(UserID, SessionID)
    /// A structure of the room is at its bound (docs/ARCHITECTURE.md, "Lifetime").
    case limitReached(String)
    /// A reward issued further from this node's clock than the reward window.
    case rewardOutsideWindow(issuedAtMillis: UInt64, nowMillis: UInt64, windowMillis: UInt64)
    /// A student or an observer going into a breakout group's room that is not its own.
    case notInGroup(user: UserID, group: String, actual: String?)
    /// A class token used for a breakout group's room while that group does not meet
    /// (never made, removed, or the groups ended): it opens no room then.
    case groupNotLive(mainRoom: String, group: String)
    /// Another user holds the lock.
    case lockHeld(lock: String, holder: UserID)
    /// The author does not hold the lock (nobody does: `holder` nil).
    case lockNotHeld(lock: String, holder: UserID?)
    /// A guarded write whose fence is not the lock's current grant, or is below the key's.
    case fenceStale(lock: String, presented: UInt64, current: UInt64)
    /// An unguarded write of a key that was written under a lock.
    case fenceRequired(key: String, lock: String)

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
        case .chatMuted: return "muted"
        case .deviceMuted: return "device-muted"
        case .handRaisingOff: return "hand-raising-off"
        case .noInvitation: return "no-invitation"
        case .invitationExpired: return "invitation-expired"
        case .invitationAnswered: return "invitation-answered"
        case .revisionMismatch, .setRevisionMismatch: return "revision-mismatch"
        case .tooManySessions: return "too-many-sessions"
        case .sessionUnknown: return "session-unknown"
        case .limitReached: return "limit-reached"
        case .rewardOutsideWindow: return "reward-window"
        case .notInGroup: return "not-in-group"
        case .groupNotLive: return "group-not-live"
        case .lockHeld: return "lock-held"
        case .lockNotHeld: return "lock-not-held"
        case .fenceStale: return "fence-stale"
        case .fenceRequired: return "fence-required"
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
        case let .chatMuted(user):
            return user.map { "chat is muted for \($0) by a teacher or an assistant" } ?? "chat is muted for the room: only teachers and assistants may send"
        case .noInvitation:
            return "you have no invitation to the stage (never invited, or a teacher changed your stage or removed you since): ask a teacher to invite you"
        case let .invitationExpired(expires):
            return "your invitation to the stage timed out (it was open until \(expires / 1000) s Unix time): ask a teacher to invite you again"
        case let .invitationAnswered(accepted):
            return "you have \(accepted ? "accepted" : "declined") this invitation already: ask a teacher to invite you again"
        case let .deviceMuted(device):
            return "a teacher has muted every student's \(device) in this room: you can turn yours on once they unmute it"
        case .handRaisingOff:
            return "a teacher has switched hand raising off in this room: you can raise your hand once they switch it on again"
        case let .revisionMismatch(key, expected, actual):
            return "\(key) is at revision \(actual), not \(expected): read it again and retry"
        case let .setRevisionMismatch(scope, expected, actual):
            return "the \(scope)'s properties are at set revision \(actual), not \(expected): read them again and retry"
        case let .tooManySessions(user, limit):
            return "\(user) has \(limit) open sessions in this room already: leave one (or wait for an idle one to time out) first"
        case let .limitReached(what): return what
        case let .rewardOutsideWindow(issued, now, window):
            let tenths = (issued > now ? issued - now : now - issued) / 100
            let side = issued > now ? "ahead of" : "behind"
            return "this reward was issued \(tenths / 10).\(tenths % 10) s \(side) this node's clock; a node takes rewards issued within \(window / 1000) s of its clock (check the client's clock; a retry that late is not made, nothing was stored)"
        case let .notInGroup(user, group, actual):
            return "\(user) is not in breakout group \(group)" + (actual.map { ": its group is \($0)" } ?? ": it is in the main room")
        case let .groupNotLive(mainRoom, group):
            return "breakout group \(group) does not meet in class \(mainRoom) now: a class token opens a group's room only while the teacher has it live"
        case let .lockHeld(lock, holder):
            return "lock \(lock) is held by \(holder): wait for its release (homeroom lock acquire --wait), or ask a teacher to revoke it"
        case let .lockNotHeld(lock, holder):
            return holder.map { "lock \(lock) is held by \($0), not by you" } ?? "lock \(lock) is not held: acquire it first"
        case let .fenceStale(lock, presented, current):
            return "fence \(presented) of lock \(lock) is stale (the current one is \(current)): your grant ended; acquire the lock again and redo the work"
        case let .fenceRequired(key, lock):
            return "\(key) was written under lock \(lock): acquire that lock and present its fence"
        case let .sessionUnknown(user, session):
            return "\(user) has no session \(session) in this room (it ended long ago, or was opened at a node this one has not heard from yet)"
        }
    }
}

extension RoomState {
    /// Whether a reward issued at `issuedAtMillis` is refused at a node whose clock reads
    /// `nowMillis`. It reads nothing of the room, so no race gets a reward past it.
    public static func isOutsideRewardWindow(issuedAtMillis issuedAt: UInt64, nowMillis: UInt64, windowMillis: UInt64) -> Bool {
        issuedAt &+ windowMillis < nowMillis || issuedAt > nowMillis &+ windowMillis
    }

    /// Checks a write against the rules and the room as it is now. `nowMillis`
    /// is passed in, so this stays pure.
    public func admit(_ write: Write, nowMillis: UInt64, rewardWindowMillis: UInt64 = RoomState.defaultRewardWindowMillis) -> WriteError? {
        if let rejection = Authority.check(author: write.author, role: write.authorRole, operation: write.operation) {
            return .notAllowed(rejection)
        }
        if users[write.author]?.isBanned == true { return .banned(write.author) }
        if isClosed(nowMillis: nowMillis) { return .roomClosed }
        let op = write.operation
        if let target = op.target {
            if case let .joinSession(_, session, _, role, _, _) = op {
                if users[target]?.isBanned == true { return .banned(target) }
                if let record = users[target], write.authorRole != .system, !record.isLive(session: session, deadIncarnations: deadIncarnations) {
                    let live = record.sessions.lazy.filter { record.isLive($0, deadIncarnations: self.deadIncarnations) }.count
                    if live >= Self.maxOpenSessionsPerUser { return .tooManySessions(target, limit: Self.maxOpenSessionsPerUser) }
                }
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
        case let .inviteToStage(user, _):
            if let refusal = invitationRefusal(invite: user) { return refusal }
        case let .answerInvitation(accept, _, _):
            if let refusal = answerRefusal(write.author, accept: accept, nowMillis: nowMillis) { return refusal }
        case .setHand(_, true) where handRaising.isClosed:
            return .handRaisingOff
        case let .setHand(user, true) where !isHandUp(user) && !autoStages(write):
            // A raise that auto-stages takes a stage seat, not a place on the hand list.
            if raisedHands.count >= Int(handLimit.value) { return .handLimitReached(limit: Int(handLimit.value)) }
        case let .setDevice(user, device, true) where mute(device).isClosed:
            // Teachers and assistants are never muted by the room (RoomGate: a student's
            // write that races the mute is void on every replica all the same).
            if !write.authorRole.moderates && users[user]?.role.value.moderates != true { return .deviceMuted(device) }
        case let .setClassState(state) where state < classState.state:
            return .classStateCannotGoBack(from: classState.state, to: state)
        case let .setRoomName(name) where name.utf8.count > 256:
            return .invalid("a room name is at most 256 bytes")
        case let .setName(_, name) where name.utf8.count > 128 || name.isEmpty:
            return .invalid("a display name is 1 to 128 bytes")
        case .sendMessage:
            if users[write.author]?.chatMuted.value == true { return .chatMuted(write.author) }
            if chatMuted.value && !write.authorRole.moderates { return .chatMuted(nil) }
        case let .sendPeerMessage(recipient, _, _, _):
            // A muted user may still write to a teacher or an assistant.
            let toModerator = users[recipient]?.role.value.moderates == true
            if users[write.author]?.chatMuted.value == true && !toModerator { return .chatMuted(write.author) }
            if chatMuted.value && !write.authorRole.moderates && !toModerator { return .chatMuted(nil) }
        case let .leaveSession(user, session, _) where write.authorRole != .system:
            // The session, or a copy a refutation made of it (its original may be folded away).
            let group = SessionIDs.base(session)
            guard users[user]?.sessions.contains(where: { ($0.id == session || SessionIDs.base($0.id) == group) && $0.started != Stamp.maxedOut }) == true else {
                return .sessionUnknown(user, session)
            }
        case let .setPresenceState(user, session, items):
            guard let record = users[user], record.isLive(session: session, deadIncarnations: deadIncarnations) else {
                return .invalid("session \(session) of \(user) is not open in this room: set presence state through a live session")
            }
            var shown = Set(record.presenceState(deadIncarnations: deadIncarnations).keys)
            for item in items {
                if item.value == nil { shown.remove(item.key) } else { shown.insert(item.key) }
            }
            if shown.count > Messaging.maxPresenceKeys {
                return .invalid("a user shows at most \(Messaging.maxPresenceKeys) presence keys; this write makes \(shown.count)")
            }
            let entries = Set(record.presence.keys).union(items.map(\.key)).count
            if entries > Self.maxPresenceEntriesPerUser {
                return .limitReached("\(user) has written \(Self.maxPresenceEntriesPerUser) presence keys (removed ones included): reuse a key")
            }
        case let .reward(user, _, issuedAt):
            // The window is what makes folding rewards exact (`RewardFloor`).
            if issuedAt == 0 {
                return .invalid("a reward carries issued_at_ms: the author's clock (Unix ms) when it first sent it, the same on every retry")
            }
            if Self.isOutsideRewardWindow(issuedAtMillis: issuedAt, nowMillis: nowMillis, windowMillis: rewardWindowMillis) {
                return .rewardOutsideWindow(issuedAtMillis: issuedAt, nowMillis: nowMillis, windowMillis: rewardWindowMillis)
            }
            if (users[user]?.rewards.count ?? 0) >= Self.maxRewardsPerUser {
                return .limitReached("\(user) has \(Self.maxRewardsPerUser) rewards recorded, the most a room keeps for one user (each is kept to count a retried reward once)")
            }
        case let .setRoomProperty(key, _, _, _) where properties[key] == nil && properties.count >= Self.maxRoomPropertyKeys:
            return .limitReached("the room has \(Self.maxRoomPropertyKeys) property keys (deleted ones included): reuse a key")
        case let .setUserProperty(user, key, _, _, _)
        where users[user]?.properties[key] == nil && (users[user]?.properties.count ?? 0) >= Self.maxUserPropertyKeys:
            return .limitReached("\(user) has \(Self.maxUserPropertyKeys) property keys (deleted ones included): reuse a key")
        case let .setCarousel(settings) where settings.running && type.value == .oneToOne:
            return .invalid("a one-to-one room has no stage carousel: both parties are always on stage")
        case .setBreakoutGroup, .assignBreakoutGroup:
            if let refusal = breakoutRefusal(op) { return refusal }
        case .acquireLock, .releaseLock:
            if let refusal = lockRefusal(op, author: write.author, role: write.authorRole, nowMillis: nowMillis) { return refusal }
        case let .setRoomProperty(key, value, cause, revision):
            if let refusal = fenceRefusal(revision.fence, author: write.author, current: properties[key], key: key, nowMillis: nowMillis) {
                return refusal
            }
            if let expected = revision.condition, expected != propertyRevision(scope: .room, key: key) {
                return .revisionMismatch(key: key, expected: expected, actual: propertyRevision(scope: .room, key: key))
            }
            if let expected = revision.setCondition, expected != propertySetRevision(scope: .room) {
                return .setRevisionMismatch(scope: .room, expected: expected, actual: propertySetRevision(scope: .room))
            }
            if let refusal = propertyBytesRefusal(key: key, value: value, cause: cause, current: properties[key]) { return refusal }
        case let .setUserProperty(user, key, value, cause, revision):
            if let refusal = fenceRefusal(revision.fence, author: write.author, current: users[user]?.properties[key], key: key, nowMillis: nowMillis) {
                return refusal
            }
            if let expected = revision.condition, expected != propertyRevision(scope: .user(user), key: key) {
                return .revisionMismatch(key: key, expected: expected, actual: propertyRevision(scope: .user(user), key: key))
            }
            if let expected = revision.setCondition, expected != propertySetRevision(scope: .user(user)) {
                return .setRevisionMismatch(scope: .user(user), expected: expected, actual: propertySetRevision(scope: .user(user)))
            }
            if let refusal = propertyBytesRefusal(key: key, value: value, cause: cause, current: users[user]?.properties[key]) { return refusal }
        default:
            break
        }
        return nil
    }

    /// The room closes `closeDelay` after the class ended.
    public func isClosed(nowMillis: UInt64) -> Bool {
        guard let closesAt = closesAtMillis else { return false }
        return nowMillis >= closesAt
    }

    /// When the room closes (Unix ms): the stamp of the class-state write that ended the
    /// class plus the schedule's close delay; nil while the class has not ended. Read only
    /// from replicated registers, so every replica names the same instant.
    public var closesAtMillis: UInt64? {
        guard classState.state == .after, classState.stamp != .origin else { return nil }
        return classState.stamp.clock.millis &+ UInt64(schedule.value.closeDelaySeconds) * 1000
    }

    /// Whether a closed room has been closed for `retentionMillis` (a node's
    /// `--closed-room-retention`) at `nowMillis`: then the node drops it and keeps a tombstone.
    public func isRemovableAfterClosing(nowMillis: UInt64, retentionMillis: UInt64) -> Bool {
        guard let closesAt = closesAtMillis else { return false }
        return nowMillis >= closesAt &+ retentionMillis
    }
}
