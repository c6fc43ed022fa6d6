@preconcurrency import Glibc
import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Synchronization
import HomeroomSupport

/// A running Homeroom node: the I/O shell around Core.
///
/// Sockets:
/// - REP on `listen`: joins, acknowledged writes, sync, gossip hellos (request/reply).
/// - PUB on `publish`: per-room client streams, node delta streams, heartbeats (see `Topics`).
/// - SUB dialed to every other node's PUB: their deltas and heartbeats.
/// - REQ per peer: sync pulls and hellos.
///
/// Pub/sub drops silently; nothing relies on it. Every delta carries its origin and
/// sequence, gaps are pulled, and heartbeats carry version vectors so a node that
/// fell behind (or was on the other side of a partition) pulls a compact patch.
public final class ClusterNode: Sendable {
    public let config: NodeConfig
    public let name: String
    /// A new replica id per boot (name + incarnation), so a restarted node never
    /// reuses a sequence number another replica has already seen.
    public let replica: ReplicaID
    /// This boot's incarnation; a node that learns it was declared down while alive
    /// moves to a new one (refutation) and announces its sessions again.
    public var incarnation: UInt64 { incarnationBox.withLock { $0 } }
    let incarnationBox: Mutex<UInt64>
    public let listenAddress: String
    public let publishAddress: String
    /// Where node-to-node traffic is published: `publishAddress`, or the address of the
    /// node-only PUB socket when the config has one.
    public let clusterPublishAddress: String
    public let metrics = NodeMetrics()
    let logger: Logger

    let state: Mutex<NodeState>
    let publisher: SPPublisher
    /// The node-only PUB socket (`config.clusterPublish`), if any.
    let clusterPublisher: SPPublisher?
    /// Where node traffic (node topics, heartbeats) goes.
    var nodePublisher: SPPublisher { clusterPublisher ?? publisher }
    let replier: SPReplier
    /// The soft descriptor limit, raised to the hard one at start.
    let descriptorLimit: Int
    /// Users whose tokens are refused now (from the verifier, then the revoked file).
    let revocation: Mutex<RevocationState>
    let subscriber: SPSubscriber
    let links = Mutex<[String: SPRequester]>([:])
    let outbox = Outbox()
    let framing: ClusterFraming
    /// Seals the client topics of closed rooms (a node that requires tokens), or nil.
    let topicKeyring: TopicKeyring?
    let delayLine = DelayLine()
    /// Held through each compaction, from the copy of the room to the bookkeeping after
    /// its snapshot is stored: compactions run one at a time (`compact(room:)`).
    let compacting = Mutex<Void>(())
    /// One write in flight per room, stored outside the state lock (`carryOut`).
    let writeGates = RoomWriteGates()
    /// Which waiting requests a worker takes first (the teacher lane).
    static let teacherLane: @Sendable ([UInt8]) -> Bool = { WireLane.isTeacherControl(request: $0) }
    /// Teacher-control writes that went ahead of other requests waiting: for a worker,
    /// and at their room's write gate (the teacher lane at work; 0 with it off).
    public var teacherLaneOvertakes: Int { replier.urgentOvertakes + writeGates.overtakes.load(ordering: .relaxed) }
    /// Client where-now questions being gathered now (at most one: `handleRequest`).
    let whereNowInFlight = Atomic<Int>(0)
    /// Which client writes `TestFault.loseAcknowledgedWrites` loses (unused otherwise).
    let writeLoss = WriteLoss()
    /// Tests only: called with the room of each write the store has just taken, before it
    /// is applied (the window the room's gate guards).
    let afterStoreHook = Mutex<(@Sendable (String) -> Void)?>(nil)
    let appliedObservers = Mutex<[@Sendable (String, [Delta]) -> Void]>([])
    /// Run once a drain is over (`drain()`), and whether it is.
    let drainedHandlers = Mutex<[@Sendable () -> Void]>([])
    let drainedReported = Atomic<Bool>(false)
    private let ticker: Mutex<OSThread?> = Mutex(nil)
    private let sender: Mutex<OSThread?> = Mutex(nil)
    private let presence: Mutex<OSThread?> = Mutex(nil)
    private let http = Mutex<HTTPEndpoint?>(nil)
    /// The port /healthz and /metrics are served on, once started (0 without HTTP).
    public var httpPort: UInt16 { http.withLock { $0?.port ?? 0 } }
    let stopped = Atomic<Bool>(false)
    /// Set when a node (or client) subscribed to the node publisher: the tick sends a
    /// heartbeat within its next sleep step, not at the end of the period (ClusterNode+Cluster).
    let heartbeatWanted = Atomic<Bool>(false)

