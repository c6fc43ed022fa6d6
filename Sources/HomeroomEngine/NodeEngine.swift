import HomeroomCore

/// A node's policy, pure: which client writes it admits and how it numbers them, what it
/// takes from other nodes' deltas and repair patches, and where its sequence numbers
/// continue after a restart. No I/O, no threads, no clock reads: every input comes with
/// the time, and every answer says what the shell must do (store, then commit; publish;
/// pull). `ClusterNode` is the shell that carries it out; the seeded simulation
/// (`HomeroomSimulation`) drives this same engine, so its schedules test the code that runs.
///
/// One write pipeline for every writer (clients, the node's own system writes):
/// `decide` (or `stampSystemWrite`) → the shell stores the delta → `commit`.
public struct NodeEngine: Sendable {
    public let policy: EnginePolicy
    /// The rooms, noting which changed (gossip announces only those: `OwnRoomDigest`).
    public var rooms: RoomTable
    public internal(set) var sequencer: Sequencer
    /// The last sequence number this node gave a delta, per room.
    public internal(set) var roomSequences: [String: UInt64] = [:]
    /// The same for peer messages, sequenced under the node's private origin.
    public internal(set) var privateSequences: [String: UInt64] = [:]
    /// Per room, messages that left this node's history (a retried send is a duplicate).
    public internal(set) var evicted: [String: EvictedKeys] = [:]
    /// Rooms whose store missed a remote delta or patch since their last snapshot
    /// (`NodeEngine+Store`), each with the number of its latest miss: no patch is
    /// appended there until a snapshot taken after that miss is stored.
    public internal(set) var storeBehind: [String: UInt64] = [:]
    /// How many store misses this engine has counted (numbers them for `storeBehind`).
    public internal(set) var storeMisses: UInt64 = 0
    /// Per room, users whose sessions changed since the last fold pass (`NodeEngine+Lifetime`).
    public internal(set) var foldCandidates: [String: Set<UserID>] = [:]
    /// Users with sessions over whose fold was not due yet: looked at again now and then.
    public internal(set) var foldLater: [String: Set<UserID>] = [:]
    /// Per room, users with rewards this node sequenced that are not folded yet.
    public internal(set) var rewardFoldCandidates: [String: Set<UserID>] = [:]
    /// Per room, the latest incarnation of this node it marks dead (`refutation`).
    public internal(set) var deadMarks: [String: UInt64] = [:]
    /// Rooms whose last look found orphaned copies (`orphanedCopies`).
    public internal(set) var roomsWithOrphans: Set<String> = []
    /// This node's incarnation and when it began (wall ms): `liveIncarnation(_:sinceMillis:)`.
    public internal(set) var incarnation: UInt64 = 0
    public internal(set) var incarnationSinceMillis: UInt64 = 0
    /// Per room, this node's incarnation before its boot, until a `replica_down` marks it
    /// dead there (`endEarlierIncarnation`).
    public internal(set) var earlierIncarnationsToMark: [String: UInt64] = [:]
    /// Per room, the sessions this node hosts that hold a lease (`NodeEngine+Leases`).
    public internal(set) var leases: [String: [SessionID: SessionLease]] = [:]
    /// Which rooms' logs to fold into snapshots, and when (the shell counts its appends here).
    public var compactions = CompactionSchedule()
    /// Closed rooms' topic key epochs: kicks and bans applied here rotate them.
    public var topicKeys = TopicKeyEpochs(seals: false)
    /// Rate limits on what clients ask (`policy.rates`).
    public var limits: AdmissionLimits
    /// Per room, when the reward decided there and not yet committed was decided: it is
    /// being stored, with the node's lock free (`storing`, `checkpointMillis`).
    public internal(set) var rewardsInFlight: [String: UInt64] = [:]
    /// Rooms removed after their class closed (`NodeEngine+ClosedRooms`): never opened again.
    public var tombstones = ClosedRoomTombstones()

    /// An engine over the rooms a store holds: numbering continues above everything this
    /// replica id already gave out in them, so a restart never reuses a sequence number,
    /// and the clock above every stamp it wrote, so it never stamps a later write lower.
    public init(replica: ReplicaID, rooms: [String: RoomState] = [:], policy: EnginePolicy = EnginePolicy()) {
        self.policy = policy
        self.limits = AdmissionLimits(policy.rates)
        self.rooms = RoomTable(rooms)
        self.sequencer = Sequencer(replica: replica, maxForwardDriftMillis: policy.maxClockDriftMillis)
        let privateOrigin = replica.privateForm
        for (id, room) in rooms {
            roomSequences[id] = room.seen.origins[replica]?.highest ?? 0
            privateSequences[id] = room.seen.origins[privateOrigin]?.highest ?? 0
            // Nor stamp below its own earlier writes: per origin, a later write has a later stamp.
            sequencer.restore(lastSequence: 0, lastClock: room.highestClock(writtenBy: [replica, privateOrigin]))
        }
    }

    /// The same, over another engine's rooms (a restart in a test or the simulation).
    public init(replica: ReplicaID, rooms: RoomTable, policy: EnginePolicy = EnginePolicy()) {
        self.init(replica: replica, rooms: rooms.all, policy: policy)
    }

    public var replica: ReplicaID { sequencer.replica }

    /// The shell's incarnation, at boot and at each refutation: sessions of earlier ones
    /// that are dead fold once the reclaim grace has passed since `sinceMillis`.
    public mutating func liveIncarnation(_ incarnation: UInt64, sinceMillis: UInt64) {
        self.incarnation = incarnation
        incarnationSinceMillis = sinceMillis
        // Every user with sessions is a candidate again when that grace has passed.
        for (roomID, room) in rooms where !room.users.isEmpty { foldLater[roomID, default: []].formUnion(room.users.keys) }
    }

    /// Where this node numbers peer messages (docs/MESSAGING.md): its id with the top bit
    /// flipped, so clients that may not see them find no gap in the public sequence.
    public var privateOrigin: ReplicaID { sequencer.replica.privateForm }

    /// Remembers the messages a change set removed from a room's history.
    mutating func noteEvictions(room: String, _ messaging: [MessagingChange]) {
        for case let .messagesRemoved(keys, _) in messaging {
            evicted[room, default: EvictedKeys()].insert(keys)
        }
    }

    /// Numbers a write for a room without consuming the number.
    func stamp(room: String, _ write: Write, nowMillis: UInt64) -> (Delta, Sequencer) {
        var sequencer = self.sequencer
        if write.operation.peerRecipient != nil {
            let delta = sequencer.stamp(write, origin: privateOrigin, sequence: (privateSequences[room] ?? 0) + 1, nowMillis: nowMillis)
            return (delta, sequencer)
        }
        let delta = sequencer.stamp(write, sequence: (roomSequences[room] ?? 0) + 1, nowMillis: nowMillis)
        return (delta, sequencer)
    }
}
