import HomeroomCore

/// What this node pulls from whom, and when: the pulls it wants (a gap in a peer's
/// deltas, a peer's view showing more), the gaps it asks again at every tick until they
/// are closed, and at most one batch of pulls in flight per peer (a peer that answers
/// slowly or not at all holds up only its own pulls). The shell runs each batch off the
/// tick and says how it ended.
public struct PullSchedule: Sendable, Equatable {
    /// One room to pull from one peer, or the peer's complete room list (`completeList`).
    public struct Key: Hashable, Sendable, Comparable {
        public var peer: ReplicaID
        public var room: String

        /// Not a room (no room id is empty): the peer's complete room list, asked for when
        /// its heartbeats' hash differs from this node's view of its rooms. Sorted first.
        public static let completeList = ""

        public init(peer: ReplicaID, room: String) {
            self.peer = peer
            self.room = room
        }

        public static func < (a: Key, b: Key) -> Bool { (a.room, a.peer) < (b.room, b.peer) }
    }

    /// Pulls to start at the next tick.
    public private(set) var pending: Set<Key> = []
    /// Gaps a peer's view showed, queued again at every tick until this node holds what
    /// that view shows (or the peer is forgotten). At most one per peer and room.
    public private(set) var openGaps: Set<Key> = []
    /// Peers with a batch in flight.
    public private(set) var pulling: Set<ReplicaID> = []

    public init() {}

    /// A pull to make once (a gap in a peer's deltas; its complete room list).
    public mutating func want(_ key: Key) { pending.insert(key) }

    /// A pull to make, and to make again at every tick until the gap is closed.
    public mutating func wantUntilClosed(_ key: Key) {
        pending.insert(key)
        openGaps.insert(key)
    }

    public func isPulling(_ peer: ReplicaID) -> Bool { pulling.contains(peer) }

    /// Queues every open gap `isOpen` still finds open, and forgets the others.
    public mutating func requeueOpenGaps(isOpen: (Key) -> Bool) {
        for key in openGaps {
            if isOpen(key) { pending.insert(key) } else { openGaps.remove(key) }
        }
    }

    /// The batches to start now: per peer with no batch in flight, its wanted pulls in
    /// order. A peer `reachable` rejects (cut off, down) loses its pulls: its digests ask
    /// again once it is back. The peers given a batch are marked pulling.
    public mutating func startBatches(reachable: (ReplicaID) -> Bool) -> [(peer: ReplicaID, keys: [Key])] {
        var byPeer: [ReplicaID: [Key]] = [:]
        for key in pending where !pulling.contains(key.peer) {
            pending.remove(key)
            if reachable(key.peer) { byPeer[key.peer, default: []].append(key) }
        }
        pulling.formUnion(byPeer.keys)
        return byPeer.map { (peer: $0.key, keys: $0.value.sorted()) }.sorted { $0.peer < $1.peer }
    }

    /// A peer's batch ended; `unanswered` (the pull that got no answer and those after it)
    /// are wanted again.
    public mutating func finished(peer: ReplicaID, unanswered: [Key] = []) {
        pulling.remove(peer)
        pending.formUnion(unanswered)
    }

    /// Forgets every pull and gap `matches` selects (a room handed off; rooms no longer owned).
    public mutating func forget(where matches: (Key) -> Bool) {
        openGaps = openGaps.filter { !matches($0) }
        pending = pending.filter { !matches($0) }
    }
}
