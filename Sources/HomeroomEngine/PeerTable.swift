import HomeroomCore

/// What a node knows of the other nodes, and its membership rules: who is heard, learned
/// of second-hand, expected (a writer its rooms name), forgotten (down past the
/// permanent-down period, or an older store of a live node); addresses, incarnations,
/// when it last heard from each, and the version vectors they last advertised per room.
/// Pure: the shell turns wire messages into `PeerHeartbeat` and `ListedPeer` and back.
public struct PeerTable: Sendable {
    public init() {}

    public struct Entry: Sendable {
        public var node: ReplicaID
        /// Its node name (`--name`), from its own heartbeats or a peer's list; empty while unknown.
        public var name = ""
        public var address: String
        public var publishAddress: String
        /// Its node-only PUB socket, if it has one: where this node subscribes.
        public var clusterPublishAddress = ""
        /// Its publish sockets serve streams (its last heartbeat said so): this node then
        /// follows it through a node stream, which carries only the rooms it owns or holds.
        public var roomStreams = false
        /// Heard, suspect or down: the engine's failure detection (`PeerLiveness`).
        public var liveness: PeerLiveness
        /// Its rooms as its heartbeats announced them (`PeerRoomView`).
        public var view = PeerRoomView()
        /// Whether its last partial heartbeat's hash differed from `view`: this node then
        /// asks it for the complete list (`ClusterNode.heard`).
        public var viewMismatched = false
        public var rooms: [String: VersionVector] { view.rooms }
        public var connected = false
        /// This node's SUB dialer to the peer's publish address, and that address: one per
        /// peer, so a peer that comes back keeps it rather than getting a second one.
        public var subscriberDialer: UInt64?
        public var dialedAddress = ""
        /// Whether that dialer follows a node stream (`roomStreams` when it was dialed).
        public var dialedStream = false
        /// When its links were last replaced while it was down (monotonic ms).
        public var linksRenewedMillis: UInt64 = 0
        /// Per room, its heartbeats as reward folds need them (`RewardCheckpoint`).
        public var rewardCheckpoints: [String: RewardCheckpoint] = [:]
        /// Its last heartbeat (or a peer's list) said it is draining: placement leaves it out.
        public var draining = false
        /// When it last answered a probe itself (monotonic ms): its REQ link works, so a
        /// renewal leaves that link alone (replacing it would cut the next probe short).
        public var directAnswerMillis: UInt64 = 0

        /// Where this node subscribes to it: its node-only PUB socket if it has one.
        public var subscribeAddress: String { clusterPublishAddress.isEmpty ? publishAddress : clusterPublishAddress }

        public var incarnation: UInt64 { liveness.incarnation }
        public var lastHeardMillis: UInt64 { liveness.lastHeardMillis }
        /// Whether this node has heard from it itself (not only of it, from another's list).
        public var heardDirectly: Bool { liveness.heardDirectly }
        public var status: PeerHealth { liveness.health }
    }

    /// What to replace for one peer that is silent (suspect or down) (see `ClusterNode.renewLinksOfSilentPeers`).
    public struct Renewal: Sendable {
        public var node: ReplicaID
        /// The SUB dialer to connect afresh (it dials the peer's current address).
        public var dialer: UInt64?
        /// A dialer to remove: a live entry owns its address (a node that restarted in
        /// memory under a new id), or the peer now publishes elsewhere.
        public var staleDialer: UInt64?
        /// Where to subscribe anew (no dialer, or one to an old address); nil when a live
        /// entry owns that address.
        public var publishAddress: String?
        /// The REQ link to reconnect; nil when a live entry shares it.
        public var requestAddress: String?
    }

    public private(set) var entries: [ReplicaID: Entry] = [:]
    /// Nodes forgotten (down past the permanent-down period, or older stores of a live
    /// node) since this node started: no longer expected, until heard again.
    public private(set) var forgotten: Set<ReplicaID> = []
    /// Seeds with a hello in flight (each on its own thread): one at a time per seed.
    public private(set) var greeting: Set<String> = []

