/// When to warn that a join token is about to expire (Signaling's `privilege-will-expire`):
/// once per expiry, `leadSeconds` before it. Derived from the token's own `exp`, so no
/// wire message is needed; a renewed token (a new `exp`) is warned about again.
public struct TokenExpiryWarning: Sendable, Equatable {
    /// The default lead: 30 s before `exp` (nodes accept a token up to 30 s after it,
    /// their clock leeway, so a client warned has about a minute to renew).
    public static let defaultLeadSeconds: Int64 = 30

    public var leadSeconds: Int64
    /// The expiry last warned about.
    private var warnedFor: Int64?

    public init(leadSeconds: Int64 = TokenExpiryWarning.defaultLeadSeconds) {
        self.leadSeconds = leadSeconds
    }

    /// The seconds left (0 when already past) when a warning is due now for a token
    /// expiring at `expiresAt`; nil when none is (no token, too early, or already told).
    public mutating func due(expiresAt: Int64?, nowSeconds: Int64) -> Int64? {
        guard let expiresAt, warnedFor != expiresAt, nowSeconds >= expiresAt - leadSeconds else { return nil }
        warnedFor = expiresAt
        return max(0, expiresAt - nowSeconds)
    }
}