    /// The last generation given out in this process: two stores of one name made within
    /// one 10 ms step (tests restart nodes in memory) still get distinct, increasing ids.
    private static let lastGeneration = Mutex<UInt64>(0)

    /// The replica id of a new store: the name's hash and a generation from the clock
    /// (see `ReplicaID(node:generation:)`), so the newest store of a name is the one
    /// that retires the others.
    static func freshReplicaID(name: String) -> ReplicaID {
        let generation = lastGeneration.withLock { last -> UInt64 in
            last = max(last + 1, ReplicaID.generation(atMillis: WallClock.nowMillis()))
            return last
        }
        return ReplicaID(node: name, generation: generation)
    }

    /// Starts a node: opens its store (if it has a data directory), binds its
    /// sockets, then gossips with its seeds in the background.
    public init(config: NodeConfig, logger: Logger, incarnation requestedIncarnation: UInt64? = nil) throws(NodeError) {
        do { try config.validate() } catch { throw .config(error) }
        self.config = config
        self.name = config.name
        self.logger = logger.with("node", config.name)
        self.framing = ClusterFraming(key: config.clusterKey)
        self.topicKeyring = config.tokenVerifier == nil ? nil : TopicKeyring()

        // Identity: a node with a store keeps its replica id across restarts (its
        // sequence numbers continue from the store); each boot is a new incarnation.
        // A new store (a new node, or one whose store was lost or moved aside) gets a
        // replica id of its own, never the name's: a node rebuilt under an existing
        // name would otherwise number its writes from 1 again, dots the cluster has
        // already seen with other content, and its acknowledged writes would be lost.
        var store: NodeStore?
        var rooms: [String: RoomState] = [:]
        var quarantined: [String: String] = [:]
        var floors: [String: SequenceFloor] = [:]
        var tombstones: [String: UInt64] = [:]
        var storedClock: UInt64 = 0
        var previousIncarnation: UInt64?
        var incarnation = requestedIncarnation ?? WallClock.nowMillis()
        var storeReplica: ReplicaID?
        var storedReplicaLoaded = false
        if let directory = config.dataDirectory {
            do {
                try Self.makeDirectory(directory)
                // Private whatever existed before: the directory 0700, the store 0600 (its
                // -wal and -shm files take the store's mode; they are set too).
                try Self.restrict(directory, mode: 0o700)
                try Self.restrictIfPresent(directory + "/homeroom.sqlite3", mode: 0o600)
                let opened = try NodeStore(path: directory + "/homeroom.sqlite3", synchronousFull: config.synchronousFull)
                for file in ["/homeroom.sqlite3", "/homeroom.sqlite3-wal", "/homeroom.sqlite3-shm"] {
                    try Self.restrictIfPresent(directory + file, mode: 0o600)
                }
                let nameKey = Int64(bitPattern: ReplicaID(name: config.name).rawValue)
                let storedReplica = try opened.meta("replica")
                if let storedName = try opened.meta("name") {
                    if storedName != nameKey { throw NodeError.wrongDataDirectory(path: directory, name: config.name) }
                } else if let storedReplica, storedReplica != nameKey {
                    // A store from before replica ids were per store: its replica id was the name's.
                    throw NodeError.wrongDataDirectory(path: directory, name: config.name)
                }
                previousIncarnation = try opened.meta("incarnation").map { UInt64(bitPattern: $0) }
                if let previousIncarnation, incarnation <= previousIncarnation { incarnation = previousIncarnation + 1 }
                let replica = storedReplica.map { ReplicaID(UInt64(bitPattern: $0)) } ?? Self.freshReplicaID(name: config.name)
                storedReplicaLoaded = storedReplica != nil
                storeReplica = replica
                try opened.setMeta("name", nameKey)
                try opened.setMeta("replica", Int64(bitPattern: replica.rawValue))
                try opened.setMeta("incarnation", Int64(bitPattern: incarnation))
                (rooms, quarantined, storedClock) = try opened.loadRooms()
                floors = try opened.loadFloors()
                tombstones = try opened.loadTombstones()
                store = opened
            } catch let error as StoreError {
                throw .store(error)
            } catch let error as NodeError {
                throw error
            } catch {
                throw .store(StoreError(code: 1, message: "\(error)", operation: "open", path: directory))
            }
        }
        self.descriptorLimit = ProcessResources.raiseDescriptorLimit()
        self.revocation = Mutex(RevocationState(users: config.tokenVerifier?.revokedUsers ?? []))
        self.incarnationBox = Mutex(incarnation)
        let replica = storeReplica ?? Self.freshReplicaID(name: config.name)
        self.replica = replica
        // The engine numbers above everything the store holds of this replica id.
        var initial = NodeState(engine: NodeEngine(replica: replica, rooms: rooms, policy: config.enginePolicy))
        initial.engine.restore(floors: floors)
        initial.engine.restore(tombstones: tombstones)
        initial.engine.restoreClock(atLeast: storedClock)
        initial.replicas = config.replicas
        initial.roomReplicas = config.roomReplicas
        initial.prober = config.probeHelpers.map {
            IndirectProber(fanout: $0, everyMillis: max(config.heartbeatMillis * 2, 100), seed: replica.rawValue ^ incarnation)
        }
        initial.engine.liveIncarnation(incarnation, sinceMillis: UInt64(max(0, Int64(bitPattern: WallClock.nowMillis()) + config.clockSkewMillis)))
        initial.engine.topicKeys = TopicKeyEpochs(seals: config.tokenVerifier != nil)
        // Every node the stored rooms name is waited for by reward folds until heard or forgotten.
        initial.peers.expect(initial.engine.writersToHearFrom(), nowMillis: WallClock.monotonicMillis())
        initial.quarantined = quarantined
        if storedReplicaLoaded && !config.seeds.isEmpty {
            initial.peersAwaitedUntil = WallClock.monotonicMillis() + config.downMillis
        }
        initial.store = store
        self.state = Mutex(initial)
        let restoredMillis = storedClock >> HybridTimestamp.logicalBits
        if restoredMillis > UInt64(max(0, Int64(bitPattern: WallClock.nowMillis()) + config.clockSkewMillis)) + config.maxClockDriftMillis {
            // Its writes would carry readings the other nodes refuse until their clocks catch up.
            self.logger.error("this node's store holds clock readings beyond the drift limit ahead of its clock: was the clock set back, or ahead before? Its writes are refused by other nodes until their clocks pass that time",
                              ["stored_ms": "\(restoredMillis)", "now_ms": "\(WallClock.nowMillis())", "limit_ms": "\(config.maxClockDriftMillis)"])
        }
        for (room, why) in quarantined.sorted(by: { $0.key < $1.key }) {
            self.logger.error("room quarantined: its stored state does not load; this node serves every other room and refuses this one (the other nodes serve it)",
                              ["room": room, "why": why])
        }

        do {
            publisher = try SPPublisher(limits: config.transportLimits, name: "hr-pub", router: RoomStreams.follow(resource:))
            publishAddress = try publisher.listen(config.publish)
        } catch {
            throw .bind(address: config.publish, error)
        }
        if let address = config.clusterPublish {
            do {
                let socket = try SPPublisher(limits: config.transportLimits, name: "hr-cluster-pub", router: RoomStreams.follow(resource:))
                clusterPublishAddress = try socket.listen(address)
                clusterPublisher = socket
            } catch {
                publisher.close()
                throw .bind(address: address, error)
            }
        } else {
            clusterPublisher = nil
            clusterPublishAddress = publishAddress
        }
        do {
            replier = try SPReplier(limits: config.transportLimits, urgent: config.teacherLane ? Self.teacherLane : nil)
            listenAddress = try replier.listen(config.listen)
        } catch {
            clusterPublisher?.close()
            publisher.close()
            throw .bind(address: config.listen, error)
        }
        do {
            // The handler captures a box, not self, so init can finish first.
            let box = WeakNode()
            let sub = try SPSubscriber(limits: config.transportLimits, name: "hr-sub") { message in box.node?.receiveFromCluster(message) }
            sub.subscribe(Topics.nodeDeltas)
            sub.subscribe(Topics.heartbeat)
            subscriber = sub
            box.set(self)
        } catch {
            replier.close()
            clusterPublisher?.close()
            publisher.close()
            throw .bind(address: "cluster subscriber", error)
        }
        do {
            try replier.serveDeferring(workers: config.workers) { [weak self] request, connection in
                guard let self else { return .now(WireCodec.encode(Self.errorEnvelope(code: "unavailable", message: "the node is stopping"))) }
                let deferral = ReplyDeferral()
                let reply = self.handleRequest(request, connection: connection, deferral: deferral)
                if let start = deferral.start { return .later(start) }
                return .now(reply)
            }
        } catch {
            subscriber.close()
            replier.close()
            clusterPublisher?.close()
            publisher.close()
            throw .bind(address: config.listen, error)
        }
        noteEveryUserForFolding()
        let wants = WeakNode()
        wants.set(self)
        nodePublisher.whenSubscriberConnects { wants.node?.heartbeatWanted.store(true, ordering: .relaxed) }
        // Without its tick (heartbeats, leases), publisher or presence loop a node would
        // look alive and serve nothing right: it does not start at all.
        do throws(ThreadStartError) {
            let thread = try OSThread(name: "hr-tick") { [weak self] in self?.tickLoop() }
            ticker.withLock { $0 = thread }
            let publishing = try OSThread(name: "hr-publish") { [weak self] in self?.publishLoop() }
            sender.withLock { $0 = publishing }
            let watching = try OSThread(name: "hr-presence") { [weak self] in self?.presenceLoop() }
            presence.withLock { $0 = watching }
        } catch {
            stop()
            throw .thread(error.description)
        }
        let delays = WeakNode()
        delays.set(self)
        delayLine.start { message in delays.node?.releaseDelayed(message) }
        if let address = config.httpAddress {
            let box = WeakNode()
            box.set(self)
            do {
                let endpoint = try HTTPEndpoint(address: address, routes: [
                    "/metrics": { HTTPEndpoint.Response(status: 200, contentType: "text/plain; version=0.0.4", body: box.node?.metricsText() ?? "") },
                    "/rooms": { HTTPEndpoint.Response(status: 200, contentType: "application/json", body: box.node?.roomsJSON() ?? "[]\n") },
                    "/cluster": { HTTPEndpoint.Response(status: 200, contentType: "application/json", body: box.node?.clusterJSON() ?? "[]\n") },
                    "POST /drain": {
                        guard let node = box.node else { return HTTPEndpoint.Response(status: 503, contentType: "application/json", body: "{\"status\":\"stopping\"}\n") }
                        guard node.drain() else {
                            return HTTPEndpoint.Response(status: 409, contentType: "application/json",
                                                         body: "{\"status\":\"refused\",\"why\":\"no other node is alive to take the rooms\"}\n")
                        }
                        return HTTPEndpoint.Response(status: 202, contentType: "application/json", body: "{\"status\":\"draining\"}\n")
                    },
                    "/healthz": {
                        let (healthy, body) = box.node?.healthText() ?? (false, "{\"status\":\"stopping\"}\n")
                        return HTTPEndpoint.Response(status: healthy ? 200 : 503, contentType: "application/json", body: body)
                    },
                    "/readyz": {
                        let (ready, body) = box.node?.readyText() ?? (false, "{\"ready\":false,\"why\":\"stopping\"}\n")
                        return HTTPEndpoint.Response(status: ready ? 200 : 503, contentType: "application/json", body: body)
                    },
                ], access: HTTPEndpoint.OperatorAccess(routes: ["POST /drain", "/rooms", "/cluster"], token: config.operatorToken))
                http.withLock { $0 = endpoint }
            } catch {
                stop()
                throw .bind(address: address, error)
            }
        }
        self.logger.info("node started", ["listen": listenAddress, "publish": publishAddress, "replica": replica.description,
                                          "incarnation": "\(incarnation)", "rooms": "\(rooms.count)",
                                          "seeds": config.seeds.joined(separator: ",")])
        if config.tokenVerifier != nil && config.clusterKey == nil {
            // Client topics are sealed, but the node topics on the same socket would not be.
            self.logger.warning("rooms are closed to clients, but node-to-node traffic is in clear on the publish socket: give every node the same --cluster-key (homeroom keys generate makes one)", [:])
        }
        // Sessions the previous boot hosted are over: no ghosts. Each owner ends them in the
        // rooms it owns, asked again by the presence loop until the write is stored.
        if let previousIncarnation {
            state.withLock { state in
                let owned = state.rooms.keys.filter { state.owns($0, ownName: config.name) }
                state.engine.endEarlierIncarnation(previousIncarnation, in: owned)
            }
            markEarlierIncarnationDead()
        }
    }

