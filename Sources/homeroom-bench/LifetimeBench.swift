@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import HomeroomSupport

/// A room through a simulated semester over real nodes (two in-process nodes, the
/// first with a store, restarted twice per tenth; the second without one, restarted
/// once per tenth, so it has a new replica id each time): 60 users x 500 sessions each,
/// 20,000 messages, 10,000 rewards, 1,000 property writes, 20 restarts. Rows at 10%
/// and at 100% of it: the join reply a newcomer downloads, the snapshot the store
/// keeps, the node's start (load) time and the process's resident bytes. The target
/// is every 100% row within 1.5x of its 10% row: what grows with the semester's
/// length rather than with the class is a leak.
enum LifetimeBench {
    struct Plan {
        var users = 60, sessionsPerUser = 500, messages = 20_000, rewards = 10_000, properties = 1_000, restarts = 20
        static func quick() -> Plan { Plan(users: 20, sessionsPerUser: 100, messages: 4_000, rewards: 2_000, properties: 200, restarts: 10) }
    }

    struct Checkpoint {
        var joinReplyBytes = 0
        var snapshotBytes = 0
        var startSeconds = 0.0
        var residentBytes = 0
        var sessionRecords = 0
        var rewardRecords = 0
        /// Version-vector entries plus dead-incarnation marks: what the room keeps per replica id.
        var replicaEntries = 0
        var peerStores = 0
    }

    static let room = "semester"

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let plan = quick ? Plan.quick() : Plan()
        let directory = "/tmp/homeroom-bench-lifetime-\(getpid())"
        defer { _ = system("rm -rf '\(directory)'") }
        let logger = Logger(label: "bench", level: .error)
        func config(_ name: String, seeds: [String], data: String?) -> NodeConfig {
            var config = NodeConfig(name: name, listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: seeds)
            config.heartbeatMillis = 200
            config.suspectMillis = 1_000
            config.downMillis = 3_000
            config.dataDirectory = data
            // The semester is compressed into a minute: the per-user limits are for people.
            config.writesPerSecond = 1_000_000
            config.joinsPerSecond = 1_000_000
            config.roomCreationsPerSecond = 1_000_000
            // ... and rewards fold a second after they were issued, not a minute.
            config.rewardWindowMillis = 1_000
            config.maxClockDriftMillis = 1_000
            return config
        }
        guard var peer = try? ClusterNode(config: config("life-b", seeds: [], data: nil), logger: logger) else {
            fputs("lifetime: the peer node did not start\n", stderr)
            return
        }
        defer { peer.stop() }
        let storedConfig = config("life-a", seeds: [peer.listenAddress], data: directory)
        guard var node = try? ClusterNode(config: storedConfig, logger: logger) else {
            fputs("lifetime: the stored node did not start\n", stderr)
            return
        }
        var counter: UInt64 = 0
        func write(_ author: UserID, _ role: Role, _ operation: HomeroomCore.Operation) {
            counter += 1
            let ack = node.submit(room: room, Write(author: author, authorRole: role, authorCounter: counter, operation: operation))
            if ack.status != .accepted && ack.status != .duplicate {
                fputs("lifetime: \(operation.name) refused: \(ack.errorCode) \(ack.message)\n", stderr)
            }
        }
        func joinTeacher() { _ = node.join(room: room, user: "teacher", role: .teacher, session: "teacher-\(counter)", name: "Teacher") }
        joinTeacher()

