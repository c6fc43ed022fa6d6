import HomeroomCore
import HomeroomEngine
import HomeroomWire

/// Everything a node mutates, kept behind one lock: the engine (rooms, numbering, the
/// write policy), the peer table, and the repairs to make.
struct NodeState {
    var engine: NodeEngine
    /// The engine's rooms, changed in place.
    var rooms: RoomTable {
        get { engine.rooms }
        _modify { yield &engine.rooms }
    }
    var sequencer: Sequencer { engine.sequencer }
    var peers = PeerTable()
    /// Probes of the peers this node no longer hears (`ClusterNode.probeSilentPeers`).
    var prober: IndirectProber?
    /// Copies of each room (`NodeConfig.replicas`; 0: every node holds every room).
    var replicas = 0
    /// Rooms on another number of copies (`NodeConfig.roomReplicas`).
    var roomReplicas: [String: Int] = [:]
    /// The members placement last saw (`ClusterNode.handOffRooms`): when they change,
    /// every peer's view is compared again for the rooms this node now owns.
    var placedMembers: [String] = []
    /// Rooms this node holds and no longer owns, to hand off once their owners hold them.
    var handingOff: Set<String> = []
    /// Per room handing off, since when (monotonic ms) its owners have held all of it.
    var coveredSince: [String: UInt64] = [:]
    /// Rooms this node owns that it began to hold from other nodes' deltas (placement),
    /// not from a pull: clients wait until it has caught up (`ClusterNode.roomOnItsWay`).
    var arriving: Set<String> = []
    /// Where the idle-room scan goes on from (`ClusterNode+IdleRooms`).
    var idleScanCursor: String?
    /// When this node started (monotonic ms): a node is not called isolated before
    /// it had the down period to hear its peers.
    var bootedAtMillis = WallClock.monotonicMillis()
    /// Rooms whose deltas this node dropped because another node owned them (and which
    /// it does not hold): should it own one later (a drain or a forget shrank the
    /// cluster to its copy count, so every member owns every room), clients wait until
    /// it holds what the others show. At most `declinedLimit` (then, as before).
    var declined: Set<String> = []
    static let declinedLimit = 100_000
    /// Set by `ClusterNode.drain()`: this node owns no room, hands every copy off, and
    /// announces it (`Heartbeat.draining`) so the others leave it out of placement.
    var draining = false
    /// What this node's heartbeats announce of its rooms (only what changed, and a hash).
    var ownDigest = OwnRoomDigest()
    /// Rooms naming an older store of this node, or retiring this one: all the retirement
    /// passes look at (`refreshRetirementRooms`).
    var retirementRooms: Set<String> = []
    /// Rooms holding message history: all the trim by age looks at (`refreshHistoryRooms`).
    var historyRooms: Set<String> = []
    var faults = FaultPolicy()
    var dice = FaultDice(seed: 0)
    var envelopeSequence: UInt64 = 0
    /// Per room, when this node last trimmed the history by age (monotonic ms).
    var lastTrim: [String: UInt64] = [:]
    /// When a peer's undecodable repair patch was last logged, per (peer, room).
    var decodeFailureLogged: [SyncKey: UInt64] = [:]
    /// What to pull from whom (the engine's schedule: wanted pulls, open gaps, one batch
    /// in flight per peer).
    var pulls = PullSchedule()
    var stopping = false
    /// Why this node stepped aside (descriptors exhausted, a stuck event loop), or nil.
    /// While set it sends no heartbeats and refuses every request `unavailable`.
    var wedged: String?
    /// Set once this node learns that a newer store of its name retired its replica id
    /// (an old store started again): it steps aside for good, as `wedged` does.
    var superseded: String?
    /// Set when the node starts on a store it wrote before and has seeds: until a peer
    /// is heard (or this monotonic time passes), client writes and joins are answered
    /// `unavailable`, so an old store put back cannot acknowledge what a newer store of
    /// its name would have every replica drop (`ClusterNode.awaitingPeers`).
    var peersAwaitedUntil: UInt64?
    /// Other node names heard whose replica-id name hash is this node's (reported once each).
    var collidingNames: Set<String> = []
    /// The durable store, if the node has a data directory.
    var store: NodeStore?
    /// Rooms whose stored state does not load (room -> why): out of service here,
    /// their rows kept as they are; the other nodes serve them.
    var quarantined: [String: String] = [:]
    /// The operators' room listing and when it was made (monotonic ms): made at most
    /// once a second, however many listing hellos arrive (`ClusterNode.roomSummaries`),
    /// and made again once a running carousel's next turn starts (`turnChangesAtMillis`,
    /// wall-clock ms; UInt64.max with no carousel turning), so its stage is never a
    /// turn behind.
    var roomListing: (madeAtMillis: UInt64, turnChangesAtMillis: UInt64, rooms: [ClusterNode.RoomSummary])?

    typealias SyncKey = PullSchedule.Key


    init(engine: NodeEngine) {
        self.engine = engine
    }

    /// The newest (incarnation, envelope sequence) heard from each node: a heartbeat or
    /// hello not newer than that is a replay (or a stale copy) and changes nothing.
    var heartbeatsSeen: [ReplicaID: HeartbeatMark] = [:]

    struct HeartbeatMark: Equatable {
        var incarnation: UInt64
        var sequence: UInt64
    }

    /// Records a heartbeat's mark; false when it is not newer than the last one heard.
    mutating func freshHeartbeat(from node: ReplicaID, incarnation: UInt64, sequence: UInt64) -> Bool {
        if let last = heartbeatsSeen[node], (incarnation, sequence) <= (last.incarnation, last.sequence) { return false }
        heartbeatsSeen[node] = HeartbeatMark(incarnation: incarnation, sequence: sequence)
        return true
    }

    mutating func nextEnvelopeSequence() -> UInt64 {
        envelopeSequence += 1
        return envelopeSequence
    }
}

extension NodeState {
    /// Brings `retirementRooms` up to date with the rooms changed since the last call.
    mutating func refreshRetirementRooms(own: ReplicaID) {
        for roomID in rooms.takeChanged(for: .retirement) {
            if let room = rooms[roomID], room.isRetired(own) || !room.predecessors(of: own).isEmpty {
                retirementRooms.insert(roomID)
            } else {
                retirementRooms.remove(roomID)
            }
        }
    }

    /// Queues a pull for every open gap, and forgets those closed (this node now holds
    /// what the peer's view shows) or whose peer is gone. A gap a heartbeat showed is so
    /// asked again at every tick until it is closed: a peer's partial heartbeats list a
    /// quiet room no more, so a pull lost to a short cut, or one that merged nothing,
    /// would otherwise wait for the peer's next complete list (30 s).
    mutating func requeueOpenGaps() {
        let peers = self.peers, rooms = self.rooms, tombstones = engine.tombstones
        pulls.requeueOpenGaps { key in
            // A room removed after closing takes nothing from a peer: no gap of it is open.
            guard !tombstones.covers(key.room), let theirs = peers.entries[key.peer]?.rooms[key.room] else { return false }
            return !(rooms[key.room]?.seen ?? VersionVector()).dominates(theirs)
        }
    }

    /// Brings `historyRooms` up to date with the rooms changed since the last call.
    mutating func refreshHistoryRooms() {
        for roomID in rooms.takeChanged(for: .history) {
            if rooms[roomID]?.messages.oldest != nil { historyRooms.insert(roomID) } else { historyRooms.remove(roomID) }
        }
    }
}
