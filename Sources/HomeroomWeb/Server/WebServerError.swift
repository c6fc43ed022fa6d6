/// Why the web server did not start, and what to do about it.
public struct WebServerError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
