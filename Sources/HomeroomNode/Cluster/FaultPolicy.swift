import HomeroomCore

/// Faults a node injects into its own cluster traffic, for tests and chaos runs:
/// drop or duplicate what it receives (seeded, so a run replays), and cut links to
/// chosen nodes, or to all of them (isolation). Client traffic is never touched.
public struct FaultPolicy: Sendable, Equatable {
    public var seed: UInt64 = 0
    public var dropPercent = 0
    public var duplicatePercent = 0
    /// Every cluster message is held this long, plus up to `jitterMillis` more
    /// (seeded), before it is processed: latency, and reordering with jitter.
    public var delayMillis = 0
    public var jitterMillis = 0
    /// Nodes this one neither hears from nor talks to.
    public var blocked: Set<ReplicaID> = []
    /// Cut from every other node.
    public var isolated = false

    public init(seed: UInt64 = 0, dropPercent: Int = 0, duplicatePercent: Int = 0) {
        self.seed = seed
        self.dropPercent = dropPercent
        self.duplicatePercent = duplicatePercent
    }

    public func cuts(_ peer: ReplicaID) -> Bool { isolated || blocked.contains(peer) }

    public var isQuiet: Bool {
        dropPercent == 0 && duplicatePercent == 0 && delayMillis == 0 && jitterMillis == 0 && blocked.isEmpty && !isolated
    }
}

/// The seeded dice behind `FaultPolicy`.
struct FaultDice {
    var rng: SplitMix64
    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    /// How long to hold an inbound message.
    mutating func delay(_ policy: FaultPolicy) -> Int {
        guard policy.delayMillis > 0 || policy.jitterMillis > 0 else { return 0 }
        return policy.delayMillis + (policy.jitterMillis > 0 ? Int.random(in: 0...policy.jitterMillis, using: &rng) : 0)
    }

    /// How many copies of an inbound message to process: 0 (dropped), 1 or 2.
    mutating func copies(_ policy: FaultPolicy) -> Int {
        if policy.dropPercent > 0 && rng.chance(policy.dropPercent) { return 0 }
        if policy.duplicatePercent > 0 && rng.chance(policy.duplicatePercent) { return 2 }
        return 1
    }
}
