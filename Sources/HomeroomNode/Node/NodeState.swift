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
    /// The same for peer messages, sequenced under the node's private origin.
    var privateSequences: [String: UInt64] = [:]
    /// Per room, messages that left this node's history: a retried send of one is
    /// answered DUPLICATE rather than stored again (local, bounded, not replicated).
    var evicted: [String: EvictedKeys] = [:]
    /// Per room, when this node last trimmed the history by age (monotonic ms).
    var lastTrim: [String: UInt64] = [:]
    /// Per room, the sessions hosted here whose clients renew them by syncing: the
    /// user and when the last sync came (monotonic ms). See `expireIdleSessions`.
    var leases: [String: [SessionID: SessionLease]] = [:]
    /// When a peer's undecodable repair patch was last logged, per (peer, room).
    var decodeFailureLogged: [SyncKey: UInt64] = [:]
    /// (peer, room) pairs to pull from at the next tick.
    var pendingSyncs: Set<SyncKey> = []
    /// Peers with a pull in flight (`ClusterNode.runPendingSyncs`): one at a time each.
    var pulling: Set<ReplicaID> = []
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
    /// Rooms whose log grew since their last snapshot.
    var dirtyRooms: [String: Int] = [:]
    /// Per room, users whose sessions changed since the presence loop last checked
    /// whether this node should fold the ones it started (`RoomState.sessionFold`).
    var foldCandidates: [String: Set<UserID>] = [:]
    /// Users with sessions over whose fold is not due yet (fewer than the threshold,
    /// ended too recently): looked at again every second or so.
    var foldLater: [String: Set<UserID>] = [:]
    /// The operators' room listing and when it was made (monotonic ms): made at most
    /// once a second, however many listing hellos arrive (`ClusterNode.roomSummaries`).
    var roomListing: (madeAtMillis: UInt64, rooms: [ClusterNode.RoomSummary])?
    /// Per room, users with rewards this node sequenced that are not folded yet
    /// (`RoomState.rewardFoldPlan`); those whose fold is not due stay.
    var rewardFoldCandidates: [String: Set<UserID>] = [:]

    /// Per closed room, the epoch of its topic keys: raised when someone is kicked,
    /// banned or revoked, so their keys open nothing published afterwards.
    var topicEpochs: [String: UInt64] = [:]
    /// Rooms whose topic keys rotated since the metric was last counted.
    var topicRotations: UInt64 = 0
    /// Per closed room, the earliest expiry (Unix seconds) of the tokens that were given
    /// the current epoch's keys: once it passes, the keys rotate, so an expired token's
    /// keys open nothing published after its expiry (the members' next sync brings the new
    /// keys; the expired token's sync is refused).
    var keyExpiries: [String: Int64] = [:]

    /// Whether this node seals client topics (it requires tokens): only then are epochs kept.
    var sealsTopics = false

    mutating func rotateTopicKeys(room: String) {
        guard sealsTopics else { return }
        topicEpochs[room, default: 0] += 1
        topicRotations += 1
        keyExpiries[room] = nil
    }

    /// Rotates the keys of every room whose earliest holder's token expired by `nowSeconds`.
    mutating func rotateExpiredKeys(nowSeconds: Int64) -> Int {
        let due = keyExpiries.filter { $0.value <= nowSeconds }.map(\.key)
        for room in due { rotateTopicKeys(room: room) }
        return due.count
    }

    struct SessionLease {
        var user: UserID
        var renewedMillis: UInt64
    }

    struct SyncKey: Hashable {
        var peer: ReplicaID
        var room: String
    }

    var limiter = RateLimiter(messagesPerSecond: 60, bytesPerSecond: 256 * 1024)
    /// Joins (new sessions) per user: each costs a snapshot, and a session record.
    var joinLimiter = RateLimiter(messagesPerSecond: 20, bytesPerSecond: 1 << 30, burstSeconds: 3)
    /// Client hellos per REP connection (they need no token, so no user to count).
    var helloLimiter = RateLimiter(messagesPerSecond: 20, bytesPerSecond: 1 << 30, burstSeconds: 3)
    /// Syncs and digests per user and room, and the bytes their replies carry.
    var syncLimiter = RateLimiter(messagesPerSecond: 20, bytesPerSecond: 8 << 20, burstSeconds: 3)

    /// Notes the users whose sessions these deltas touched (fold candidates).
    mutating func noteSessions(room: String, _ deltas: [Delta]) {
        for delta in deltas {
            switch delta.operation {
            case let .joinSession(user, _, _, _, _, _), let .leaveSession(user, _, _):
                foldCandidates[room, default: []].insert(user)
            case let .kick(user), let .ban(user):
                foldCandidates[room, default: []].insert(user)
                rotateTopicKeys(room: room)
            default:
                break
            }
        }
    }

    /// Notes the users of a merged patch that carry sessions this node started (only
    /// those, or kicked and banned ones, can need a fold by this node; a 100,000-user
    /// snapshot of others' sessions notes none).
    mutating func noteSessions(room: String, patch: RoomState) {
        let own = sequencer.replica
        for (user, record) in patch.users
        where record.sessions.contains(where: { $0.started.clock.replica == own }) || record.kicked != .origin || record.isBanned {
            foldCandidates[room, default: []].insert(user)
        }
    }

    init(replica: ReplicaID, maxClockDriftMillis: UInt64) {
        sequencer = Sequencer(replica: replica, maxForwardDriftMillis: maxClockDriftMillis)
    }

    /// Stamps a write for a room without committing the sequence number: the caller
    /// stores the delta first, then calls `commit`.
    /// Peer messages are sequenced under the node's private origin (docs/MESSAGING.md),
    /// so clients that may not see them find no gap in the node's public sequence.
    func stamp(room: String, _ write: Write, nowMillis: UInt64) -> (Delta, Sequencer) {
        var sequencer = self.sequencer
        if write.operation.peerRecipient != nil {
            let delta = sequencer.stamp(write, origin: Self.privateOrigin(of: sequencer.replica),
                                        sequence: (privateSequences[room] ?? 0) + 1, nowMillis: nowMillis)
            return (delta, sequencer)
        }
        let delta = sequencer.stamp(write, sequence: (roomSequences[room] ?? 0) + 1, nowMillis: nowMillis)
        return (delta, sequencer)
    }

    mutating func commit(room: String, _ delta: Delta, _ sequencer: Sequencer) {
        self.sequencer = sequencer
        if delta.origin == sequencer.replica {
            roomSequences[room] = delta.sequence
        } else {
            privateSequences[room] = delta.sequence
        }
    }

    /// A node's private origin: its id with the top bit flipped.
    static func privateOrigin(of replica: ReplicaID) -> ReplicaID { replica.privateForm }

    /// Remembers the messages a change set removed from a room's history.
    mutating func note(room: String, _ messaging: [MessagingChange]) {
        for case let .messagesRemoved(keys, _) in messaging {
            evicted[room, default: EvictedKeys()].insert(keys)
        }
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

/// A bounded set of message keys, oldest forgotten first.
struct EvictedKeys {
    private var keys: Set<MessageKey> = []
    private var order: [MessageKey] = []
    static let capacity = 20_000

    func contains(_ key: MessageKey) -> Bool { keys.contains(key) }

    mutating func insert(_ new: [MessageKey]) {
        for key in new where keys.insert(key).inserted { order.append(key) }
        if order.count > Self.capacity {
            let drop = order.count - Self.capacity
            for key in order.prefix(drop) { keys.remove(key) }
            order.removeFirst(drop)
        }
    }
}