    /// Marks these seeds as being greeted; returns those that were not already.
    public mutating func startGreeting(_ seeds: [String]) -> [String] {
        seeds.filter { greeting.insert($0).inserted }
    }

    public mutating func finishGreeting(_ seed: String) { greeting.remove(seed) }

    /// Records a heartbeat (or hello) from a node; returns true when the node is new
    /// or came back (so the caller connects to it).
    public mutating func heard(_ heartbeat: PeerHeartbeat, nowMillis: UInt64) -> Bool {
        forgotten.remove(heartbeat.node)
        dropExpectedPrivateForm(of: heartbeat.node)
        if var entry = entries[heartbeat.node] {
            // A node back on other addresses (a restart on new ports) is connected anew.
            let moved = entry.address != heartbeat.address
                || (!heartbeat.publishAddress.isEmpty && entry.publishAddress != heartbeat.publishAddress)
                || entry.clusterPublishAddress != heartbeat.clusterPublishAddress
                || entry.roomStreams != heartbeat.roomStreams
            entry.roomStreams = heartbeat.roomStreams
            entry.address = heartbeat.address
            if !heartbeat.publishAddress.isEmpty { entry.publishAddress = heartbeat.publishAddress }
            entry.clusterPublishAddress = heartbeat.clusterPublishAddress
            let cameBack = entry.liveness.heard(incarnation: heartbeat.incarnation, nowMillis: nowMillis)
            if !heartbeat.nodeName.isEmpty { entry.name = heartbeat.nodeName }
            entry.draining = heartbeat.draining
            entry.noteRooms(heartbeat)
            entries[heartbeat.node] = entry
            return cameBack || moved || !entry.connected
        }
        var entry = Entry(node: heartbeat.node, address: heartbeat.address, publishAddress: heartbeat.publishAddress,
                          clusterPublishAddress: heartbeat.clusterPublishAddress,
                          liveness: .heard(incarnation: heartbeat.incarnation, nowMillis: nowMillis))
        entry.name = heartbeat.nodeName
        entry.draining = heartbeat.draining
        entry.roomStreams = heartbeat.roomStreams
        entry.noteRooms(heartbeat)
        entries[heartbeat.node] = entry
        return true
    }

    /// Adds the nodes this node's rooms name as writers and that it does not know yet
    /// (`NodeEngine.writersToHearFrom`), without addresses: reward folds wait for them
    /// until they are heard or forgotten (`PeerLiveness.expected`).
    public mutating func expect(_ writers: Set<ReplicaID>, nowMillis: UInt64) {
        // Not an origin that is the private form of a node known already (see `writersToHearFrom`).
        for node in writers.sorted() where entries[node] == nil && !forgotten.contains(node) && !isKnown(node.privateForm) {
            entries[node] = Entry(node: node, address: "", publishAddress: "", liveness: .expected(nowMillis: nowMillis))
        }
    }

    /// Whether `node` is in the table other than as an expected origin.
    public func isKnown(_ node: ReplicaID) -> Bool { entries[node].map { !$0.liveness.isExpectedOnly } ?? false }

    /// A node became known: an expected origin that is its private form is dropped (its
    /// writes come with the node's).
    private mutating func dropExpectedPrivateForm(of node: ReplicaID) {
        if entries[node.privateForm]?.liveness.isExpectedOnly == true { entries.removeValue(forKey: node.privateForm) }
    }

