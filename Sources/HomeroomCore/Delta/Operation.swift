/// Every change a room can undergo. Each case is one small, self-contained write.
public enum Operation: Hashable, Sendable {
    // Room (teacher, assistant)
    case setRoomName(String)
    case setRoomType(RoomType)
    case setStageLimit(UInt32)
    case setHandLimit(UInt32)
    case setSchedule(Schedule)
    /// Teacher, assistant: start (or change) the stage carousel, or stop it.
    case setCarousel(Carousel)
    case setClassState(ClassState)
    case muteAll
    /// Teacher, assistant: the room's camera or microphone mute (Flexible Classroom's
    /// `muteVideo` / `muteAudio`): muted, no student's device of that kind counts as on, and
    /// a student may not turn it on; unmuted, students may again (nothing turns on by itself).
    /// `ending`: for an unmute, the mute it ends, as its origin knows it (filled in by
    /// `RoomState.prepare`; the origin when the room was not muted there). See `RoomGate`.
    case setDeviceMuted(device: Device, muted: Bool, ending: Stamp = .origin)
    /// Teacher, assistant: hand raising on or off, and auto-stage (Flexible Classroom's
    /// `allowHandsUp(state, autoStage)`). Off: a raise is refused and raised hands are
    /// lowered (a hand counts only if raised while it is on, see `RoomGate`). On with
    /// `autoStage`: the origin turns a student's raise into its promotion to the stage
    /// while a seat is free (`RoomState.autoStages`). `ending`: as for `setDeviceMuted`.
    case setHandRaising(allowed: Bool, autoStage: Bool, ending: Stamp = .origin)
    /// Teacher, assistant: invites `user` to the stage for `seconds` (Flexible Classroom's
    /// `invitePodium`), replacing any earlier invitation of it. See `StageInvitation`.
    case inviteToStage(user: UserID, seconds: UInt32)
    /// The author, for itself: accepts (and is on stage) or declines its open invitation.
    /// `invitation`, `seconds`: the invitation answered, as its origin knows it (filled in by
    /// `RoomState.prepare`), so every replica decides from stamps whether it came in time.
    case answerInvitation(accept: Bool, invitation: Stamp = .origin, seconds: UInt32 = 0)
    /// `revision`: a condition from the client, the assigned revision and lineage from the origin node.
    case setRoomProperty(key: String, value: [UInt8]?, cause: String, revision: PropertyRevision = .unconditional)

    // Presence (a user for itself; the system for sessions of a dead node)
    case joinSession(user: UserID, session: SessionID, name: String, role: Role, host: ReplicaID, incarnation: UInt64)
    /// `started`: the session's start, as the origin knows it (nil from older nodes), so
    /// a replica that gets the end first knows which start it ends.
    case leaveSession(user: UserID, session: SessionID, started: Stamp? = nil)
    /// System, written by an origin for the sessions it started for `user`: every one
    /// sequenced here at or below `upTo` is over and leaves the record, except `keep`.
    case foldSessions(user: UserID, upTo: UInt64, keep: [UInt64])
    /// System, written by an origin for the rewards it sequenced for `user`: every one
    /// whose earliest copy it sequenced at or below `upTo`, except `keep`, is counted in
    /// `sum` and leaves the record (see `RewardFloor`).
    case foldRewards(user: UserID, upTo: UInt64, sum: Int64, keep: [UInt64] = [])
    /// Every session hosted by `replica` in an incarnation up to `incarnation` is over.
    case replicaDown(replica: ReplicaID, incarnation: UInt64)
    /// System, written by the newest store of a node name: every older replica id of that
    /// name up to `generation` is retired, and what their rewards counted moves into the
    /// origin's floors, given whole (see `RoomState.retirementPlan`).
    case retirePredecessors(generation: UInt64, rewardFloors: [RetiredRewardFloor])

    // A user for itself
    case setName(user: UserID, name: String)
    case setDevice(user: UserID, device: Device, on: Bool)
    case setHand(user: UserID, raised: Bool)

    // Teacher, assistant over a user
    case setStage(user: UserID, on: Bool)
    case setBoard(user: UserID, granted: Bool)
    case setPrivilege(user: UserID, device: Device, allowed: Bool)
    /// `issuedAtMillis`: the author's wall clock when it first sent the reward, the
    /// same on every retry; a node admits it only within the reward window of its own clock.
    case reward(user: UserID, amount: Int32, issuedAtMillis: UInt64 = 0)
    case kick(user: UserID)
    case ban(user: UserID)

    // A user for itself, or teacher, assistant
    case setUserProperty(user: UserID, key: String, value: [UInt8]?, cause: String, revision: PropertyRevision = .unconditional)

    // Messaging (docs/MESSAGING.md)
    /// A room message (chat or a custom signal) from the author; its key is (author, author counter).
    case sendMessage(type: String, payload: [UInt8], previous: UInt64)
    /// A message from the author to one user: only the two of them receive it.
    case sendPeerMessage(to: UserID, type: String, payload: [UInt8], previous: UInt64)
    /// Teacher, assistant: chat muted or unmuted for one user, or for every student and observer (`user` nil).
    case setChatMuted(user: UserID?, muted: Bool)
    /// Teacher, assistant, system: every message stamped before `beforeMillis` leaves the history.
    case trimHistory(beforeMillis: UInt64)
    /// Teacher, assistant: the room keeps its newest `limit` messages (1 to 10,000).
    case setHistoryLimit(UInt32)
    /// A user for itself: temporary state tied to one of its sessions (shown while it is open).
    case setPresenceState(user: UserID, session: SessionID, items: [PresenceItem])

