@preconcurrency import Glibc
import FoundationEssentials
import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// `homeroom node`: run one node of a cluster until SIGTERM or SIGINT.
enum NodeCommand {
    static let usage = """
        OVERVIEW: Run a Homeroom node. Peers join rooms through it; nodes find each other from one seed.

        USAGE: homeroom node --name <name> --listen <address> --publish <address> [--seed <address> ...] [options]
               homeroom node drain --http <address> [--wait-s <n>] [--http-token-file <file>]

        drain: a planned removal. The node hands every room it holds to the other nodes
        (each goes once its other owners hold it), sends its clients to them, and stops;
        the command waits for that (at most --wait-s seconds, default 300).

        OPTIONS:
          --name <name>          Unique node name in the cluster.            (HOMEROOM_NAME)
          --listen <address>     REP address: joins, writes, sync.            (HOMEROOM_LISTEN)
                                 e.g. tcp://127.0.0.1:7100, ipc:///tmp/hr.sock
          --publish <address>    PUB address: live deltas and heartbeats.     (HOMEROOM_PUBLISH)
          --seed <address>       Another node's listen address; repeatable.  (HOMEROOM_SEEDS, comma-separated)
          --cluster-publish <address>  A second PUB address for node-to-node traffic only, so client
                                 links stop carrying it (recommended for large rooms).  (HOMEROOM_CLUSTER_PUBLISH)
          --message-retention <s>  Drop room messages older than this (default 86400; 0: keep until
                                 the room's count limit).                    (HOMEROOM_MESSAGE_RETENTION)
          --session-timeout-ms <n>  End a session whose client stopped syncing for this long (default
                                 10000; 0: never). Clients sync every 300 ms.  (HOMEROOM_SESSION_TIMEOUT_MS)
          --config <file>        JSON file with any of: name, listen, publish, seeds, heartbeat_ms,
                                 suspect_ms, down_ms, workers, log_level, log_format, data_dir, sync,
                                 http, token_keys, app, revoked, cluster_key, cluster_publish,
                                 message_retention_s, session_timeout_ms, tls_cert, tls_key,
                                 tls_ca, replicas, room_replicas.             (HOMEROOM_CONFIG)
          --heartbeat-ms <n>     Heartbeat period (default 200).             (HOMEROOM_HEARTBEAT_MS)
          --suspect-ms <n>       Silence before a node is suspect (default 1000).
          --probe-helpers <n>    Probe a peer not heard for --suspect-ms itself and through n other
                                 nodes (SWIM's ping-req); it is not declared down while one finds it
                                 alive (default 3; 0: only the peer itself; off: silence decides).
          --down-ms <n>          Silence before a node is down (default 2000, at least twice the heartbeat).
          --workers <n>          Request worker threads (default 2).
          --data-dir <path>      Keep rooms in SQLite here; a restart then loses nothing.  (HOMEROOM_DATA_DIR)
                                 Without it the node keeps rooms in memory only.
          --sync <mode>          normal (survives kill -9) or full (also power loss; slower). Default normal.
          --http <address>       Serve /healthz and /metrics, e.g. http://127.0.0.1:9100.  (HOMEROOM_HTTP)
                                 POST /drain there starts a drain (`homeroom node drain`).
          --http-token-file <file>  The operator token (hex, 16 bytes or more, mode 600; e.g.
                                 openssl rand -hex 32): POST /drain, /rooms and /cluster need it as
                                 Authorization: Bearer <hex>. Without it they answer loopback
                                 peers only.  (HOMEROOM_HTTP_TOKEN_FILE)
          --wait-s <n>           (drain) How long to wait for the node to stop (default 300).
          --token-key <file>     Require join tokens signed by this Ed25519 public key (hex file from
                                 `homeroom keys generate`); repeatable for key rotation.  (HOMEROOM_TOKEN_KEY)
          --app <id>             The application id tokens must carry (default homeroom).  (HOMEROOM_APP)
          --revoked <file>       Users (one per line) whose tokens are refused; reread when it changes
                                 (and on SIGHUP), ending the sessions of users added to it.
          --token-max-lifetime <s>  Refuse tokens valid for longer than this (default 86400).
          --token-leeway <s>        Clock slack for tokens: accepted this long after their
                                    expiry, and this long before they are issued (default 30).
          --cluster-key <file>   Accept only node messages sealed with this shared key (mode 600).  (HOMEROOM_CLUSTER_KEY)
          --tls-cert <file>      This node's TLS certificate chain (PEM), for tls+tcp:// addresses.  (HOMEROOM_TLS_CERT)
          --tls-key <file>       Its private key (PEM, mode 600).             (HOMEROOM_TLS_KEY)
          --tls-ca <file>        The authority that signed the nodes' certificates: peers on
                                 tls+tcp:// must present one for their address.  (HOMEROOM_TLS_CA)
          --writes-per-second <n>  Per-user write limit (default 60).
          --joins-per-second <n>   Per-user join limit in a room (default 20, 3 s burst).
          --syncs-per-second <n>   Per-user sync and digest limit in a room (default 20, 3 s burst);
                                 their replies may carry 8 MiB/s (--sync-bytes-per-second).
          --sync-bytes-per-second <n>  Per-user sync reply bytes in a room (default 8388608).
          --max-rooms <n>        Rooms this node accepts (default 10000).
          --room-creations-per-second <n>  Rooms this node opens a second (default 10, 10 s
                                 burst; each user a tenth, at least 1); rate-limited beyond.
          --room-retention <s>   Remove a room nobody is in and nothing was written to for this
                                 long, with its store rows (default 604800, a week; 0: keep).  (HOMEROOM_ROOM_RETENTION)
          --closed-room-retention <s>  Remove a room this long after its class closed (after, and
                                 its close delay passed), store rows too, keeping a tombstone so
                                 the id is refused room-closed (default 3600; 0: at closing).
          --max-users <n>        Users per room (default 200000).
          --replicas <n>         Keep each room on n nodes, picked by rendezvous hashing (default 3;
                                 0: every node holds every room; the same on every node). Joins and
                                 writes elsewhere are answered not-owner, naming the owners.  (HOMEROOM_REPLICAS)
          --room-replicas <room>=<n>  (--replicas) Keep this room (a lecture hall) on n nodes instead;
                                 0: on every node. Repeatable; the same on every node.
          --handoff-settle-ms <n>  (--replicas) Keep a copy this node no longer owns this long after
                                 its owners hold it (default 10000).
          --node-streams on|off  Follow peers through node streams: only the deltas of the rooms
                                 this node owns or holds arrive (default on; off: every peer's
                                 deltas, over SP/TCP).
          --permanent-down-ms <n>  Forget a peer down this long: no more dialling (default 300000;
                                 0: never). It returns by greeting again.
          --reward-window-ms <n>  Take rewards issued within this of the node's clock (default 60000;
                                 the same on every node: rewards are folded by it).
          --max-clock-drift-ms <n>  Refuse other nodes' deltas stamped further ahead of this node's
                                 clock; rewards fold this much after their window too, since a node
                                 whose clock lags may still take a copy (default 60000; the same
                                 on every node).
          --max-connections <n>  Connections each listening socket holds at once (default 4096).
          --wedge-descriptors <n>  Step aside (no heartbeats, /healthz 503, requests refused) at this
                                 many open descriptors (default: the soft limit minus 64).
          --log-level <level>    trace, debug, info, notice, warning, error (default info).  (HOMEROOM_LOG_LEVEL)

          --log-format <format>  text or json (default text).               (HOMEROOM_LOG_FORMAT)
          -h, --help             Show help information.

        FAULT HOOKS (for partition and chaos tests; never in production):
          --fault-seed <n>              Seed for the random faults below (default 0).
          --fault-drop-percent <n>      Drop this share of incoming cluster messages.
          --fault-duplicate-percent <n> Process this share of them twice.
          --fault-delay-ms <n>          Hold every incoming cluster message this long...
          --fault-jitter-ms <n>         ...plus up to this much more (reorders them).
          --clock-skew-ms <n>           Run this node's clock this far off (may be negative).
          --test-fault <fault>          lose-acknowledged-writes: acknowledge every 4th client write
                                        without storing or publishing it (what `homeroom verify`
                                        must catch). Refused without --test-only.
          --test-only                   Confirms a --test-fault: this node will break its promises.

        Flags win over environment variables, which win over the config file.
        When ready, prints one JSON line on stdout with the bound addresses.
        Signals: SIGTERM/SIGINT stop the node; SIGHUP rereads --revoked; SIGUSR1 cuts it from the cluster,
        SIGUSR2 heals (fault hooks for tests).
        """

