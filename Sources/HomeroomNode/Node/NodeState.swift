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

    init(replica: ReplicaID, maxClockDriftMillis: UInt64) {
        sequencer = Sequencer(replica: replica, maxForwardDriftMillis: maxClockDriftMillis)
    }

    mutating func nextEnvelopeSequence() -> UInt64 {
        envelopeSequence += 1
        return envelopeSequence
    }
}
