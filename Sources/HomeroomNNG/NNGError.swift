import CNNG
import HomeroomNode

/// An error from nng, with the operation that failed and what to do about it.
///
/// Match on `code` (`.timedOut`, `.closed`, `.addressInUse`, `.addressInvalid`, ...);
/// `errno` keeps the raw nng error number and `reason` the `nng_strerror` text.
public struct NNGError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this was, for callers that branch on it.
    public enum Code: Sendable, Hashable {
        /// NNG_ETIMEDOUT: a send or receive timeout passed.
        case timedOut
        /// NNG_ECLOSED: the socket or context was closed (often on purpose, by `close()`).
        case closed
        /// NNG_EADDRINUSE: another socket or process already listens there.
        case addressInUse
        /// NNG_EADDRINVAL, or a URL nng could not parse or has no transport for.
        case addressInvalid
        /// NNG_ECONNREFUSED: nothing listens at the address (blocking dial only).
        case connectionRefused
        /// NNG_EAGAIN: a non-blocking operation would have had to wait.
        case wouldBlock
        /// NNG_EMSGSIZE: the message is larger than allowed.
        case messageTooLarge
        /// NNG_ENOTSUP: the operation or option does not apply to this socket kind.
        case notSupported
        /// NNG_ESTATE: the protocol is in the wrong state (e.g. REP send before receive).
        case wrongState
        /// NNG_EINVAL: an argument or option value was out of range.
        case invalidArgument
        /// NNG_ECANCELED: the operation was canceled.
        case canceled
        /// NNG_ENOMEM: out of memory.
        case outOfMemory
        /// Any other nng error number.
        case other
    }

    public let code: Code
    /// The raw nng error number (an `nng_errno_enum` value).
    public let errno: Int32
    /// nng's own text for `errno` (`nng_strerror`).
    public let reason: String
    /// What was being done, e.g. "listen on tcp://127.0.0.1:7000".
    public let operation: String

    public init(code: Code, errno: Int32, reason: String, operation: String) {
        self.code = code
        self.errno = errno
        self.reason = reason
        self.operation = operation
    }

    /// A short suggestion for the person who reads the error.
    public var hint: String? {
        switch code {
        case .timedOut: return "the peer did not answer in time; check that it runs and is connected, or raise the timeout"
        case .closed: return "the socket was closed; open a new one"
        case .addressInUse: return "pick another port or stop the process using it"
        case .addressInvalid: return "use a URL such as tcp://127.0.0.1:7000, ipc:///tmp/name or inproc://name"
        case .connectionRefused: return "start the listening peer first, or dial without blocking so nng retries"
        case .wouldBlock: return nil
        case .messageTooLarge: return "raise the receiver's maximum receive size or send smaller messages"
        case .notSupported: return "this operation does not apply to this kind of socket or URL scheme"
        case .wrongState: return "for REQ/REP, alternate send and receive"
        case .invalidArgument: return "check the option value (buffers accept 0...8192 messages)"
        case .canceled: return nil
        case .outOfMemory: return nil
        case .other: return nil
        }
    }

    public var description: String {
        if let hint { return "\(operation): \(reason) — \(hint)" }
        return "\(operation): \(reason)"
    }

    public var isTimeout: Bool { code == .timedOut }
    public var isClosed: Bool { code == .closed }
}

extension NNGError {
    /// Builds an error from an nng return value. `addressOperation` marks listen and
    /// dial, where EINVAL and ENOTSUP can only come from the URL.
    init(_ rv: Int32, _ operation: @autoclosure () -> String, addressOperation: Bool = false) {
        let code: Code
        switch UInt32(bitPattern: rv) {
        case NNG_ETIMEDOUT.rawValue: code = .timedOut
        case NNG_ECLOSED.rawValue: code = .closed
        case NNG_EADDRINUSE.rawValue: code = .addressInUse
        case NNG_EADDRINVAL.rawValue: code = .addressInvalid
        case NNG_ECONNREFUSED.rawValue: code = .connectionRefused
        case NNG_EAGAIN.rawValue: code = .wouldBlock
        case NNG_EMSGSIZE.rawValue: code = .messageTooLarge
        case NNG_ENOTSUP.rawValue: code = addressOperation ? .addressInvalid : .notSupported
        case NNG_ESTATE.rawValue: code = .wrongState
        case NNG_EINVAL.rawValue: code = addressOperation ? .addressInvalid : .invalidArgument
        case NNG_ECANCELED.rawValue: code = .canceled
        case NNG_ENOMEM.rawValue: code = .outOfMemory
        default: code = .other
        }
        self.init(code: code, errno: rv, reason: String(cString: nng_strerror(rv)), operation: operation())
    }

    /// The error a wrapper reports when used after `close()`.
    static func closed(_ operation: String) -> NNGError {
        NNGError(Int32(bitPattern: NNG_ECLOSED.rawValue), operation)
    }
}

/// Throws an `NNGError` when `rv` is not zero.
@inline(__always)
func nngCheck(_ rv: Int32, _ operation: @autoclosure () -> String, addressOperation: Bool = false) throws(NNGError) {
    if rv != 0 { throw NNGError(rv, operation(), addressOperation: addressOperation) }
}

extension Int32 {
    static let nngTimedOut = Int32(bitPattern: NNG_ETIMEDOUT.rawValue)
    static let nngClosed = Int32(bitPattern: NNG_ECLOSED.rawValue)
    static let nngAgain = Int32(bitPattern: NNG_EAGAIN.rawValue)
    static let nngCanceled = Int32(bitPattern: NNG_ECANCELED.rawValue)
}

/// Converts a Swift duration to nng milliseconds; `nil` means wait forever.
/// Positive durations below a millisecond round up to one, so they never mean "do not wait".
func nngMilliseconds(_ duration: Duration?) -> nng_duration {
    guard let duration else { return NNG_DURATION_INFINITE }
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return NNG_DURATION_ZERO }
    let maxMillis = Int64(Int32.max - 1)
    if seconds >= maxMillis / 1000 { return nng_duration(maxMillis) }
    var millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
    if attoseconds % 1_000_000_000_000_000 != 0 { millis += 1 }
    return nng_duration(Swift.max(1, Swift.min(millis, maxMillis)))
}
