import HomeroomCore
import HomeroomWire

/// How one `homeroom node` runs. Validated before anything starts, with errors that
/// say what to fix.
public struct NodeConfig: Sendable, Equatable {
    /// A stable, unique name in the cluster (it derives the node's replica id).
    public var name: String
    /// Where the REP socket listens: joins, acknowledged writes, sync, gossip hellos.
    public var listen: String
    /// Where the PUB socket listens: live deltas per room, heartbeats.
    public var publish: String
    /// Where a second PUB socket listens for node-to-node traffic only (deltas this node
    /// sequenced, heartbeats); nil keeps everything on `publish`. SP filters topics at
    /// the subscriber, so on one socket every client link also carries the node topics
    /// and the heartbeats: a node with its own cluster socket sends each delta once per
    /// client instead of twice (docs/MESSAGING.md, "Fan-out").
    public var clusterPublish: String?
    /// REP addresses of nodes to join through; one is enough.
    public var seeds: [String]
    public var heartbeatMillis: UInt64 = 200
    /// No heartbeat for this long: suspect. Then `downMillis`: declared down.
    public var suspectMillis: UInt64 = 1_000
    public var downMillis: UInt64 = 2_000
    /// A peer not heard for `suspectMillis` is probed, itself and through this many other
    /// nodes (SWIM's ping-req), and is not declared down while one finds it alive
    /// (`IndirectProber`). 0: only the peer itself; nil: no probes (silence alone decides).
    public var probeHelpers: Int? = 3
    public var requestTimeoutMillis: UInt64 = 1_000
    /// How far ahead of this node's clock another node's delta may be stamped before it is
    /// refused (`--max-clock-drift-ms`); also how far other nodes' clocks may lag this one,
    /// so reward folds wait that much longer (`RewardCheckpoint.completeBefore`).
    public var maxClockDriftMillis: UInt64 = HybridClock.defaultMaxForwardDriftMillis
    /// Tests only (`--test-fault`, refused without `--test-only`): a promise broken on purpose.
    public var testFault: TestFault?
    public var workers = 2
    /// The teacher lane: a teacher's control writes (`Operation.isTeacherControl`) are
    /// taken by a worker and by their room's write gate ahead of every other request
    /// waiting. Off only to measure what it is worth (homeroom-bench, suite teacher-lane).
    public var teacherLane = true
    /// Limits on what peers and clients send this node (requests, cluster messages).
    public var limits: WireLimits = .default
    /// Limits on replies to this node's own requests (snapshots and patches of whole
    /// rooms): larger, since a 100,000-user room is about 10 MB.
    public var replyLimits: WireLimits = .largeReplies
    /// Where the node keeps its SQLite store; nil keeps everything in memory
    /// (and a restart then starts empty, as a new replica).
    public var dataDirectory: String?
    /// fsync every commit (survives power loss), not only process crashes.
    public var synchronousFull = false
    /// Join tokens: when set, every client request must carry a valid token (see docs/SECURITY.md).
    public var tokenVerifier: TokenVerifier?
    /// The revoked-users file behind `tokenVerifier.revokedUsers`, reread while the node
    /// runs (on change, or SIGHUP); nil when the list was given inline.
    public var revokedFile: String?
    /// The cluster's shared key: when set, nodes accept only node messages sealed with it.
    public var clusterKey: ClusterKey?
    /// Per-user write limits (Agora RTM's defaults: 60 messages/s), and per-node limits.
    public var writesPerSecond = 60
    /// Joins (new sessions) per user and second, with a 3 s burst; `rate-limited` beyond.
    public var joinsPerSecond = 20
    public var writeBytesPerSecond = 256 * 1024
    /// Syncs and digests per user and room per second (clients sync about 3 times a
    /// second), and the bytes per second their replies may carry, both with a 3 s burst.
    public var syncsPerSecond = 20
    /// Client hellos (tokenless) per connection per second, with a 3 s burst.
    public var hellosPerSecond = 20
    public var syncBytesPerSecond = 8 << 20
    public var maxRooms = 10_000
    /// Rooms this node opens per second, with a 10 s burst (each user: a tenth of it, at least 1 a second).
    public var roomCreationsPerSecond = 10
    /// A room with nobody in it and nothing written for this long is removed here, with
    /// its store rows (`ClusterNode+IdleRooms`); 0 keeps every room.
    public var roomRetentionSeconds: UInt64 = 7 * 86_400
    /// A room whose class closed (`after`, and its close delay passed) is removed here this
    /// long after closing, its store rows too, and a tombstone kept (`ClusterNode+ClosedClasses`).
    public var closedRoomRetentionSeconds: UInt64 = 3_600
    public var maxUsersPerRoom = 200_000
    /// Fault hook for chaos tests: this node's wall clock runs this far off (ms, may be negative).
    public var clockSkewMillis: Int64 = 0
    /// Where /healthz and /metrics are served over HTTP, e.g. http://127.0.0.1:9100; nil for none.
    public var httpAddress: String?
    /// Messages older than this leave every room's history (the count limit is the
    /// room's `historyLimit`, 1,000 by default). 0 keeps messages until the count limit.
    public var messageRetentionSeconds: UInt64 = 86_400
    /// A session hosted here whose client names it in its syncs (`SyncRequest.session`)
    /// ends when no such sync came for this long: a client that vanished (killed,
    /// unplugged) goes offline instead of staying online until the node stops. Clients
    /// sync every 300 ms by default. 0: no leases.
    public var sessionTimeoutMillis: UInt64 = 10_000
    /// A peer down for this long is forgotten: no longer dialled nor listed. It comes
    /// back by greeting again (a heartbeat, or a seed hello). 0: never forget.
    public var permanentDownMillis: UInt64 = NodeConfig.defaultPermanentDownMillis
    public static let defaultPermanentDownMillis: UInt64 = 300_000
    /// How far from this node's clock a reward's issue time may be (`--reward-window-ms`);
    /// the same on every node: folding rewards relies on it (docs/ARCHITECTURE.md, "Lifetime").
    public var rewardWindowMillis: UInt64 = RoomState.defaultRewardWindowMillis
    /// Copies of each room in the cluster (docs/PROTOCOL.md, "Placement"): a room lives on
    /// this many nodes, picked by rendezvous hashing over the members; a join or a write at
    /// another node is answered `not-owner` with the owners' addresses. 0: every node holds
    /// every room. The same on every node. `homeroom node` defaults to 3; an embedder
    /// (tests, the demo's in-process cluster) chooses.
    public var replicas = 0
    /// `homeroom node`'s copies of each room when nothing says otherwise (the chaos
    /// harness plans its drains by it too).
    public static let commandDefaultReplicas = 3
    /// Rooms kept on another number of copies (`--room-replicas <room>=<n>`: a lecture
    /// hall on more nodes; 0: every node), with placement only. The same on every node.
    public var roomReplicas: [String: Int] = [:]
    /// How long a copy this node no longer owns stays after its owners hold all of it
    /// (docs/PROTOCOL.md, "Placement"): their stores take it meanwhile.
    public var handoffSettleMillis: UInt64 = 10_000
    /// Follow peers that serve streams through node streams (docs/PROTOCOL.md, "Room
    /// streams"): only the deltas of the rooms this node owns or holds arrive. False:
    /// every peer's deltas over SP/TCP, as before room streams (to compare, or to debug).
    public var nodeStreams = true
    /// The operator token (`--http-token-file`): POST /drain, /rooms and /cluster on the
    /// HTTP address need it as `Authorization: Bearer <hex>`; nil: they answer loopback
    /// peers only. /healthz and /metrics stay open.
    public var operatorToken: [UInt8]?
    /// Connections each listening socket (REP, PUB) accepts at once; more are closed.
    public var maxConnections = 4_096
    /// Open descriptors past which the node reports itself unhealthy and stops
    /// heartbeating, so peers declare it down and its clients move (0: the soft limit
    /// minus 64).
    public var wedgeDescriptors = 0