    /// Learns of a node second-hand (from another's peer list): never marks it alive.
    public mutating func learn(_ peer: ListedPeer, nowMillis: UInt64) -> Bool {
        if entries[peer.node]?.name.isEmpty == true, !peer.nodeName.isEmpty { entries[peer.node]!.name = peer.nodeName }
        // Heard only second-hand: its draining as the lister last heard it.
        if let known = entries[peer.node], !known.heardDirectly, known.draining != peer.draining { entries[peer.node]!.draining = peer.draining }
        // Known already (not only expected): nothing to learn; before the scan below, as
        // every heartbeat lists every peer.
        if let known = entries[peer.node], !known.liveness.isExpectedOnly { return false }
        // An expected node (no address yet) takes the addresses another node lists for it.
        guard peer.status != .dead, !peer.publishAddress.isEmpty else { return false }
        // An older store of a node whose newer store is known is gone: not met again.
        guard !entries.values.contains(where: { Self.supersedes($0.node, $0.name, peer.node, peer.nodeName) }) else { return false }
        if let expected = entries[peer.node], expected.liveness.isExpectedOnly {
            var entry = expected
            entry.address = peer.address
            entry.publishAddress = peer.publishAddress
            entry.clusterPublishAddress = peer.clusterPublishAddress
            entry.liveness.learned(incarnation: peer.incarnation, nowMillis: nowMillis)
            entries[peer.node] = entry
            dropExpectedPrivateForm(of: peer.node)
            return true
        }
        dropExpectedPrivateForm(of: peer.node)
        entries[peer.node] = Entry(node: peer.node, name: peer.nodeName, address: peer.address, publishAddress: peer.publishAddress,
                                   clusterPublishAddress: peer.clusterPublishAddress,
                                   liveness: .learned(incarnation: peer.incarnation, nowMillis: nowMillis))
        entries[peer.node]!.draining = peer.draining
        return true
    }

    public mutating func markConnected(_ node: ReplicaID) { entries[node]?.connected = true }

    /// Records the SUB dialer made for a peer; returns the one it replaces, to be closed.
    public mutating func setDialer(_ node: ReplicaID, _ dialer: UInt64, address: String, stream: Bool = false) -> UInt64? {
        guard entries[node] != nil else { return dialer }
        let previous = entries[node]!.subscriberDialer
        entries[node]!.subscriberDialer = dialer
        entries[node]!.dialedAddress = address
        entries[node]!.dialedStream = stream
        return previous
    }

    /// Peers not heard for `silentForMillis` or more (suspect or down) whose links were
    /// last replaced `everyMillis` ago or more (or never), marked as renewed now.
    public mutating func renewalsDue(nowMillis: UInt64, everyMillis: UInt64, silentForMillis: UInt64) -> [Renewal] {
        // Each address belongs to one entry: a live one if any, else the dead one heard
        // last (older ids of a node that restarted in memory leave it to the newest).
        func owners(_ address: (Entry) -> String) -> [String: ReplicaID] {
            var owner: [String: Entry] = [:]
            for entry in entries.values where !address(entry).isEmpty {
                let key = address(entry)
                guard let current = owner[key] else { owner[key] = entry; continue }
                let better = (entry.status != .dead) != (current.status != .dead)
                    ? entry.status != .dead
                    : (entry.lastHeardMillis, entry.node) > (current.lastHeardMillis, current.node)
                if better { owner[key] = entry }
            }
            return owner.mapValues(\.node)
        }
        let publishOwners = owners(\.subscribeAddress)
        let requestOwners = owners(\.address)
        var due: [Renewal] = []
        for (node, entry) in entries where entry.status != .alive && nowMillis &- entry.lastHeardMillis >= silentForMillis
            && nowMillis &- entry.linksRenewedMillis >= everyMillis {
            let publish = entry.subscribeAddress
            let owned = !publish.isEmpty && publishOwners[publish] == node
            // The REQ link answered a probe lately: it works, and is left alone.
            let linkWorks = PeerLiveness.elapsed(since: entry.directAnswerMillis, now: nowMillis) < everyMillis * 2 && entry.directAnswerMillis != 0
            let request = entry.address.isEmpty || requestOwners[entry.address] != node || linkWorks ? nil : entry.address
            let current = entry.subscriberDialer != nil && entry.dialedAddress == publish
            // An entry whose addresses another entry owns (a node that restarted in memory
            // under a new id) has nothing to renew once its dialer is gone.
            if !owned && entry.subscriberDialer == nil && request == nil { continue }
            due.append(Renewal(node: node, dialer: owned && current ? entry.subscriberDialer : nil,
                               staleDialer: owned && current ? nil : entry.subscriberDialer,
                               publishAddress: owned && !current ? publish : nil,
                               requestAddress: request))
            entries[node]!.linksRenewedMillis = nowMillis
            if !(owned && current) {
                entries[node]!.subscriberDialer = nil
                entries[node]!.dialedAddress = ""
            }
        }
        return due.sorted { $0.node < $1.node }
    }

