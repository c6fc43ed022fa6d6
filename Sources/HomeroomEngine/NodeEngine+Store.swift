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
extension NodeEngine {
    /// An append of remote deltas or a patch for this room failed.
    public mutating func storeMissed(room: String) {
        storeBehind.insert(room)
    }

    /// A snapshot of the room as it is now was stored.
    public mutating func snapshotStored(room: String) {
        storeBehind.remove(room)
    }

    /// Whether a patch merged into this room may be appended to the store.
    public func appendsPatches(room: String) -> Bool { !storeBehind.contains(room) }
}
