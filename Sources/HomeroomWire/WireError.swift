/// Why bytes could not be decoded. Every case says what to do about it; `code`
/// is the stable string sent back in an `ErrorReply` and used in metrics.
/// A decode that throws has changed nothing: there is no partial result.
public enum WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input ends early: a field needs `needed` bytes where only `available` remain.
    case truncated(needed: Int, available: Int)
    /// The bytes are not a valid protobuf message of the expected type.
    case malformed(String)
    /// The whole message is larger than `limit` bytes.
    case oversized(limit: Int, actual: Int)
    /// The envelope's protocol version is not one this build speaks.
    case unsupportedVersion(got: UInt32, supported: ClosedRange<UInt32>)
    /// A required field is absent (named by its proto path, e.g. "envelope.body").
    case missingField(String)
    /// A field holds a value outside its domain.
    case invalidValue(field: String, reason: String)
    /// A count or size is over the configured `WireLimits`.
    case limitExceeded(what: String, limit: Int, actual: Int)

    /// A stable, machine-readable code (ErrorReply.code).
    public var code: String {
        switch self {
        case .truncated: return "truncated"
        case .malformed: return "malformed"
        case .oversized: return "oversized"
        case .unsupportedVersion: return "unsupported-version"
        case .missingField: return "missing-field"
        case .invalidValue: return "invalid-value"
        case .limitExceeded: return "limit-exceeded"
        }
    }

    public var description: String {
        switch self {
        case let .truncated(needed, available):
            return "truncated message: a field needs \(needed) bytes but only \(available) remain; "
                + "the sender or the transport cut it short: resend the whole message"
        case let .malformed(reason):
            return "malformed message: \(reason); check that the sender encodes homeroom.v1 messages "
                + "from Proto/homeroom/v1 (decode it with `protoc --decode=homeroom.v1.Envelope`)"
        case let .oversized(limit, actual):
            return "message of \(actual) bytes is over the limit of \(limit) bytes; split it "
                + "(several patches or batches) or raise WireLimits.maxMessageBytes on every node"
        case let .unsupportedVersion(got, supported):
            let range = supported.lowerBound == supported.upperBound ? "\(supported.lowerBound)" : "\(supported.lowerBound)-\(supported.upperBound)"
            return "protocol version \(got) is not supported (this build speaks \(range)); "
                + "upgrade the older side or send protocol_version \(supported.upperBound)"
        case let .missingField(field):
            return "required field \(field) is missing; the sender must set it (see docs/PROTOCOL.md)"
        case let .invalidValue(field, reason):
            return "invalid value in \(field): \(reason); the sender must fix it (docs/PROTOCOL.md gives each field's domain)"
        case let .limitExceeded(what, limit, actual):
            return "\(what): \(actual) is over the limit of \(limit); send less per message "
                + "or raise the matching WireLimits field on every node"
        }
    }
}
