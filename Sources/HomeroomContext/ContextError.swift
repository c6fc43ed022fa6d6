import HomeroomNode

/// Errors the contexts report, with codes a program can match
/// (the node's refusal codes: stage-full, not-allowed, room-closed, ...).
public struct ContextError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    public init(_ error: ClientError) {
        self.init(code: error.code, message: error.description)
    }

    public static let stageFull = "stage-full"
    public static let notAllowed = "not-allowed"
    public static let roomClosed = "room-closed"
    public static let unavailable = "unavailable"

    public var description: String { "\(message) [\(code)]" }
}
