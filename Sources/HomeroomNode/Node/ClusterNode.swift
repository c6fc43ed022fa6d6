import HomeroomCore
import HomeroomWire
import Synchronization

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
    public let incarnation: UInt64
    public let listenAddress: String
    public let publishAddress: String
    public let metrics = NodeMetrics()
    let logger: Logger

    let state: Mutex<NodeState>
    let publisher: NNGSocket
    let replier: NNGReplier
    let subscriber: NNGSubscriber
    let links = Mutex<[String: NNGRequester]>([:])
    let outbox = Outbox()
    let appliedObservers = Mutex<[@Sendable (String, [Delta]) -> Void]>([])
    private let ticker: Mutex<NNGThread?> = Mutex(nil)
    private let sender: Mutex<NNGThread?> = Mutex(nil)
    let stopped = Atomic<Bool>(false)

    /// Starts a node: binds its sockets, then gossips with its seeds in the background.
    public init(config: NodeConfig, logger: Logger, incarnation: UInt64 = WallClock.nowMillis()) throws(NodeError) {
        do { try config.validate() } catch { throw .config(error) }
        self.config = config
        self.name = config.name
        self.incarnation = incarnation
        self.replica = ReplicaID(name: "\(config.name)#\(incarnation)")
        self.logger = logger.with("node", config.name)
        self.state = Mutex(NodeState(replica: replica, maxClockDriftMillis: config.maxClockDriftMillis))

        do {
            publisher = try NNGSocket(.pub)
            try publisher.setSendBuffer(8192)
            publishAddress = try publisher.listen(config.publish)
        } catch {
            throw .bind(address: config.publish, error)
        }
        do {
            replier = try NNGReplier()
            listenAddress = try replier.listen(config.listen)
        } catch {
            publisher.close()
            throw .bind(address: config.listen, error)
        }
        do {
            let sub = try NNGSocket(.sub)
            try sub.setReceiveBuffer(8192)
            try sub.setReconnectTime(min: .milliseconds(50), max: .milliseconds(500))
            try sub.setMaxReceiveSize(config.limits.maxMessageBytes)
            try sub.subscribe(Topics.nodeDeltas)
            try sub.subscribe(Topics.heartbeat)
            // The handler captures a box, not self, so init can finish first.
            let box = WeakNode()
            subscriber = try NNGSubscriber(socket: sub, name: "hr-sub") { message in box.node?.receiveFromCluster(message) }
            box.set(self)
        } catch {
            replier.close()
            publisher.close()
            throw .bind(address: "cluster subscriber", error)
        }
        do {
            try replier.serve(workers: config.workers) { [weak self] request in
                self?.handleRequest(request) ?? WireCodec.encode(Self.errorEnvelope(code: "unavailable", message: "the node is stopping"))
            }
        } catch {
            subscriber.close()
            replier.close()
            publisher.close()
            throw .bind(address: config.listen, error)
        }
        let thread = try? NNGThread(name: "hr-tick") { [weak self] in self?.tickLoop() }
        ticker.withLock { $0 = thread }
        let publishing = try? NNGThread(name: "hr-publish") { [weak self] in self?.publishLoop() }
        sender.withLock { $0 = publishing }
        self.logger.info("node started", ["listen": listenAddress, "publish": publishAddress, "replica": replica.description,
                                          "seeds": config.seeds.joined(separator: ",")])
    }

    deinit { stop() }

    /// Stops in order: the tick loop, then the subscriber, the replier, the links and the publisher.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        state.withLock { $0.stopping = true }
        if let thread = ticker.withLock({ $0 }) { thread.join() }
        outbox.wake()
        if let thread = sender.withLock({ $0 }) { thread.join() }
        subscriber.close()
        replier.close()
        let requesters = links.withLock { links in
            defer { links.removeAll() }
            return Array(links.values)
        }
        for requester in requesters { requester.close() }
        publisher.close()
        logger.info("node stopped")
    }

    // MARK: - Inspection (tests, CLI, bench)

    public func room(_ id: String) -> RoomState? { state.withLock { $0.rooms[id] } }

    /// Calls `observer` (on the subscriber thread) with every batch of other nodes'
    /// deltas this node applies for the first time. For benchmarks and embedding.
    public func observeRemoteDeltas(_ observer: @escaping @Sendable (String, [Delta]) -> Void) {
        appliedObservers.withLock { $0.append(observer) }
    }

    /// Writes as a local client would, without the REQ round trip (embedding, benchmarks).
    public func submit(room: String, _ write: Write, requestID: UInt64 = 0) -> WireMessage.WriteAck {
        handleWrite(room: room, WireMessage.WriteRequest(requestID: requestID, write: write))
    }

    /// Joins a user locally, without the REQ round trip (embedding, benchmarks).
    public func join(room: String, user: UserID, role: Role, session: SessionID, name: String) -> WireMessage {
        handleJoin(room: room, WireMessage.JoinRequest(user: user, role: role, session: session, name: name))
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
    case bind(address: String, NNGError)

    public var description: String {
        switch self {
        case let .config(error): return error.description
        case let .bind(address, error): return "cannot open \(address): \(error)"
        }
    }
}
