/// What applying a delta or merging a patch changed, as the context layer's
/// handlers will report it. Callers never diff two states.
public enum RoomChange: Hashable, Sendable {
    case roomInfoUpdated
    case classStateUpdated(ClassState)
    case allMicrophonesMuted
    /// The room's camera or microphone mute was switched on or off (students' devices of
    /// that kind count as off while it is on; their stream changes come as `streamUpdated`).
    case deviceMuteUpdated(Device, muted: Bool)
    /// Hand raising was switched on or off, or auto-stage changed (hands it lowered come as `handLowered`).
    case handRaisingUpdated(HandRaisingPolicy)
    /// `user`'s invitation to the stage was issued or answered (the seat an accept takes comes as `coHostsAdded`).
    case invitationUpdated(UserID)
    case roomPropertiesUpdated(keys: [String])
    /// A lock was acquired, renewed, released or revoked.
    case locksUpdated(names: [String])
    /// Breakout groups were created, renamed, removed or ended, or someone moved between them.
    case breakoutUpdated
    case userJoined(UserID)
    case userLeft(UserID)
    /// The user's name or role changed (`previousName`, `previousRole`: what they were),
    /// or its reward total went down (a fold): then both are as they are now.
    case userUpdated(UserID, previousName: String, previousRole: Role)
    /// Known now without having come online (its session's host was already declared
    /// down, or a patch brought only ended sessions): an offline row in the roster.
    /// Not an event: a join snapshot brings thousands of them in a long-lived room.
    case userKnown(UserID)
    case coHostsAdded([UserID])
    case coHostsRemoved([UserID])
    case streamUpdated(UserID, Device, StreamState)
    case boardUpdated(UserID, granted: Bool)
    case userRewarded(UserID, amount: Int32, total: Int64)
    case handWaved(UserID)
    case handLowered(UserID)
    case userKicked(UserID)
    case userBanned(UserID)
    case userPropertiesUpdated(UserID, keys: [String])
    /// The class closed (`after`, and its close delay passed): the nodes refused this
    /// client `room-closed` and it stopped for good. Never from a delta: the client says it.
    case roomClosed
}

/// The result of applying one delta.
public enum ApplyOutcome: Hashable, Sendable {
    case applied([RoomChange])
    /// Seen before: nothing changed.
    case duplicate
    /// Not applied and not recorded as seen: it must come after earlier deltas of its
    /// origin this replica lacks (a reward fold); the repair of that gap brings it.
    case deferred
    /// Refused by the authority rules; recorded as seen, so it is not asked for again.
    case rejected(Rejection)

    public var changes: [RoomChange] {
        if case let .applied(changes) = self { return changes }
        return []
    }
}
