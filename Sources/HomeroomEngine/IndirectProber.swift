import HomeroomCore

/// SWIM's probes, for the peers this node no longer hears (docs/ARCHITECTURE.md,
/// "Failure detection"). Heartbeats are the gossip and the first sign of life; a peer
/// silent past the suspect period is probed, every `everyMillis`, directly (its own
/// answer) and through `fanout` other peers this node hears (SWIM's ping-req: each
/// answers whether it hears the target). An answer that it is alive vouches for it
/// (`PeerLiveness.vouched`), so a node that only this node cannot reach (a broken link,
/// a bridge or ring partition, loss on one path) is not declared down, and its sessions
/// do not end on every replica. Pure: the shell sends the probes and reports answers.
public struct IndirectProber: Sendable {
    /// One probe round: ask `target` itself (when `direct`), and ask each of `helpers` about it.
    public struct Round: Equatable, Sendable {
        public var target: ReplicaID
        public var direct: Bool
        public var helpers: [ReplicaID]

        public init(target: ReplicaID, direct: Bool, helpers: [ReplicaID]) {
            self.target = target
            self.direct = direct
            self.helpers = helpers
        }
    }

    /// Helpers asked per round (SWIM's k); 0 probes the target directly only.
    public let fanout: Int
    /// How often a silent peer is probed again.
    public let everyMillis: UInt64
    private var lastRound: [ReplicaID: UInt64] = [:]
    private var random: SplitMix64

    public init(fanout: Int = 3, everyMillis: UInt64, seed: UInt64) {
        self.fanout = max(0, fanout)
        self.everyMillis = max(1, everyMillis)
        random = SplitMix64(seed: seed)
    }

    /// The rounds due now. `peers`: what this node knows of each peer (an expected origin,
    /// never heard nor named with an incarnation, is not probed); `reachable`: the peers
    /// this node can ask (it has their address and its link to them is not cut). A target
    /// is a peer not heard for `suspectMillis` and not down, asked itself when reachable;
    /// helpers are reachable peers heard lately (alive), `fanout` of them at random.
    public mutating func due(peers: [ReplicaID: PeerLiveness], reachable: Set<ReplicaID>, nowMillis: UInt64,
                             suspectMillis: UInt64) -> [Round] {
        lastRound = lastRound.filter { peers[$0.key]?.health == .suspect }
        let helpers = peers.filter { $0.value.health == .alive && reachable.contains($0.key) }.keys.sorted()
        var rounds: [Round] = []
        for (target, liveness) in peers.sorted(by: { $0.key < $1.key }) {
            guard liveness.health == .suspect, !liveness.isExpectedOnly,
                  PeerLiveness.elapsed(since: liveness.lastHeardMillis, now: nowMillis) >= suspectMillis else { continue }
            if let last = lastRound[target], PeerLiveness.elapsed(since: last, now: nowMillis) < everyMillis { continue }
            var chosen = helpers.filter { $0 != target }
            chosen.shuffle(using: &random)
            let round = Round(target: target, direct: reachable.contains(target), helpers: Array(chosen.prefix(fanout)))
            guard round.direct || !round.helpers.isEmpty else { continue }
            lastRound[target] = nowMillis
            rounds.append(round)
        }
        return rounds
    }
}
