/// What is left of the sessions one origin (node) started for one user once they were
/// folded away: every session whose start this origin sequenced at or below `upTo` is
/// gone, except those listed in `keep` (still open when the fold was made).
///
/// The floor is what keeps a user's session list bounded over a semester: ended
/// sessions leave the record, and a copy of one that arrives late (a patch from a
/// replica that has not folded yet, a delta that was delayed) is recognised by its
/// start dot and dropped instead of coming back. Only the origin folds its own
/// sessions (a `foldSessions` delta it sequences), after it has seen every start it
/// sequenced up to `upTo`, so no replica can hold a session the floor wrongly covers.
///
/// Merging is the union of the covered sets, so it is commutative, associative and
/// idempotent even if two folds of one origin cross.
public struct SessionFloor: Hashable, Sendable {
    /// Sequences at or below this are covered, unless kept.
    public var upTo: UInt64
    /// Sequences at or below `upTo` of sessions that stay (sorted, unique).
    public var keep: [UInt64]
    /// The fold delta that wrote it (the largest, after merges): sent to a replica
    /// that has not seen it.
    public var stamp: Stamp

    public init(upTo: UInt64, keep: [UInt64], stamp: Stamp) {
        self.upTo = upTo
        self.keep = Array(Set(keep.filter { $0 <= upTo })).sorted()
        self.stamp = stamp
    }

    /// Whether the session this origin started at `sequence` is folded away.
    @inline(__always)
    public func covers(_ sequence: UInt64) -> Bool {
        guard sequence != 0, sequence <= upTo else { return false }
        return !keep.sortedContains(sequence)
    }

    /// The union of what both cover. A sequence stays uncovered only if neither covers it.
    public mutating func merge(_ other: SessionFloor) {
        let merged = max(upTo, other.upTo)
        let candidates = Set(keep).union(other.keep)
        let kept = candidates.filter { !covers($0) && !other.covers($0) && $0 <= merged }
        upTo = merged
        keep = kept.sorted()
        if stamp < other.stamp { stamp = other.stamp }
    }

    /// The most sessions a floor keeps: open sessions are bounded by
    /// `RoomState.maxOpenSessionsPerUser` at each origin.
    public static let maxKept = 256
}