    /// Removes the nodes dead and silent for `downForMillis` or more (nil: never), and
    /// expected origins never heard for `expectedForMillis`, and returns them (their
    /// dialers and links are the caller's to close).
    public mutating func forget(downForMillis: UInt64?, expectedForMillis: UInt64, nowMillis: UInt64) -> [Entry] {
        let gone = entries.values.filter { entry in
            guard entry.status == .dead else { return false }
            let silent = nowMillis &- entry.lastHeardMillis
            return entry.liveness.isExpectedOnly ? silent >= expectedForMillis : downForMillis.map { silent >= $0 } ?? false
        }
        for entry in gone {
            entries.removeValue(forKey: entry.node)
            forgotten.insert(entry.node)
        }
        return gone.sorted { $0.node < $1.node }
    }

    /// Removes the entries of older stores of a node name whose newest store is this
    /// node (`own`) or a live peer (see `ReplicaID.supersedes`): that node is the name
    /// now, so they are waited for by no fold or retirement, and dialled no more.
    public mutating func forgetSuperseded(own: ReplicaID, name: String) -> [Entry] {
        let live = entries.values.filter { $0.status == .alive }.map { ($0.node, $0.name) } + [(own, name)]
        let gone = entries.values.filter { entry in
            entry.status != .alive && live.contains { Self.supersedes($0.0, $0.1, entry.node, entry.name) }
        }
        for entry in gone {
            entries.removeValue(forKey: entry.node)
            forgotten.insert(entry.node)
        }
        return gone.sorted { $0.node < $1.node }
    }

    /// `newer` is a later store of `older`'s node name. Names, where both are known, must
    /// match: two names may share a name hash (`nameCollision`).
    public static func supersedes(_ newer: ReplicaID, _ newerName: String, _ older: ReplicaID, _ olderName: String) -> Bool {
        newer.supersedes(older) && (newerName.isEmpty || olderName.isEmpty || newerName == olderName)
    }

    /// A peer of another node name whose replica ids carry this node's name hash
    /// (`ReplicaID.nameHash(of:)`): its ids would look like older stores of this name,
    /// so nothing may be retired while it is known.
    public func nameCollision(own: ReplicaID, name: String) -> Entry? {
        guard own.isStructured else { return nil }
        return entries.values.sorted { $0.node < $1.node }.first {
            !$0.name.isEmpty && $0.name != name && ReplicaID.nameHash(of: $0.name) == own.nameHash
        }
    }

    /// Moves silent nodes to suspect, then dead; returns the nodes newly dead.
    public mutating func sweep(nowMillis: UInt64, suspectMillis: UInt64, downMillis: UInt64) -> [Entry] {
        var died: [Entry] = []
        for node in entries.keys.sorted() where entries[node]!.liveness.sweep(nowMillis: nowMillis, suspectMillis: suspectMillis, downMillis: downMillis) {
            died.append(entries[node]!)
        }
        return died
    }

