import HomeroomCore
import HomeroomWire

/// Everything a node mutates, kept behind one lock: the rooms, the sequencer, the
/// peer table, and the repairs to make.
struct NodeState {
    var rooms: [String: RoomState] = [:]
    var sequencer: Sequencer
    var peers = PeerTable()
    var faults = FaultPolicy()
    var dice = FaultDice(seed: 0)
    var envelopeSequence: UInt64 = 0
    /// The last sequence number this node gave a delta, per room.
    var roomSequences: [String: UInt64] = [:]
    /// (peer, room) pairs to pull from at the next tick.
    var pendingSyncs: Set<SyncKey> = []
    var stopping = false
    /// The durable store, if the node has a data directory.
    var store: NodeStore?
    /// Rooms whose log grew since their last snapshot.
    var dirtyRooms: [String: Int] = [:]

    struct SyncKey: Hashable {
        var peer: ReplicaID
        var room: String
    }

    var limiter = RateLimiter(messagesPerSecond: 60, bytesPerSecond: 256 * 1024)

    init(replica: ReplicaID, maxClockDriftMillis: UInt64) {
        sequencer = Sequencer(replica: replica, maxForwardDriftMillis: maxClockDriftMillis)
    }

    /// Stamps a write for a room without committing the sequence number: the caller
    /// stores the delta first, then calls `commit`.
    func stamp(room: String, _ write: Write, nowMillis: UInt64) -> (Delta, Sequencer) {
        var sequencer = self.sequencer
        let delta = sequencer.stamp(write, sequence: (roomSequences[room] ?? 0) + 1, nowMillis: nowMillis)
        return (delta, sequencer)
    }

    mutating func commit(room: String, _ delta: Delta, _ sequencer: Sequencer) {
        self.sequencer = sequencer
        roomSequences[room] = delta.sequence
    }

    mutating func nextEnvelopeSequence() -> UInt64 {
        envelopeSequence += 1
        return envelopeSequence
    }
}
