/// What is left of the rewards one origin (node) sequenced for one user once they were
/// folded away: every reward whose earliest copy this origin sequenced at or below
/// `upTo` is counted in `sum` and no longer listed.
///
/// Rewards are a grow-only set keyed by (author, author counter), kept so a retried
/// reward counts once. The floor bounds it over a semester. It is exact because the
/// origin folds a reward only once it holds every copy that can ever exist of it: a
/// node admits a reward only within the reward window of its `issuedAtMillis`, so once
/// every node the origin knows has sent a heartbeat later than that and the origin has
/// seen that node's writes up to then, no copy is missing and none can come (see
/// `RoomState.rewardFoldPlan`). A copy that arrives late (a patch from a replica that
/// has not folded yet, a delayed delta) is recognised by its stamp and dropped.
///
/// Merging keeps the origin's later fold (the larger stamp): it covers everything its
/// earlier ones did, so this is commutative, associative and idempotent.
public struct RewardFloor: Hashable, Sendable {
    /// Sequences (of the origin) at or below this are covered, unless kept.
    public var upTo: UInt64
    /// The amounts of every reward covered.
    public var sum: Int64
    /// Sequences at or below `upTo` of rewards still listed (sorted, unique): retried
    /// through another node, they wait until that node's fold covers its copy.
    public var keep: [UInt64]
    /// The fold delta that wrote it: the origin's later fold, which covers everything
    /// its earlier ones did, wins a merge.
    public var stamp: Stamp

    public init(upTo: UInt64, sum: Int64, keep: [UInt64] = [], stamp: Stamp) {
        self.upTo = upTo
        self.sum = sum
        self.keep = Array(Set(keep.filter { $0 <= upTo })).sorted()
        self.stamp = stamp
    }

    /// Whether the reward record with this (earliest) stamp, of this floor's origin, is folded.
    @inline(__always)
    public func covers(sequence: UInt64) -> Bool {
        guard sequence != 0, sequence <= upTo else { return false }
        return !keep.sortedContains(sequence)
    }

    public mutating func merge(_ other: RewardFloor) {
        if Self.precedes(self, other) { self = other }
    }

    /// The later fold by stamp; two floors with one stamp (only hostile input makes
    /// them) are ordered by their content, so merging stays commutative.
    static func precedes(_ a: RewardFloor, _ b: RewardFloor) -> Bool {
        if a.stamp != b.stamp { return a.stamp < b.stamp }
        if (a.upTo, a.sum) != (b.upTo, b.sum) { return (a.upTo, a.sum) < (b.upTo, b.sum) }
        return a.keep.lexicographicallyPrecedes(b.keep)
    }

    /// The most rewards a floor keeps (retries waiting for another node's fold).
    public static let maxKept = 256
}