    /// Transport limits for what this node receives (requests, cluster messages).
    var transportLimits: SPLimitsConfig {
        SPLimitsConfig(maxMessageBytes: limits.maxMessageBytes, maxConnections: maxConnections)
    }

    /// Transport limits for this node's own requests to peers (large replies).
    var linkLimits: SPLimitsConfig {
        SPLimitsConfig(maxMessageBytes: replyLimits.maxMessageBytes, maxConnections: maxConnections)
    }

    public init(name: String, listen: String, publish: String, seeds: [String] = []) {
        self.name = name
        self.listen = listen
        self.publish = publish
        self.seeds = seeds
    }

    public static func == (a: NodeConfig, b: NodeConfig) -> Bool {
        a.name == b.name && a.listen == b.listen && a.publish == b.publish && a.seeds == b.seeds
            && a.heartbeatMillis == b.heartbeatMillis && a.suspectMillis == b.suspectMillis && a.downMillis == b.downMillis
            && a.requestTimeoutMillis == b.requestTimeoutMillis && a.maxClockDriftMillis == b.maxClockDriftMillis && a.workers == b.workers
            && a.writesPerSecond == b.writesPerSecond && a.joinsPerSecond == b.joinsPerSecond && a.writeBytesPerSecond == b.writeBytesPerSecond
            && a.maxRooms == b.maxRooms && a.maxUsersPerRoom == b.maxUsersPerRoom
            && (a.tokenVerifier == nil) == (b.tokenVerifier == nil) && (a.clusterKey == nil) == (b.clusterKey == nil)
            && a.clockSkewMillis == b.clockSkewMillis && a.dataDirectory == b.dataDirectory && a.synchronousFull == b.synchronousFull && a.httpAddress == b.httpAddress
            && a.messageRetentionSeconds == b.messageRetentionSeconds && a.clusterPublish == b.clusterPublish
            && a.replicas == b.replicas && a.roomReplicas == b.roomReplicas && a.probeHelpers == b.probeHelpers
            && a.nodeStreams == b.nodeStreams && a.roomCreationsPerSecond == b.roomCreationsPerSecond
            && a.roomRetentionSeconds == b.roomRetentionSeconds && a.closedRoomRetentionSeconds == b.closedRoomRetentionSeconds
    }

