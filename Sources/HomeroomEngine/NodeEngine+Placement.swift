import HomeroomCore

/// Rooms a node hands off when it no longer owns them (`Placement`; docs/PROTOCOL.md,
/// "Placement"). A copy that is not this node's to keep goes only once every owner
/// holds all of it (`coveredByOwners`), and its sequence numbers stay: a node that owns
/// the room again later numbers above what it gave there before, so no dot is ever
/// given twice (a second write under a dot the owners hold would be dropped as a
/// duplicate everywhere: an acknowledged write lost).
public struct SequenceFloor: Sendable, Equatable {
    /// The last sequence number this node gave in the room, and under its private origin.
    public var sequence: UInt64
    public var privateSequence: UInt64
    /// This node's clock (packed) when the room left: above every stamp it wrote there,
    /// so a later write here is stamped later even after a restart with a clock set back.
    public var clock: UInt64

    public init(sequence: UInt64, privateSequence: UInt64, clock: UInt64 = 0) {
        self.sequence = sequence
        self.privateSequence = privateSequence
        self.clock = clock
    }
}

extension NodeEngine {
    /// Whether every other owner is known to hold everything this copy holds: `views`
    /// gives, per other owner, the room's vector as it last announced it (nil when it
    /// announced none, or is not heard as alive with a confirmed view). With no other
    /// owner, never: the copy is this node's to keep.
    public func coveredByOwners(room roomID: String, views: [VersionVector?]) -> Bool {
        guard let room = rooms[roomID] else { return true }
        guard !views.isEmpty else { return false }
        return views.allSatisfy { $0?.dominates(room.seen) == true }
    }

    /// Drops a room this node no longer owns; returns its sequence floor (to be stored
    /// with the removal), or nil when the engine does not hold it.
    public mutating func handOff(room roomID: String) -> SequenceFloor? {
        guard rooms[roomID] != nil else { return nil }
        rooms.removeValue(forKey: roomID)
        evicted[roomID] = nil
        storeBehind[roomID] = nil
        foldCandidates[roomID] = nil
        foldLater[roomID] = nil
        rewardFoldCandidates[roomID] = nil
        deadMarks[roomID] = nil
        roomsWithOrphans.remove(roomID)
        compactions.forget(room: roomID)
        // Kept, so a later write here continues above them.
        return SequenceFloor(sequence: roomSequences[roomID] ?? 0, privateSequence: privateSequences[roomID] ?? 0,
                             clock: sequencer.clock.last)
    }

    /// The clock a restart's store vouches for: at least every reading this replica gave
    /// out (the log's deltas, and what each compaction recorded of the clock when it trimmed
    /// them). The rooms' stamps alone miss writes that leave none (`replica_down`, folds,
    /// overwritten registers): a restart then stamped its next write at or below them.
    public mutating func restoreClock(atLeast packed: UInt64) {
        sequencer.restore(lastSequence: 0, lastClock: packed)
    }

    /// Floors of rooms handed off before a restart (from the store): numbering continues above them.
    public mutating func restore(floors: [String: SequenceFloor]) {
        for (roomID, floor) in floors {
            roomSequences[roomID] = max(roomSequences[roomID] ?? 0, floor.sequence)
            privateSequences[roomID] = max(privateSequences[roomID] ?? 0, floor.privateSequence)
            sequencer.restore(lastSequence: 0, lastClock: floor.clock)
        }
    }
}
