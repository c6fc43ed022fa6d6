import HomeroomCore

/// What the store may be given incrementally.
///
/// Remote deltas are applied before they are stored, and a failed append of them is not
/// fatal (their origin keeps them). But a repair patch appended after such a failure
/// would carry a version vector that covers the missed deltas without holding them: after
/// a restart the store would claim writes it lacks, and anti-entropy would never bring
/// them back (an acknowledged write lost on this replica for good). So once the store
/// missed something in a room, patches are not appended there until a snapshot of the
/// room, which holds everything, is stored (`ClusterNode.compactStore` tries every tick).
/// Deltas still are: they cover only their own dots.
///
/// A snapshot is taken in memory and stored later, outside the node's lock: a miss
/// between the two is not in it, so each miss is numbered and a stored snapshot clears
/// only the misses made before it was taken (`SnapshotMark`).
extension NodeEngine {
    /// What a snapshot taken now covers of the store's misses.
    public struct SnapshotMark: Sendable, Equatable {
        public let misses: UInt64
    }

    /// An append of remote deltas or a patch for this room failed.
    public mutating func storeMissed(room: String) {
        storeMisses += 1
        storeBehind[room] = storeMisses
    }

    /// Taken with the room's state, under the same lock, when a snapshot is made.
    public var snapshotMark: SnapshotMark { SnapshotMark(misses: storeMisses) }

    /// A snapshot of the room taken at `mark` was stored: misses made before it are covered.
    public mutating func snapshotStored(room: String, takenAt mark: SnapshotMark) {
        if let latest = storeBehind[room], latest <= mark.misses { storeBehind[room] = nil }
    }

    /// A snapshot of the room as it is now was stored.
    public mutating func snapshotStored(room: String) {
        snapshotStored(room: room, takenAt: snapshotMark)
    }

    /// Whether a patch may be appended to the store for this room. Not while the room is
    /// behind: a patch merged then is a miss of its own (the shell reports it,
    /// `storeMissed`), since what it brought is in memory only, so a snapshot copied before
    /// the merge must not clear the room.
    public func appendsPatches(room: String) -> Bool { storeBehind[room] == nil }
}