    deinit { stop() }

    /// Stops in order: the tick loop, then the subscriber, the replier, the links and the publisher.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Tell the cluster at once: this node's users go offline now, not after a timeout.
        endSessions(of: replica, incarnation: incarnation)
        state.withLock { $0.stopping = true }
        // Writes decided before that are still being stored: let them commit (and queue
        // their deltas) before the publisher's last flush, so none acknowledged stays
        // unpublished. New writes are refused now; bounded all the same.
        for _ in 0..<5_000 where writeGates.count > 0 { usleep(1_000) }
        http.withLock { $0 }?.stop()
        if let thread = ticker.withLock({ $0 }) { thread.join() }
        if let thread = presence.withLock({ $0 }) { thread.join() }
        outbox.wake()
        if let thread = sender.withLock({ $0 }) { thread.join() }
        delayLine.stop()
        subscriber.close()
        replier.close()
        let requesters = links.withLock { links in
            defer { links.removeAll() }
            return Array(links.values)
        }
        for requester in requesters { requester.close() }
        clusterPublisher?.close()
        publisher.close()
        // Nothing else runs now: every dirty room's snapshot is stored, then the store closes.
        compactStore(force: true)
        state.withLock { state in
            state.engine.compactions.forgetAll()
            state.store = nil
        }
        logger.info("node stopped")
    }

    /// Wall-clock milliseconds as this node sees them (skewed by the chaos hook, if set).
    func wallMillis() -> UInt64 {
        let now = Int64(bitPattern: WallClock.nowMillis()) + config.clockSkewMillis
        return UInt64(max(0, now))
    }

    // MARK: - Inspection (tests, CLI, bench)

    public func room(_ id: String) -> RoomState? { state.withLock { $0.rooms[id] } }

    /// Calls `observer` (on the subscriber thread) with every batch of other nodes'
    /// deltas this node applies for the first time. For benchmarks and embedding.
    public func observeRemoteDeltas(_ observer: @escaping @Sendable (String, [Delta]) -> Void) {
        appliedObservers.withLock { $0.append(observer) }
    }

    /// Writes as a local client would, without the REQ round trip (embedding, benchmarks).
    /// A reward without `issuedAtMillis` is taken as issued now, as `RoomClient` does;
    /// a retry of it must carry the first attempt's.
    public func submit(room: String, _ write: Write, requestID: UInt64 = 0) -> WireMessage.WriteAck {
        var write = write
        if case let .reward(target, amount, 0) = write.operation {
            write.operation = .reward(user: target, amount: amount, issuedAtMillis: wallMillis())
        }
        return handleWrite(room: room, WireMessage.WriteRequest(requestID: requestID, write: write))
    }

    /// Joins a user locally, without the REQ round trip (embedding, benchmarks).
    /// Starts a session hosted by this node, without sending the room back (that is
    /// what a peer's join does over the wire; embedding code reads `room(_:)` instead).
    @discardableResult
    public func join(room: String, user: UserID, role: Role, session: SessionID, name: String) -> WireMessage.WriteAck {
        handleWrite(room: room, WireMessage.WriteRequest(requestID: 0, write: Write(
            author: user, authorRole: role, authorCounter: 0,
            operation: .joinSession(user: user, session: session, name: name, role: role, host: replica, incarnation: incarnation))))
    }

    public var roomIDs: [String] { state.withLock { Array($0.rooms.keys).sorted() } }

    public var alivePeers: [ReplicaID] { state.withLock { $0.peers.alive.filter { $0.status == .alive }.map(\.node) } }

    public var faults: FaultPolicy {
        get { state.withLock { $0.faults } }
        set {
            state.withLock { state in
                if state.faults.seed != newValue.seed || state.faults.isQuiet { state.dice = FaultDice(seed: newValue.seed) }
                state.faults = newValue
            }
            logger.notice("faults changed", ["drop": "\(newValue.dropPercent)%", "duplicate": "\(newValue.duplicatePercent)%",
                                             "isolated": "\(newValue.isolated)", "blocked": "\(newValue.blocked.count)"])
        }
    }

    // MARK: - Envelopes

    func envelope(room: String, _ message: WireMessage) -> WireEnvelope {
        let (sequence, clock) = state.withLock { state in
            (state.nextEnvelopeSequence(), HybridTimestamp(packed: state.sequencer.clock.last, replica: replica))
        }
        return WireEnvelope(roomID: room, sender: replica, sequence: sequence, clock: clock, message: message)
    }

    static func errorEnvelope(code: String, message: String, room: String = "") -> WireEnvelope {
        WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                     message: .error(WireMessage.ErrorReply(code: code, message: message)))
    }
}