    // Locks (docs/MESSAGING.md, "Locks"); the author is the holder.
    /// Any member but an observer: take a free lock, or renew one it holds. The origin
    /// assigns `fence` (`RoomState.prepare`): a new grant's is larger than any before.
    case acquireLock(name: String, ttlSeconds: UInt32, fence: UInt64 = 0)
    /// The holder (release), or a teacher or an assistant (`revoke`): ends the grant
    /// with `fence` (the origin fills in the one it holds) and every earlier one.
    case releaseLock(name: String, fence: UInt64 = 0, revoke: Bool)

    // Breakout groups (Flexible Classroom's); teacher, assistant.
    /// Creates or renames group `id` (name nil: removes it; its members are back in the main room).
    case setBreakoutGroup(id: String, name: String?)
    /// Puts `user` in group `group` (nil: back in the main room).
    case assignBreakoutGroup(user: UserID, group: String?)
    /// Ends every group: everyone is back in the main room.
    case endBreakout

    /// The user the operation is about, if any.
    public var target: UserID? {
        switch self {
        case .setRoomName, .setRoomType, .setStageLimit, .setHandLimit, .setSchedule, .setCarousel, .setClassState,
             .muteAll, .setDeviceMuted, .setHandRaising, .answerInvitation, .setRoomProperty, .replicaDown, .retirePredecessors, .sendMessage, .trimHistory, .setHistoryLimit,
             .acquireLock, .releaseLock, .setBreakoutGroup, .endBreakout:
            return nil
        case let .joinSession(user, _, _, _, _, _), let .leaveSession(user, _, _), let .foldSessions(user, _, _), let .foldRewards(user, _, _, _), let .setName(user, _),
             let .setDevice(user, _, _), let .setHand(user, _), let .setStage(user, _), let .inviteToStage(user, _), let .setBoard(user, _),
             let .setPrivilege(user, _, _), let .reward(user, _, _), let .kick(user), let .ban(user),
             let .setUserProperty(user, _, _, _, _), let .sendPeerMessage(user, _, _, _), let .setPresenceState(user, _, _),
             let .assignBreakoutGroup(user, _):
            return user
        case let .setChatMuted(user, _):
            return user
        }
    }

    /// The recipient of a peer message (nil for any other operation).
    public var peerRecipient: UserID? {
        if case let .sendPeerMessage(to, _, _, _) = self { return to }
        return nil
    }

    /// Whether this is a room or a peer message (keyed by author and author counter).
    public var isMessage: Bool {
        switch self {
        case .sendMessage, .sendPeerMessage: return true
        default: return false
        }
    }

    /// A short stable name, for logs, metrics and rejection reasons.
    public var name: String {
        switch self {
        case .setRoomName: return "set-room-name"
        case .setRoomType: return "set-room-type"
        case .setStageLimit: return "set-stage-limit"
        case .setHandLimit: return "set-hand-limit"
        case .setSchedule: return "set-schedule"
        case .setCarousel: return "set-carousel"
        case .setClassState: return "set-class-state"
        case .muteAll: return "mute-all"
        case .setDeviceMuted: return "set-device-muted"
        case .setHandRaising: return "set-hand-raising"
        case .inviteToStage: return "invite-to-stage"
        case .answerInvitation: return "answer-invitation"
        case .setRoomProperty: return "set-room-property"
        case .joinSession: return "join"
        case .leaveSession: return "leave"
        case .foldSessions: return "fold-sessions"
        case .foldRewards: return "fold-rewards"
        case .replicaDown: return "replica-down"
        case .retirePredecessors: return "retire-predecessors"
        case .setName: return "set-name"
        case .setDevice: return "set-device"
        case .setHand: return "set-hand"
        case .setStage: return "set-stage"
        case .setBoard: return "set-board"
        case .setPrivilege: return "set-privilege"
        case .reward: return "reward"
        case .kick: return "kick"
        case .ban: return "ban"
        case .setUserProperty: return "set-user-property"
        case .sendMessage: return "send-message"
        case .sendPeerMessage: return "send-peer-message"
        case .setChatMuted: return "set-chat-muted"
        case .trimHistory: return "trim-history"
        case .setHistoryLimit: return "set-history-limit"
        case .setPresenceState: return "set-presence-state"
        case .acquireLock: return "acquire-lock"
        case let .releaseLock(_, _, revoke): return revoke ? "revoke-lock" : "release-lock"
        case .setBreakoutGroup: return "set-breakout-group"
        case .assignBreakoutGroup: return "assign-breakout-group"
        case .endBreakout: return "end-breakout"
        }
    }
}

/// One user's reward floor of the retiring origin after a retirement absorbed what its
/// predecessors counted (as a `foldRewards` would write it).
public struct RetiredRewardFloor: Hashable, Sendable {
    public var user: UserID
    public var upTo: UInt64
    public var sum: Int64
    public var keep: [UInt64]

    public init(user: UserID, upTo: UInt64, sum: Int64, keep: [UInt64]) {
        self.user = user
        self.upTo = upTo
        self.sum = sum
        self.keep = keep
    }
}
