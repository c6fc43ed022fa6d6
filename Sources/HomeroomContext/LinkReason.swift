import HomeroomNode

/// Why the link is in its state (Signaling's link state reasons), as a UI shows it: every
/// change of `ConnectionState` comes with one, and so does a failed round while
/// reconnecting. The raw value is a stable code (the web page reads it).
public enum LinkReason: String, Sendable, Equatable, CaseIterable {
    /// Connecting for the first time.
    case starting = "starting"
    /// Connected: the first join (or read) of this client succeeded.
    case joined = "joined"
    /// Connected again after a loss: to the same node or another.
    case reattached = "reattached"
    /// Reconnecting: the node stopped answering (`LinkInfo.cause` says how).
    case linkLost = "link-lost"
    /// Reconnecting: the node answers, but cannot serve (it stepped aside, or took no write).
    case nodeUnavailable = "node-unavailable"
    /// Reconnecting: the room is kept on other nodes now (placement).
    case roomMoved = "room-moved"
    /// Reconnecting: the node ended this client's session (its lease ran out).
    case sessionEnded = "session-ended"
    /// Reconnecting: a whole round over the nodes failed; the next one is scheduled.
    case everyNodeFailed = "every-node-failed"
    /// Suspended: the backoff is spent; a round over the nodes every 30 s.
    case backoffSpent = "backoff-spent"
    /// Aborted: the first join found no node that would take it.
    case joinFailed = "join-failed"
    /// Aborted: the user is banned from the room.
    case banned = "banned"
    /// Aborted: the join token expired.
    case tokenExpired = "token-expired"
    /// Aborted: the join token was revoked.
    case tokenRevoked = "token-revoked"
    /// Aborted: the nodes refuse the join token (not valid for this room, or malformed).
    case tokenRefused = "token-refused"
    /// Aborted: the user was moved out of this breakout group's room.
    case removedFromGroup = "removed-from-group"
    /// Aborted: the room was closed.
    case roomClosed = "room-closed"
    /// Aborted: another refusal no retry can change.
    case refused = "refused"
    /// Aborted: this client was closed (left the room).
    case closedByClient = "closed-by-client"

    init(_ reason: ClientLinkReason) {
        switch reason {
        case .starting: self = .starting
        case .joined: self = .joined
        case .reattached: self = .reattached
        case .linkLost: self = .linkLost
        case .nodeUnavailable: self = .nodeUnavailable
        case .roomMoved: self = .roomMoved
        case .sessionEnded: self = .sessionEnded
        case .everyNodeFailed: self = .everyNodeFailed
        case .backoffSpent: self = .backoffSpent
        case .joinFailed: self = .joinFailed
        case .banned: self = .banned
        case .tokenExpired: self = .tokenExpired
        case .tokenRevoked: self = .tokenRevoked
        case .tokenRefused: self = .tokenRefused
        case .removedFromGroup: self = .removedFromGroup
        case .roomClosed: self = .roomClosed
        case .refused: self = .refused
        case .closedByClient: self = .closedByClient
        }
    }
}

/// When a pool whose node is lost tries the nodes again: a round at once, then these
/// waits between rounds that fail (Signaling's 2, 4, 8, 16 s), then `suspended` with a
/// round every `suspendedIntervalMillis` (30 s), never giving up. Each wait is lengthened
/// by up to `jitter` of itself, at random. Tests and harnesses shorten it.
public struct ReconnectOptions: Sendable, Equatable {
    public var backoffMillis: [UInt64]
    public var suspendedIntervalMillis: UInt64
    public var jitter: Double

    public init() {
        let defaults = ReconnectSchedule.Options()
        self.init(backoffMillis: defaults.backoffMillis, suspendedIntervalMillis: defaults.suspendedIntervalMillis, jitter: defaults.jitter)
    }

    public init(backoffMillis: [UInt64], suspendedIntervalMillis: UInt64, jitter: Double = 0.1) {
        self.backoffMillis = backoffMillis
        self.suspendedIntervalMillis = suspendedIntervalMillis
        self.jitter = jitter
    }

    var schedule: ReconnectSchedule.Options {
        ReconnectSchedule.Options(backoffMillis: backoffMillis, suspendedIntervalMillis: suspendedIntervalMillis, jitter: jitter)
    }
}