/// Lets the subscriber's handler reach the node without keeping it alive.
final class WeakNode: Sendable {
    private let reference = Mutex<WeakReference?>(nil)
    private struct WeakReference { weak var node: ClusterNode? }
    func set(_ node: ClusterNode) { reference.withLock { $0 = WeakReference(node: node) } }
    var node: ClusterNode? { reference.withLock { $0?.node } }
}

public enum NodeError: Error, CustomStringConvertible {
    case config(NodeConfigError)
    /// A socket or endpoint could not open; the reason says why and what to do.
    case bind(address: String, any Error & CustomStringConvertible & Sendable)
    case store(StoreError)
    case wrongDataDirectory(path: String, name: String)
    /// One of the node's own threads could not start (the process is at its thread limit).
    case thread(String)

    public var description: String {
        switch self {
        case let .config(error): return error.description
        case let .bind(address, error): return "cannot open \(address): \(error)"
        case let .store(error): return error.description
        case let .wrongDataDirectory(path, name):
            return "the data directory \(path) belongs to another node, not \(name): give each node its own directory"
        case let .thread(why):
            return "cannot start the node's threads (\(why)): raise the process's thread limit (ulimit -u, systemd TasksMax) or free memory, then start again"
        }
    }
}

extension ClusterNode {
    /// chmod, or an error that names the command to run.
    static func restrict(_ path: String, mode: mode_t) throws(StoreError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw StoreError(code: 14, message: String(cString: strerror(errno)), operation: "stat \(path)", path: path)
        }
        guard info.st_mode & 0o777 != mode else { return }
        if chmod(path, mode) != 0 {
            let why = String(cString: strerror(errno))
            throw StoreError(code: 3, message: "\(why): run `chmod \(String(mode, radix: 8)) \(path)` as its owner (it holds class state in clear)",
                             operation: "make \(path) private", path: path)
        }
    }

    static func restrictIfPresent(_ path: String, mode: mode_t) throws(StoreError) {
        guard access(path, F_OK) == 0 else { return }
        try restrict(path, mode: mode)
    }

    static func makeDirectory(_ path: String) throws(StoreError) {
        var built = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw StoreError(code: 14, message: String(cString: strerror(errno)), operation: "create directory \(built)", path: path)
            }
        }
    }
}