    struct FileConfig: Decodable {
        var name: String?
        var listen: String?
        var publish: String?
        var seeds: [String]?
        var heartbeat_ms: UInt64?
        var suspect_ms: UInt64?
        var down_ms: UInt64?
        var workers: Int?
        var log_level: String?
        var log_format: String?
        var data_dir: String?
        var token_keys: [String]?
        var app: String?
        var revoked: String?
        var cluster_key: String?
        var http_token_file: String?
        var sync: String?
        var http: String?
        var cluster_publish: String?
        var message_retention_s: UInt64?
        var session_timeout_ms: UInt64?
        var tls_cert: String?
        var tls_key: String?
        var tls_ca: String?
        var replicas: Int?
        var room_replicas: [String: Int]?
    }

    /// Copies of each room when neither --replicas, HOMEROOM_REPLICAS nor the config file says.
    static let defaultReplicas = NodeConfig.commandDefaultReplicas

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        if arguments.first == "drain" { return try DrainCommand.run(arguments.dropFirst()) }
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let environment = ProcessEnvironment.current

        var file = FileConfig()
        if let path = try reader.string("--config") ?? environment["HOMEROOM_CONFIG"] {
            file = try load(path)
        }
        func pick(_ flag: String, _ env: String, _ fileValue: String?) throws(CommandLineError) -> String? {
            try reader.string(flag) ?? environment[env] ?? fileValue
        }
        func number(_ flag: String, _ env: String, _ fileValue: UInt64?) throws(CommandLineError) -> UInt64? {
            if let value = try reader.integer(flag, in: UInt64(1)...UInt64(3_600_000)) { return value }
            if let text = environment[env] {
                guard let value = UInt64(text) else { throw .usage("\(env) must be a whole number, not '\(text)'", usage: usage) }
                return value
            }
            return fileValue
        }
        let name = try pick("--name", "HOMEROOM_NAME", file.name)
        let listen = try pick("--listen", "HOMEROOM_LISTEN", file.listen)
        let publish = try pick("--publish", "HOMEROOM_PUBLISH", file.publish)
        var seeds = try reader.strings("--seed")
        if seeds.isEmpty, let env = environment["HOMEROOM_SEEDS"] { seeds = env.split(separator: ",").map { String($0).trimmed } }
        if seeds.isEmpty { seeds = file.seeds ?? [] }
        let clusterPublish = try pick("--cluster-publish", "HOMEROOM_CLUSTER_PUBLISH", file.cluster_publish)
        var retention = try reader.integer("--message-retention", in: UInt64(0)...UInt64(315_360_000))
        if retention == nil, let text = environment["HOMEROOM_MESSAGE_RETENTION"] {
            guard let value = UInt64(text) else { throw .usage("HOMEROOM_MESSAGE_RETENTION must be a whole number of seconds, not '\(text)'", usage: usage) }
            retention = value
        }
        if retention == nil { retention = file.message_retention_s }
        var sessionTimeout = try reader.integer("--session-timeout-ms", in: UInt64(0)...UInt64(3_600_000))
        if sessionTimeout == nil, let text = environment["HOMEROOM_SESSION_TIMEOUT_MS"] {
            guard let value = UInt64(text) else { throw .usage("HOMEROOM_SESSION_TIMEOUT_MS must be a whole number of milliseconds, not '\(text)'", usage: usage) }
            sessionTimeout = value
        }
        if sessionTimeout == nil { sessionTimeout = file.session_timeout_ms }
        let heartbeat = try number("--heartbeat-ms", "HOMEROOM_HEARTBEAT_MS", file.heartbeat_ms)
        let suspect = try number("--suspect-ms", "HOMEROOM_SUSPECT_MS", file.suspect_ms)
        let down = try number("--down-ms", "HOMEROOM_DOWN_MS", file.down_ms)
        let workers = try reader.integer("--workers", in: 1...64) ?? file.workers
        let dataDirectory = try pick("--data-dir", "HOMEROOM_DATA_DIR", file.data_dir)
        let syncMode = try pick("--sync", "HOMEROOM_SYNC", file.sync) ?? "normal"
        let http = try pick("--http", "HOMEROOM_HTTP", file.http)
        var tokenKeys = try reader.strings("--token-key")
        if tokenKeys.isEmpty, let env = environment["HOMEROOM_TOKEN_KEY"] { tokenKeys = env.split(separator: ",").map { String($0).trimmed } }
        if tokenKeys.isEmpty { tokenKeys = file.token_keys ?? [] }
        let app = try pick("--app", "HOMEROOM_APP", file.app) ?? "homeroom"
        let revokedFile = try pick("--revoked", "HOMEROOM_REVOKED", file.revoked)
        let clusterKeyFile = try pick("--cluster-key", "HOMEROOM_CLUSTER_KEY", file.cluster_key)
        let httpTokenFile = try pick("--http-token-file", "HOMEROOM_HTTP_TOKEN_FILE", file.http_token_file)
        let tls = TLSSettings(certificateFile: try pick("--tls-cert", "HOMEROOM_TLS_CERT", file.tls_cert),
                              keyFile: try pick("--tls-key", "HOMEROOM_TLS_KEY", file.tls_key),
                              authorityFile: try pick("--tls-ca", "HOMEROOM_TLS_CA", file.tls_ca))
        let writesPerSecond = try reader.integer("--writes-per-second", in: 1...1_000_000)
        let joinsPerSecond = try reader.integer("--joins-per-second", in: 1...1_000_000)
        let syncsPerSecond = try reader.integer("--syncs-per-second", in: 1...1_000_000)
        let syncBytesPerSecond = try reader.integer("--sync-bytes-per-second", in: 1_024...(1 << 34))
        let maxRooms = try reader.integer("--max-rooms", in: 1...10_000_000)
        let roomCreations = try reader.integer("--room-creations-per-second", in: 1...1_000_000)
        var roomRetention = try reader.integer("--room-retention", in: UInt64(0)...UInt64(315_360_000))
        if roomRetention == nil, let text = environment["HOMEROOM_ROOM_RETENTION"] {
            guard let value = UInt64(text) else { throw .usage("HOMEROOM_ROOM_RETENTION must be a whole number of seconds, not '\(text)'", usage: usage) }
            roomRetention = value
        }
        let closedRoomRetention = try reader.integer("--closed-room-retention", in: UInt64(0)...UInt64(315_360_000))
        let maxUsers = try reader.integer("--max-users", in: 2...500_000)
        let handoffSettle = try reader.integer("--handoff-settle-ms", in: UInt64(0)...UInt64(3_600_000))
        let probeHelpers = try reader.string("--probe-helpers")
        let nodeStreams = try reader.string("--node-streams")
        var replicas = try reader.integer("--replicas", in: 0...64)
        if replicas == nil, let text = environment["HOMEROOM_REPLICAS"] {
            guard let value = Int(text) else { throw .usage("HOMEROOM_REPLICAS must be a whole number of copies, not '\(text)'", usage: usage) }
            replicas = value
        }
        if replicas == nil { replicas = file.replicas }
        var roomReplicas = file.room_replicas ?? [:]
        for entry in try reader.strings("--room-replicas") {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let copies = Int(parts[1]) else {
                throw .usage("--room-replicas takes <room>=<copies>, e.g. hall-101=5, not '\(entry)'", usage: usage)
            }
            roomReplicas[parts[0]] = copies
        }
        let permanentDown = try reader.integer("--permanent-down-ms", in: UInt64(0)...UInt64(86_400_000))
        let rewardWindow = try reader.integer("--reward-window-ms", in: UInt64(1_000)...UInt64(3_600_000))
        let maxClockDrift = try reader.integer("--max-clock-drift-ms", in: UInt64(1_000)...UInt64(3_600_000))
        let maxConnections = try reader.integer("--max-connections", in: 1...1_000_000)
        let wedgeDescriptors = try reader.integer("--wedge-descriptors", in: 16...10_000_000)
        let tokenMaxLifetime = try reader.integer("--token-max-lifetime", in: Int64(60)...Int64(31_536_000))
        let tokenLeeway = try reader.integer("--token-leeway", in: Int64(0)...Int64(300))
        let levelName = try pick("--log-level", "HOMEROOM_LOG_LEVEL", file.log_level) ?? "info"
        var faults = FaultPolicy()
        faults.seed = try reader.integer("--fault-seed", in: UInt64(0)...UInt64.max) ?? 0
        faults.dropPercent = try reader.integer("--fault-drop-percent", in: 0...100) ?? 0
        faults.duplicatePercent = try reader.integer("--fault-duplicate-percent", in: 0...100) ?? 0
        faults.delayMillis = try reader.integer("--fault-delay-ms", in: 0...60_000) ?? 0
        faults.jitterMillis = try reader.integer("--fault-jitter-ms", in: 0...60_000) ?? 0
        let skew = try reader.integer("--clock-skew-ms", in: Int64(-86_400_000)...Int64(86_400_000)) ?? 0
        let formatName = try pick("--log-format", "HOMEROOM_LOG_FORMAT", file.log_format) ?? "text"
        // Tests only, and not in the help: a node that breaks a promise on purpose, so that
        // `homeroom verify` is seen to catch it. Refused without --test-only.
        let testFaultName = try reader.string("--test-fault")
        let testOnly = reader.flag("--test-only")
        try reader.finish()
        var testFault: TestFault?
        if let testFaultName {
            guard let fault = TestFault(rawValue: testFaultName) else {
                throw .usage("unknown --test-fault '\(testFaultName)': the only one is \(TestFault.allCases.map(\.rawValue).joined(separator: ", "))", usage: usage)
            }
            guard testOnly else {
                throw .usage("--test-fault \(testFaultName) loses acknowledged writes on purpose: it is for tests, and runs only with --test-only as well", usage: usage)
            }
            testFault = fault
        }

