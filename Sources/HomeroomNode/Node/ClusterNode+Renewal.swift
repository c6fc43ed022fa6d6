import HomeroomCore

/// Token renewal (docs/PROTOCOL.md, "Token renewal"): nothing is stored, since every
/// request carries its token and is checked on its own; the renewal tells the client,
/// before it switches, that its new token is valid here and fits its session.
extension ClusterNode {
    func renewal(room roomID: String, session: String, claims: TokenClaims?) -> Result<Int64, TokenRenewal.Refusal> {
        guard let claims else {
            return .failure(TokenRenewal.Refusal(code: "not-allowed", message: "this node does not use join tokens (no --token-key): there is nothing to renew"))
        }
        guard let room = state.withLock({ $0.rooms[roomID] }) else {
            return .failure(TokenRenewal.Refusal(code: "not-joined", message: "room \(roomID) is not open on this node: join again with the new token"))
        }
        let result = TokenRenewal.check(claims, session: session, in: room)
        switch result {
        case .success: metrics.add("token_renewals_total")
        case let .failure(refusal): metrics.add("token_renewals_refused_total{code=\"\(refusal.code)\"}")
        }
        return result
    }
}