    public func validate() throws(NodeConfigError) {
        if name.isEmpty || name.utf8.count > 64 || name.contains(where: { $0.isWhitespace }) {
            throw .invalid(field: "name", reason: "'\(name)' must be 1 to 64 characters without spaces, unique in the cluster")
        }
        for (field, address) in [("listen", listen), ("publish", publish)] + seeds.map({ ("seed", $0) })
            + (clusterPublish.map { [("cluster-publish", $0)] } ?? []) {
            try Self.checkAddress(address, field: field)
        }
        if listen == publish && !listen.hasSuffix(":0") {
            throw .invalid(field: "publish", reason: "the publish address must differ from the listen address \(listen)")
        }
        if heartbeatMillis < 10 || heartbeatMillis > 60_000 {
            throw .invalid(field: "heartbeat-ms", reason: "\(heartbeatMillis) must be from 10 to 60000")
        }
        if downMillis < 2 * heartbeatMillis {
            throw .invalid(field: "down-ms", reason: "the down period (\(downMillis) ms) must be at least twice the heartbeat period (\(heartbeatMillis) ms)")
        }
        if suspectMillis < heartbeatMillis || suspectMillis >= downMillis {
            throw .invalid(field: "suspect-ms", reason: "\(suspectMillis) ms must be at least the heartbeat period and below the down period (\(downMillis) ms)")
        }
        if let http = httpAddress, !(http.hasPrefix("http://")) {
            throw .invalid(field: "http", reason: "'\(http)' must look like http://127.0.0.1:9100")
        }
        if let directory = dataDirectory, directory.isEmpty {
            throw .invalid(field: "data-dir", reason: "the data directory path is empty")
        }
        if roomRetentionSeconds > 10 * 365 * 86_400 {
            throw .invalid(field: "room-retention", reason: "\(roomRetentionSeconds) s is more than ten years; use 0 to keep every room")
        }
        if closedRoomRetentionSeconds > 10 * 365 * 86_400 {
            throw .invalid(field: "closed-room-retention", reason: "\(closedRoomRetentionSeconds) s is more than ten years")
        }
        if writesPerSecond < 1 || joinsPerSecond < 1 || roomCreationsPerSecond < 1 || writeBytesPerSecond < 1024 || maxRooms < 1 || maxUsersPerRoom < 2 {
            throw .invalid(field: "limits", reason: "write rate at least 1/s and 1 KiB/s, at least 1 room and 2 users per room")
        }
        // Half what a reply may hold, so a room that grew at several nodes at once still decodes.
        if maxUsersPerRoom > replyLimits.maxUsersPerPatch / 2 {
            throw .invalid(field: "max-users", reason: "\(maxUsersPerRoom) is more than \(replyLimits.maxUsersPerPatch / 2) users per room, the most a join reply carries with room to spare")
        }
        if messageRetentionSeconds > 10 * 365 * 86_400 {
            throw .invalid(field: "message-retention", reason: "\(messageRetentionSeconds) s is more than ten years; use 0 to keep messages until the count limit")
        }
        if permanentDownMillis != 0 && permanentDownMillis < downMillis {
            throw .invalid(field: "permanent-down-ms", reason: "\(permanentDownMillis) is shorter than --down-ms (\(downMillis)): a peer must be down before it is forgotten")
        }
        if !(1_000...3_600_000).contains(rewardWindowMillis) {
            throw .invalid(field: "reward-window-ms", reason: "\(rewardWindowMillis) must be from 1000 to 3600000, and the same on every node")
        }
        if !(1_000...3_600_000).contains(maxClockDriftMillis) {
            throw .invalid(field: "max-clock-drift-ms", reason: "\(maxClockDriftMillis) must be from 1000 to 3600000")
        }
        if sessionTimeoutMillis != 0 && !(1_000...3_600_000).contains(sessionTimeoutMillis) {
            throw .invalid(field: "session-timeout-ms", reason: "\(sessionTimeoutMillis) must be from 1000 to 3600000 (or 0 for no leases)")
        }
        if replicas < 0 || replicas > 64 {
            throw .invalid(field: "replicas", reason: "\(replicas) must be from 1 to 64 copies of each room (or 0: every node holds every room)")
        }
        if let probeHelpers, probeHelpers < 0 || probeHelpers > 16 {
            throw .invalid(field: "probe-helpers", reason: "\(probeHelpers) must be from 0 to 16 nodes asked per probe (or off)")
        }
        for (room, copies) in roomReplicas.sorted(by: { $0.key < $1.key }) {
            if let problem = RoomID.validate(room) {
                throw .invalid(field: "room-replicas", reason: "\(room): \(problem)")
            }
            if let group = Breakout.parse(roomID: room) {
                throw .invalid(field: "room-replicas", reason: "\(room) is a breakout group's room: it lives with \(group.mainRoom); pin \(group.mainRoom) instead")
            }
            if copies < 0 || copies > 64 {
                throw .invalid(field: "room-replicas", reason: "\(room)=\(copies): from 1 to 64 copies (or 0: every node)")
            }
            if replicas == 0 {
                throw .invalid(field: "room-replicas", reason: "\(room)=\(copies) needs placement (--replicas n): without it every node holds every room")
            }
        }
        if workers < 1 || workers > 64 {
            throw .invalid(field: "workers", reason: "\(workers) must be from 1 to 64")
        }
    }