        guard let name else { throw .usage("missing --name (or HOMEROOM_NAME): give the node a unique name", usage: usage) }
        guard let listen else { throw .usage("missing --listen (or HOMEROOM_LISTEN), e.g. tcp://127.0.0.1:7100", usage: usage) }
        guard let publish else { throw .usage("missing --publish (or HOMEROOM_PUBLISH), e.g. tcp://127.0.0.1:7101", usage: usage) }
        guard let level = Logger.Level(name: levelName) else {
            throw .usage("unknown log level '\(levelName)': use trace, debug, info, notice, warning or error", usage: usage)
        }
        guard let format = Logger.Format(rawValue: formatName) else {
            throw .usage("unknown log format '\(formatName)': use text or json", usage: usage)
        }
        var config = NodeConfig(name: name, listen: listen, publish: publish, seeds: seeds)
        if let heartbeat { config.heartbeatMillis = heartbeat }
        if let suspect { config.suspectMillis = suspect }
        if let down { config.downMillis = down }
        if let workers { config.workers = workers }
        config.dataDirectory = dataDirectory
        if let writesPerSecond { config.writesPerSecond = writesPerSecond }
        if let joinsPerSecond { config.joinsPerSecond = joinsPerSecond }
        if let syncsPerSecond { config.syncsPerSecond = syncsPerSecond }
        if let syncBytesPerSecond { config.syncBytesPerSecond = syncBytesPerSecond }
        if let maxRooms { config.maxRooms = maxRooms }
        if let roomCreations { config.roomCreationsPerSecond = roomCreations }
        if let roomRetention { config.roomRetentionSeconds = roomRetention }
        if let closedRoomRetention { config.closedRoomRetentionSeconds = closedRoomRetention }
        if let maxUsers { config.maxUsersPerRoom = maxUsers }
        if let permanentDown { config.permanentDownMillis = permanentDown }
        // The command's default: each room on 3 nodes (every node of a cluster of 3 or fewer).
        config.replicas = replicas ?? Self.defaultReplicas
        config.roomReplicas = roomReplicas
        if let handoffSettle { config.handoffSettleMillis = handoffSettle }
        if let nodeStreams {
            guard nodeStreams == "on" || nodeStreams == "off" else {
                throw .usage("--node-streams takes on or off, not '\(nodeStreams)'", usage: usage)
            }
            config.nodeStreams = nodeStreams == "on"
        }
        if let probeHelpers {
            if probeHelpers == "off" {
                config.probeHelpers = nil
            } else if let count = Int(probeHelpers), (0...16).contains(count) {
                config.probeHelpers = count
            } else {
                throw .usage("--probe-helpers takes a number of nodes from 0 to 16, or off, not '\(probeHelpers)'", usage: usage)
            }
        }
        if let rewardWindow { config.rewardWindowMillis = rewardWindow }
        if let maxClockDrift { config.maxClockDriftMillis = maxClockDrift }
        config.testFault = testFault
        if let maxConnections { config.maxConnections = maxConnections }
        if let wedgeDescriptors { config.wedgeDescriptors = wedgeDescriptors }
        do {
            if !tokenKeys.isEmpty {
                let keys = try tokenKeys.map { path throws(SecurityError) in try KeyFiles.read(path, secret: false) }
                var revoked: Set<String> = []
                if let revokedFile { revoked = try Self.readLines(revokedFile) }
                var verifier = TokenVerifier(publicKeys: keys, app: app, revokedUsers: revoked)
                if let tokenMaxLifetime { verifier.maxLifetimeSeconds = tokenMaxLifetime }
                if let tokenLeeway { verifier.leewaySeconds = tokenLeeway }
                config.tokenVerifier = verifier
                config.revokedFile = revokedFile
            }
            if let clusterKeyFile { config.clusterKey = try ClusterKey(secret: KeyFiles.read(clusterKeyFile, secret: true)) }
            if let httpTokenFile { config.operatorToken = try KeyFiles.read(httpTokenFile, secret: true) }
        } catch {
            throw .failure(error.description)
        }
        if let httpTokenFile, let token = config.operatorToken, token.count < 16 {
            throw .failure("\(httpTokenFile) holds \(token.count) bytes: an operator token is 16 bytes or more (openssl rand -hex 32 > \(httpTokenFile))")
        }
        config.clockSkewMillis = skew
        config.clusterPublish = clusterPublish
        if let retention { config.messageRetentionSeconds = retention }
        if let sessionTimeout { config.sessionTimeoutMillis = sessionTimeout }
        config.httpAddress = http
        switch syncMode {
        case "normal": config.synchronousFull = false
        case "full": config.synchronousFull = true
        default: throw .usage("--sync must be normal or full, not '\(syncMode)'", usage: usage)
        }
        do {
            try config.validate()
        } catch {
            throw .usage(error.description, usage: usage)
        }
        // A node on tls+tcp:// is dialed by its peers and dials theirs: it needs all three.
        let secure = ([listen, publish] + [clusterPublish].compactMap { $0 }).contains { $0.hasPrefix("tls+tcp://") }
        if secure && (tls.certificateFile == nil || tls.keyFile == nil || tls.authorityFile == nil) {
            throw .usage("a node on tls+tcp:// needs --tls-cert, --tls-key and --tls-ca (its peers dial it, and it dials them); docs/SECURITY.md shows how to make them", usage: usage)
        }
        if !tls.isEmpty {
            do { try TransportTLS.configure(tls) } catch { throw .failure(error.description) }
        }

