import HomeroomWire

/// `not-owner` redirects, followed only as far as their source is trusted
/// (RedirectPolicy; docs/SECURITY.md, "Redirects"): every dial carries the join token.
extension RoomClient {
    /// Member addresses kept per configured node: a hello answer is still network input.
    static let membersKeptPerNode = 256

    /// The configured endpoints, as `RedirectPolicy.key`s.
    var configuredKeys: Set<String> { Set(endpoints.map { RedirectPolicy.key($0.address) }) }

    /// Notes who the members are from a configured node's hello answer (its own address
    /// and its peers'). A node reached only through a redirect is not asked: its word
    /// would let one redirect vouch for the next.
    func recordMembers(_ nodeInfo: WireMessage.Heartbeat, from endpoint: NodeEndpoint) {
        let key = RedirectPolicy.key(endpoint.address)
        guard configuredKeys.contains(key) else { return }
        let addresses = ([nodeInfo.address] + nodeInfo.peers.map(\.address)).filter { !$0.isEmpty }.prefix(Self.membersKeptPerNode)
        state.withLock { $0.members[key] = Set(addresses.map(RedirectPolicy.key)) }
    }

    /// Keeps, as the owners to try first, those of a `not-owner` reply that came on
    /// `link` which the policy lets through; the others are logged and dropped, and
    /// the client goes on with its configured endpoints. A reply on a link that is no
    /// longer the one attached changes nothing (its source is not known any more).
    func adoptOwners(_ named: [WireMessage.Peer], namedOn link: SPRequester) {
        let (source, members) = state.withLock { state -> (NodeEndpoint?, Set<String>) in
            let source = state.source.flatMap { $0.link === link ? $0.endpoint : nil }
            return (source, state.members.values.reduce(into: Set<String>()) { $0.formUnion($1) })
        }
        guard let source else { return }
        let configured = configuredKeys
        var followed: [NodeEndpoint] = []
        // Only as many as a round tries: a reply naming thousands costs as many log lines.
        for owner in named.lazy.filter({ !$0.address.isEmpty }).prefix(Self.ownersTriedPerRound) {
            let verdict = RedirectPolicy.verdict(owner: owner.address, namedBy: source.address, members: members, configured: configured)
            if verdict == .follow {
                followed.append(NodeEndpoint(owner.address))
            } else {
                logger.notice("not following a redirect", ["owner": owner.address, "named-by": source.address, "why": verdict.reason])
            }
        }
        state.withLock { $0.owners = followed }
    }
}
