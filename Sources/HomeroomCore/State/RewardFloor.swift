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
/// Merging keeps the larger `upTo` with its sum: the origin's later fold covers
/// everything its earlier one did, so this is commutative, associative and idempotent.
public struct RewardFloor: Hashable, Sendable {
    /// Sequences (of the origin) at or below this are covered.
    public var upTo: UInt64
    /// The amounts of every reward covered.
    public var sum: Int64
    /// The fold delta that wrote it (the largest, after merges): sent to a replica
    /// that has not seen it.
    public var stamp: Stamp

    public init(upTo: UInt64, sum: Int64, stamp: Stamp) {
        self.upTo = upTo
        self.sum = sum
        self.stamp = stamp
    }

    /// Whether the reward record with this (earliest) stamp, of this floor's origin, is folded.
    @inline(__always)
    public func covers(sequence: UInt64) -> Bool { sequence != 0 && sequence <= upTo }

    public mutating func merge(_ other: RewardFloor) {
        if (other.upTo, other.sum) > (upTo, sum) {
            upTo = other.upTo
            sum = other.sum
        }
        if stamp < other.stamp { stamp = other.stamp }
    }
}