    /// A probe found `node` alive at `incarnation` as of `atMillis` (`IndirectProber`):
    /// it is not declared down for the down period from then. True when that moved its
    /// last sign of life.
    /// `unheardLimitMillis`: see `PeerLiveness.vouched`. An answer of the peer itself
    /// (`direct`) also shows that the REQ link to it works (`Entry.directAnswerMillis`).
    public mutating func vouch(_ node: ReplicaID, incarnation: UInt64, atMillis: UInt64, unheardLimitMillis: UInt64?, direct: Bool) -> Bool {
        guard let before = entries[node]?.liveness.lastEvidenceMillis else { return false }
        entries[node]!.liveness.vouched(incarnation: incarnation, nowMillis: atMillis, unheardLimitMillis: unheardLimitMillis)
        let moved = entries[node]!.liveness.lastEvidenceMillis != before
        if moved && direct { entries[node]!.directAnswerMillis = atMillis }
        return moved
    }

    /// What this node answers when asked whether `node` is alive: only from its own
    /// hearing (heard within the suspect period, and how long ago), never from another
    /// node's word.
    public func hearing(of node: ReplicaID, nowMillis: UInt64, suspectMillis: UInt64) -> Hearing {
        guard let entry = entries[node], entry.heardDirectly else { return Hearing(alive: false, incarnation: 0, agoMillis: 0) }
        let ago = PeerLiveness.elapsed(since: entry.lastHeardMillis, now: nowMillis)
        return Hearing(alive: entry.liveness.health != .dead && ago < suspectMillis, incarnation: entry.incarnation,
                       agoMillis: min(ago, suspectMillis))
    }

    /// What this node heard itself of a node (`hearing(of:nowMillis:suspectMillis:)`).
    public struct Hearing: Equatable, Sendable {
        public var alive: Bool
        public var incarnation: UInt64
        public var agoMillis: UInt64
    }

    /// Marks a node dead at once (it said goodbye).
    public mutating func markDead(_ node: ReplicaID) -> Entry? {
        guard entries[node]?.liveness.markDead() == true else { return nil }
        return entries[node]
    }

    /// The time before which this node holds every copy of every reward of `room` that
    /// will ever exist, or nil while some known peer has not confirmed a heartbeat for
    /// it: every peer in the table counts, down ones included (they may come back with
    /// writes); a peer forgotten after the permanent-down period no longer does.
    /// `seen` is this node's version vector of the room; `nowMillis` its own clock;
    /// `driftMillis` how far other nodes' clocks may lag it (`--max-clock-drift-ms`).
    public mutating func rewardsCompleteBefore(room: String, seen: VersionVector, nowMillis: UInt64, windowMillis: UInt64, driftMillis: UInt64) -> UInt64? {
        // An older store of a node whose newer store is known makes no more copies: its
        // writes are all in (a retirement waits for that), and it is forgotten soon.
        let counted = entries.keys.filter { node in !entries.values.contains { Self.supersedes($0.node, $0.name, node, entries[node]!.name) } }
        var checkpoints = Dictionary(uniqueKeysWithValues: counted.map { ($0, entries[$0]!.checkpoint(room: room)) })
        let before = RewardCheckpoint.completeBefore(peers: &checkpoints, seen: seen, nowMillis: nowMillis, windowMillis: windowMillis,
                                                     driftMillis: driftMillis)
        for (node, checkpoint) in checkpoints { entries[node]!.rewardCheckpoints[room] = checkpoint }
        return before
    }

    public var alive: [Entry] { entries.values.filter { $0.status != .dead }.sorted { $0.node < $1.node } }

    /// Every peer as this node lists it in its heartbeats.
    public var listed: [ListedPeer] {
        entries.values.sorted { $0.node < $1.node }.map {
            ListedPeer(node: $0.node, address: $0.address, incarnation: $0.incarnation, status: $0.status,
                       publishAddress: $0.publishAddress, clusterPublishAddress: $0.clusterPublishAddress,
                       nodeName: $0.name, draining: $0.draining)
        }
    }
}