        var checkpoints: [Int: Checkpoint] = [:]
        var previousMessage: UInt64 = 0
        var sessionNumber = 0
        var peerRewards: Int64 = 0
        let phases = 10
        for phase in 1...phases {
            for user in 0..<plan.users {
                for _ in 0..<(plan.sessionsPerUser / phases) {
                    sessionNumber += 1
                    let session = "u\(user)-\(sessionNumber)"
                    _ = node.join(room: room, user: "student-\(user)", role: .student, session: session, name: "Student \(user)")
                    write("student-\(user)", .student, .leaveSession(user: "student-\(user)", session: session))
                }
            }
            for _ in 0..<(plan.messages / phases) {
                write("teacher", .teacher, .sendMessage(type: "chat", payload: Array("message \(counter)".utf8), previous: previousMessage))
                previousMessage = counter
            }
            for index in 0..<(plan.rewards / phases) { write("teacher", .teacher, .reward(user: "student-\(index % plan.users)", amount: 1)) }
            for index in 0..<(plan.properties / phases) {
                write("teacher", .teacher, .setRoomProperty(key: "key-\(index % 10)", value: Array("value \(counter)".utf8), cause: "plan"))
            }
            // Let the presence loop fold what the phase ended (sessions, and rewards once
            // the window has passed), and the peer catch up.
            _ = ClusterBench.waitUntil(seconds: 15) {
                guard let state = node.room(room) else { return false }
                let records = state.users.values.reduce(0) { $0 + $1.sessions.count }
                let rewards = state.users.values.reduce(0) { $0 + $1.rewards.count }
                return records <= plan.users * RoomState.sessionFoldThreshold + 2 && rewards < plan.users * RoomState.rewardFoldThreshold
                    && peer.room(room)?.seen == state.seen
            }
            var checkpoint = Checkpoint()
            for restart in 0..<(plan.restarts / phases) {
                node.stop()
                var started: ClusterNode?
                let seconds = measure { started = try? ClusterNode(config: storedConfig, logger: logger) }
                guard let started else {
                    fputs("lifetime: the node did not restart from its store\n", stderr)
                    return
                }
                node = started
                if restart == 0 { checkpoint.startSeconds = seconds }
                joinTeacher()
            }
            // The peer has no store: each start is a new replica id, which the next one retires.
            peer.stop()
            guard let restartedPeer = try? ClusterNode(config: config("life-b", seeds: [node.listenAddress], data: nil), logger: logger) else {
                fputs("lifetime: the peer node did not restart\n", stderr)
                return
            }
            peer = restartedPeer
            // Each of the peer's stores hosts a visitor's session and sequences a reward, so it
            // leaves state in the room (a version-vector entry, a session, a reward record).
            _ = ClusterBench.waitUntil(seconds: 10) { peer.room(room) != nil }
            _ = peer.join(room: room, user: "visitor", role: .student, session: "visitor-\(phase)", name: "Visitor")
            counter += 1
            _ = peer.submit(room: room, Write(author: "teacher", authorRole: .teacher, authorCounter: counter,
                                              operation: .reward(user: "visitor", amount: 1, issuedAtMillis: WallClock.nowMillis())))
            peerRewards += 1
            guard phase == 1 || phase == phases else { continue }
            let newest = peer.replica
            let retired = ClusterBench.waitUntil(seconds: 20) {
                guard let state = node.room(room), let copy = peer.room(room) else { return false }
                return state.predecessors(of: newest).isEmpty && copy.seen == state.seen
            }
            if !retired { fputs("lifetime: the peer's older replica ids were not retired within 20 s\n", stderr) }
            checkpoint.peerStores = phase + 1
            if let total = node.room(room)?.users["visitor"]?.rewardTotal, total != peerRewards {
                fputs("lifetime: the visitor's rewards are \(total), not \(peerRewards)\n", stderr)
            }
            checkpoint.joinReplyBytes = joinReplyBytes(node.listenAddress, user: "newcomer-\(phase)")
            if let state = node.room(room) {
                checkpoint.snapshotBytes = WireCodec.encodePatch(state.snapshot()).count
                checkpoint.sessionRecords = state.users.values.reduce(0) { $0 + $1.sessions.count }
                checkpoint.rewardRecords = state.users.values.reduce(0) { $0 + $1.rewards.count }
                checkpoint.replicaEntries = state.seen.origins.count + state.deadIncarnations.count
            }
            checkpoint.residentBytes = HeapUsage.bytesInUse()
            checkpoints[phase] = checkpoint
        }
        node.stop()
        guard let first = checkpoints[1], let last = checkpoints[phases] else { return }
        let scale = "\(plan.users) users x \(plan.sessionsPerUser) sessions, \(plan.messages) messages, \(plan.rewards) rewards, \(plan.properties) property writes, \(plan.restarts) restarts"
        func rows(_ name: String, _ a: Double, _ b: Double, bytes: Bool) {
            for (label, value) in [("10%", a), ("100%", b)] {
                emit(BenchRow(suite: "lifetime", name: "semester-\(label)-\(name)", n: label == "10%" ? 1 : 10,
                              bytesPerOp: bytes ? value : nil, seconds: bytes ? nil : value,
                              target: "100% within 1.5x of 10%",
                              note: label == "10%" ? "after a tenth of: \(scale)" : "\((b / max(a, 1e-9) * 100).rounded() / 100)x the 10% row (\(b <= a * 1.5 ? "met" : "missed"))"))
            }
        }
        rows("join-reply-bytes", Double(first.joinReplyBytes), Double(last.joinReplyBytes), bytes: true)
        rows("stored-snapshot-bytes", Double(first.snapshotBytes), Double(last.snapshotBytes), bytes: true)
        rows("node-start-seconds", first.startSeconds, last.startSeconds, bytes: false)
        rows("resident-bytes", Double(first.residentBytes), Double(last.residentBytes), bytes: true)
        for (label, value) in [("10%", first.sessionRecords), ("100%", last.sessionRecords)] {
            emit(BenchRow(suite: "lifetime", name: "semester-\(label)-session-records", n: value,
                          target: "at most \(plan.users * RoomState.sessionFoldThreshold + 2) (users x the fold threshold)",
                          note: "session records in the room (n), after \(label == "10%" ? plan.sessionsPerUser / 10 : plan.sessionsPerUser) sessions per user"))
        }
        for (label, checkpoint) in [("10%", first), ("100%", last)] {
            emit(BenchRow(suite: "lifetime", name: "semester-\(label)-replica-entries", n: checkpoint.replicaEntries,
                          target: "at most 6 (two nodes: their own and private-topic origins, and a dead-incarnation mark each)",
                          note: "version-vector entries plus dead-incarnation marks in the room (n), after the storeless peer's \(checkpoint.peerStores) replica ids"))
        }
        for (label, value) in [("10%", first.rewardRecords), ("100%", last.rewardRecords)] {
            emit(BenchRow(suite: "lifetime", name: "semester-\(label)-reward-records", n: value,
                          target: "below \(plan.users * RoomState.rewardFoldThreshold) (users x the fold threshold)",
                          note: "reward records left unfolded in the room (n), after \(label == "10%" ? plan.rewards / 10 : plan.rewards) rewards (window 1 s)"))
        }
    }

    /// Bytes of the reply a newcomer gets for a first join (the whole room).
    static func joinReplyBytes(_ address: String, user: UserID) -> Int {
        guard let requester = try? SPRequester(limits: SPLimitsConfig(maxMessageBytes: 256 << 20)) else { return 0 }
        defer { requester.close() }
        do {
            try requester.dial(address)
            let join = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                                    message: .joinRequest(WireMessage.JoinRequest(user: user, role: .observer, session: "\(user)-1", name: user)))
            return try requester.request(WireCodec.encode(join), timeout: .seconds(10)).count
        } catch {
            fputs("lifetime: the newcomer's join failed: \(error)\n", stderr)
            return 0
        }
    }
}