        // Signals are taken by sigwait on this thread; every thread started later inherits the mask.
        var signals = sigset_t()
        sigemptyset(&signals)
        for signal in [SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP] { sigaddset(&signals, signal) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let logger = Logger(label: "homeroom", level: level, format: format)
        let node: ClusterNode
        do {
            node = try ClusterNode(config: config, logger: logger)
        } catch {
            throw .failure(error.description)
        }
        if !faults.isQuiet { node.faults = faults }
        if let testFault = config.testFault {
            logger.warning("TEST FAULT ON: this node breaks its promises on purpose; never run it with real classes", ["test-fault": testFault.rawValue])
        }
        // A drain ends with the node stopping, as SIGTERM does (sigwait below takes it).
        node.onDrained {
            // A second in which /healthz says "drained", so `homeroom node drain` can tell
            // this stop from a crash; the node holds no room by now.
            logger.notice("drained: stopping in a second", [:])
            usleep(1_000_000)
            kill(getpid(), SIGTERM)
        }
        var httpField = node.httpPort > 0 ? ",\"http\":\(quoted("http://127.0.0.1:\(node.httpPort)"))" : ""
        if clusterPublish != nil { httpField += ",\"cluster_publish\":\(quoted(node.clusterPublishAddress))" }
        print("{\"event\":\"ready\",\"name\":\(quoted(name)),\"listen\":\(quoted(node.listenAddress)),\"publish\":\(quoted(node.publishAddress)),\"replica\":\(quoted(node.replica.description))\(httpField)}")
        fflush(stdout)

        while true {
            var received: Int32 = 0
            sigwait(&signals, &received)
            switch received {
            case SIGHUP:
                node.reloadRevoked(force: true)
            case SIGUSR1:
                var faults = node.faults
                faults.isolated = true
                node.faults = faults
            case SIGUSR2:
                var healed = node.faults
                healed.isolated = false
                healed.blocked = []
                node.faults = healed
            default:
                logger.notice("stopping", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
                node.stop()
                return
            }
        }
    }

    static func readLines(_ path: String) throws(SecurityError) -> Set<String> {
        guard let users = RevokedUsersFile.read(path) else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        return users
    }

    static func load(_ path: String) throws(CommandLineError) -> FileConfig {
        let bytes = try FileText.read(path, what: "config file")
        do {
            return try JSONDecoder().decode(FileConfig.self, from: Data(bytes))
        } catch {
            throw .failure("config file \(path) is not valid: \(error); see 'homeroom node --help' for the keys")
        }
    }

    static func quoted(_ text: String) -> String { jsonString(text) }
}

extension String {
    var trimmed: String {
        var slice = Substring(self)
        while slice.first?.isWhitespace == true { slice.removeFirst() }
        while slice.last?.isWhitespace == true { slice.removeLast() }
        return String(slice)
    }
}

/// The process environment as a dictionary.
enum ProcessEnvironment {
    static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