    static func checkAddress(_ address: String, field: String) throws(NodeConfigError) {
        let schemes = ["tcp://", "ipc://", "inproc://", "tls+tcp://"]
        guard let scheme = schemes.first(where: { address.hasPrefix($0) }) else {
            throw .invalid(field: field, reason: "'\(address)' must start with tcp://, ipc:// or inproc:// (for example tcp://127.0.0.1:7100)")
        }
        let rest = address.dropFirst(scheme.count)
        if rest.isEmpty { throw .invalid(field: field, reason: "'\(address)' has no host or path after \(scheme)") }
        if scheme == "tcp://" {
            guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]), (0...65535).contains(port) else {
                throw .invalid(field: field, reason: "'\(address)' needs a port from 0 to 65535, as in tcp://127.0.0.1:7100")
            }
        }
    }
}

extension WireLimits {
    /// For replies a node or client asked for: whole-room snapshots and patches.
    public static let largeReplies: WireLimits = {
        var limits = WireLimits.default
        limits.maxMessageBytes = 256 << 20
        limits.maxDecodedBytes = 2 << 30
        limits.maxUsersPerPatch = 1_000_000
        limits.maxMapEntries = 1_000_000
        limits.maxStringTable = 4_000_000
        return limits
    }()
}

public enum NodeConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalid(field: String, reason: String)
    case missing(field: String, hint: String)
    case unreadableFile(path: String, reason: String)

    public var description: String {
        switch self {
        case let .invalid(field, reason): return "invalid \(field): \(reason)"
        case let .missing(field, hint): return "missing \(field): \(hint)"
        case let .unreadableFile(path, reason): return "cannot use config file \(path): \(reason)"
        }
    }
}

import HomeroomEngine

extension NodeConfig {
    /// The limits the node's engine enforces.
    var enginePolicy: EnginePolicy {
        var policy = EnginePolicy(maxRooms: maxRooms, maxUsersPerRoom: maxUsersPerRoom, rewardWindowMillis: rewardWindowMillis,
                                  maxClockDriftMillis: maxClockDriftMillis)
        policy.sessionTimeoutMillis = sessionTimeoutMillis
        policy.rates.writesPerSecond = writesPerSecond
        policy.rates.writeBytesPerSecond = writeBytesPerSecond
        policy.rates.joinsPerSecond = joinsPerSecond
        policy.rates.roomCreationsPerSecond = roomCreationsPerSecond
        // A tenth of the node's, at least 1 a second: one user never takes the whole budget.
        policy.rates.roomCreationsPerUserPerSecond = max(1, roomCreationsPerSecond / 10)
        policy.rates.hellosPerSecond = hellosPerSecond
        policy.rates.syncsPerSecond = syncsPerSecond
        policy.rates.syncBytesPerSecond = syncBytesPerSecond
        return policy
    }
}
