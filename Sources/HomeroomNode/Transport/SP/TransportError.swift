@preconcurrency import Glibc

/// An error from Homeroom's SP transport, with the operation that failed and what to do.
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        /// No reply or connection within the time allowed.
        case timedOut
        /// The socket was closed (often on purpose, by `close()`).
        case closed
        /// Another socket or process already listens there.
        case addressInUse
        /// The URL is not tcp://host:port or ipc:///path, or the host does not resolve.
        case addressInvalid
        /// The message is larger than allowed.
        case messageTooLarge
        /// The operation was canceled (task cancellation).
        case canceled
        /// The connection dropped after the request was sent: it may have been handled.
        case connectionLost
        /// TLS files missing or unusable, or a TLS address without them.
        case tls
        /// Any other system error.
        case other
    }

    public let code: Code
    /// The system error number, when there was one (0 otherwise).
    public let errno: Int32
    public let reason: String
    /// What was being done, e.g. "listen on tcp://127.0.0.1:7000".
    public let operation: String

    public init(_ code: Code, _ operation: String, reason: String? = nil, errno: Int32 = 0) {
        self.code = code
        self.errno = errno
        self.operation = operation
        self.reason = reason ?? Self.defaultReason(code)
    }

    /// An error from a failed system call; `errno` picks the code.
    static func system(_ operation: String, errno value: Int32) -> TransportError {
        let code: Code
        switch value {
        case EADDRINUSE: code = .addressInUse
        case EADDRNOTAVAIL, EAFNOSUPPORT, ENOENT, ENAMETOOLONG: code = .addressInvalid
        case ETIMEDOUT: code = .timedOut
        default: code = .other
        }
        return TransportError(code, operation, reason: String(cString: strerror(value)), errno: value)
    }

    private static func defaultReason(_ code: Code) -> String {
        switch code {
        case .timedOut: return "Timed out"
        case .closed: return "Object closed"
        case .addressInUse: return "Address in use"
        case .addressInvalid: return "Address invalid"
        case .messageTooLarge: return "Message too large"
        case .canceled: return "Operation canceled"
        case .connectionLost: return "Connection lost after the request was sent"
        case .tls: return "TLS is not set up"
        case .other: return "Failed"
        }
    }

    public var hint: String? {
        switch code {
        case .timedOut:
            // A timeout at an address that spoke another protocol already says what to fix.
            if reason.hasPrefix("the address is") || reason.hasPrefix("TLS ") || reason.hasPrefix("nothing listens")
                || reason.hasPrefix("the host in") || reason.hasPrefix("no route") || reason.hasPrefix("no answer to the connection")
                || reason.hasPrefix("no socket at") || reason.hasPrefix("cannot connect") { return nil }
            return "the peer did not answer in time; check that it runs and is connected, or raise the timeout"
        case .closed: return "the socket was closed; open a new one"
        case .addressInUse: return "pick another port or stop the process using it"
        case .addressInvalid: return "use a URL such as tcp://127.0.0.1:7000, ipc:///tmp/name or inproc://name"
        case .messageTooLarge: return "raise the receiver's maximum message size or send smaller messages"
        case .connectionLost: return "the replier may have handled it: retry only what is safe to do twice (Homeroom writes are, by their author counter)"
        case .tls: return "docs/SECURITY.md (\"TLS\") shows how to make the certificates and which flags take them"
        case .canceled, .other: return nil
        }
    }

    public var description: String {
        if let hint { return "\(operation): \(reason) — \(hint)" }
        return "\(operation): \(reason)"
    }

    public var isTimeout: Bool { code == .timedOut }
    public var isClosed: Bool { code == .closed }
}