extension PeerTable.Entry {
    /// Its rooms and reward checkpoints, from one of its heartbeats (or hellos).
    public mutating func noteRooms(_ heartbeat: PeerHeartbeat) {
        let digests = heartbeat.rooms
        if heartbeat.roomsPartial {
            viewMismatched = !view.apply(changes: digests, senderHash: heartbeat.roomsHash, sentAtMillis: heartbeat.sentAtMillis)
        } else {
            view.replace(with: digests, sentAtMillis: heartbeat.sentAtMillis)
            viewMismatched = false
        }
        noteCheckpoints(heartbeat)
    }

    /// Its reward checkpoint for `room`. With none waiting, a view checked against one of
    /// its heartbeats (`PeerRoomView.verifiedAtMillis`) is a mark of that heartbeat for
    /// every room, listed or not: the view then holds exactly its rooms at that time.
    public func checkpoint(room: String) -> RewardCheckpoint {
        var checkpoint = rewardCheckpoints[room] ?? RewardCheckpoint()
        if checkpoint.pending == nil, let verified = view.verifiedAtMillis, verified > (checkpoint.confirmed?.sentAtMillis ?? 0) {
            checkpoint.heard(RewardCheckpoint.Mark(sentAtMillis: verified, sequence: view.rooms[room]?.contiguous(node) ?? 0))
        }
        return checkpoint
    }

    public mutating func noteCheckpoints(_ heartbeat: PeerHeartbeat) {
        guard heartbeat.sentAtMillis != 0 else { return }
        for room in heartbeat.rooms {
            let mark = RewardCheckpoint.Mark(sentAtMillis: heartbeat.sentAtMillis, sequence: room.seen.contiguous(heartbeat.node))
            rewardCheckpoints[room.roomID, default: RewardCheckpoint()].heard(mark)
        }
    }
}

/// A heartbeat (or hello) as the membership rules read it.
public struct PeerHeartbeat: Sendable {
    public var node: ReplicaID
    public var incarnation: UInt64
    public var nodeName: String
    public var address: String
    public var publishAddress: String
    public var clusterPublishAddress: String
    public var draining: Bool
    /// Its publish sockets serve streams (`Heartbeat.room_streams`).
    public var roomStreams = false
    /// Its rooms' version vectors: every room, or only those changed lately (`roomsPartial`).
    public var rooms: [(roomID: String, seen: VersionVector)]
    public var roomsPartial: Bool
    public var roomsHash: UInt64
    public var sentAtMillis: UInt64

    public init(node: ReplicaID, incarnation: UInt64, nodeName: String = "", address: String, publishAddress: String,
                clusterPublishAddress: String = "", draining: Bool = false, rooms: [(roomID: String, seen: VersionVector)] = [],
                roomsPartial: Bool = false, roomsHash: UInt64 = 0, sentAtMillis: UInt64 = 0) {
        self.node = node
        self.incarnation = incarnation
        self.nodeName = nodeName
        self.address = address
        self.publishAddress = publishAddress
        self.clusterPublishAddress = clusterPublishAddress
        self.draining = draining
        self.rooms = rooms
        self.roomsPartial = roomsPartial
        self.roomsHash = roomsHash
        self.sentAtMillis = sentAtMillis
    }
}

/// A peer as another node's heartbeat lists it (second-hand).
public struct ListedPeer: Equatable, Sendable {
    public var node: ReplicaID
    public var address: String
    public var incarnation: UInt64
    public var status: PeerHealth
    public var publishAddress: String
    public var clusterPublishAddress: String
    public var nodeName: String
    public var draining: Bool

    public init(node: ReplicaID, address: String, incarnation: UInt64, status: PeerHealth, publishAddress: String,
                clusterPublishAddress: String = "", nodeName: String = "", draining: Bool = false) {
        self.node = node
        self.address = address
        self.incarnation = incarnation
        self.status = status
        self.publishAddress = publishAddress
        self.clusterPublishAddress = clusterPublishAddress
        self.nodeName = nodeName
        self.draining = draining
    }
}
