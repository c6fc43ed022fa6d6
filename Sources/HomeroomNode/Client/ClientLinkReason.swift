/// Why a client's link is in its state (Signaling's link state reasons): every change of
/// `ClientLinkStatus.state` comes with one, and so does a failed round while reconnecting.
/// The raw value is a stable code (the web page and scripts read it).
public enum ClientLinkReason: String, Sendable, Equatable, CaseIterable {
    /// Connecting for the first time.
    case starting = "starting"
    /// Connected: the first join (or read) of this client succeeded.
    case joined = "joined"
    /// Connected again after a loss: to the same node or another.
    case reattached = "reattached"
    /// Reconnecting: the node stopped answering (`ClientLinkStatus.cause` says how).
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

    /// The reason for a refusal no retry changes (`RoomClient.isFinal`), by its code.
    public static func finalRefusal(_ code: String) -> ClientLinkReason {
        switch code {
        case "banned": return .banned
        case "token-expired": return .tokenExpired
        case "token-revoked": return .tokenRevoked
        case "not-in-group": return .removedFromGroup
        case "room-closed": return .roomClosed
        default: return code.hasPrefix("token-") ? .tokenRefused : .refused
        }
    }

    /// A few words for people ("every node failed").
    public var text: String {
        switch self {
        case .starting: return "starting"
        case .joined: return "joined"
        case .reattached: return "attached again"
        case .linkLost: return "the node stopped answering"
        case .nodeUnavailable: return "the node could not serve"
        case .roomMoved: return "the room moved to other nodes"
        case .sessionEnded: return "the node ended this session"
        case .everyNodeFailed: return "every node failed"
        case .backoffSpent: return "every node failed for a while"
        case .joinFailed: return "no node took the join"
        case .banned: return "banned from the room"
        case .tokenExpired: return "the join token expired"
        case .tokenRevoked: return "the join token was revoked"
        case .tokenRefused: return "the join token was refused"
        case .removedFromGroup: return "moved out of this group"
        case .roomClosed: return "the room was closed"
        case .refused: return "refused for good"
        case .closedByClient: return "closed"
        }
    }
}
