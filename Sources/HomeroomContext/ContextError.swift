import HomeroomNode

/// Errors the contexts report, with codes a program can match. Refusals keep the
/// node's code (stage-full, not-allowed, room-closed, ...); the contexts add a few of
/// their own (not-joined, kicked, invalid-argument). The message says what to do.
public struct ContextError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    init(_ error: ClientError) {
        switch error {
        case let .refused(code, message): self.init(code: code, message: message)
        default: self.init(code: error.code, message: error.description)
        }
    }

    // Refusals from the node (admission checks at the origin).
    public static let stageFull = "stage-full"
    public static let notAllowed = "not-allowed"
    public static let roomClosed = "room-closed"
    public static let roomFull = "room-full"
    public static let handLimitReached = "hand-limit-reached"
    public static let userNotFound = "user-not-found"
    public static let banned = "banned"
    public static let classStateBackwards = "class-state-backwards"
    public static let invalid = "invalid"
    public static let roleMismatch = "role-mismatch"
    /// Chat is muted for this user, or for the room (messaging).
    public static let muted = "muted"
    /// A student turning on a camera or microphone the room mutes (`StreamContext.muteRoom`).
    public static let deviceMuted = "device-muted"
    /// A raise while the teacher has switched hand raising off (`UserContext.allowHandsUp`).
    public static let handRaisingOff = "hand-raising-off"
    /// An answer with no open invitation to the stage (`UserContext.acceptInvitation`).
    public static let noInvitation = "no-invitation"
    /// An answer after the invitation's duration.
    public static let invitationExpired = "invitation-expired"
    /// A second answer to one invitation.
    public static let invitationAnswered = "invitation-answered"
    /// A conditional property write found the key at another revision: read it again.
    public static let revisionMismatch = "revision-mismatch"
    // The link.
    public static let unavailable = "unavailable"
    public static let aborted = "aborted"
    // The contexts themselves.
    public static let notJoined = "not-joined"
    public static let kicked = "kicked"
    public static let invalidArgument = "invalid-argument"

    public var description: String { "\(message) [\(code)]" }

    static func notJoinedYet(_ room: String) -> ContextError {
        ContextError(code: notJoined, message: "not in room \(room): call join() first")
    }

    static func invalidArgument(_ message: String) -> ContextError {
        ContextError(code: invalidArgument, message: message)
    }
}
