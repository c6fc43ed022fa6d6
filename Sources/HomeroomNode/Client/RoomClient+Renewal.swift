import HomeroomWire

/// Token renewal (Signaling's `renewToken`; docs/PROTOCOL.md, "Token renewal"): the
/// attached node checks the new token against this client's live session, then every
/// request carries it. The session, presence and subscriptions stay as they were.
extension RoomClient {
    /// The join token's expiry (Unix seconds, its `exp`), nil without a token.
    public var tokenExpiresAt: Int64? { state.withLock { $0.tokenExpiresAt } }

    /// Renews the join token without rejoining; returns the new token's expiry. Refused
    /// (`token-renewal-mismatch`) for a token of another user or role; the token's own
    /// problems are its `token-*` codes. A refused renewal changes nothing: the old token
    /// is still used until it expires.
    @discardableResult
    public func renewToken(_ token: String) throws(ClientError) -> Int64 {
        guard JoinToken.peek(token) != nil else {
            throw .refused(code: TokenError.malformed.code, message: TokenError.malformed.description)
        }
        let (link, session, final) = state.withLock { ($0.link, $0.session, $0.finalRefusal) }
        if let final {
            throw .refused(code: final, message: "the nodes refused this client for good (\(final)): join again with the new token")
        }
        guard let link else { throw .unavailable("not attached to a node now: renew once the link is back") }
        let reply = try request(link, .renewRequest(session: session), token: token)
        switch reply.message {
        case let .renewReply(expiresAt):
            state.withLock { state in
                state.token = token
                state.tokenExpiresAt = expiresAt
            }
            logger.info("join token renewed", ["expires_at": "\(expiresAt)"])
            return expiresAt
        case let .error(refusal):
            throw .refused(code: refusal.code, message: refusal.message)
        default:
            throw .protocolError("a \(reply.message.kind) in reply to a token renewal")
        }
    }
}
