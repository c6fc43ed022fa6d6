@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import HomeroomSupport

/// Join time: a peer connects to a node holding a large room and receives its snapshot.
/// Node-down detection: how long the others take to declare a silent node down.
enum JoinBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        for users in quick ? [10_000] : [10_000, 100_000] {
            stages(users: users, emit: emit)
            join(users: users, emit: emit)
        }
        detection(emit: emit)
    }

    /// The join's work without the network, stage by stage (best of 3 each): the
    /// node cuts the snapshot and encodes the reply, the client decodes it and
    /// merges it into its empty replica. Also what the callgrind profiles run: each
    /// stage is its own function so `--toggle-collect` can isolate it.
    static func stages(users: Int, emit: (BenchRow) -> Void) {
        let (room, _) = MergeBench.room(users: users, type: .lectureHall)
        var cut = Double.infinity, encode = Double.infinity, decode = Double.infinity, merge = Double.infinity
        var bytes = 0
        for _ in 0..<3 {
            var snapshot = RoomState(roomID: room.roomID)
            cut = min(cut, measure { snapshot = joinSnapshotCut(room) })
            var encoded: [UInt8] = []
            encode = min(encode, measure { encoded = joinSnapshotEncode(snapshot) })
            bytes = encoded.count
            var decoded = RoomState(roomID: "")
            decode = min(decode, measure { decoded = joinSnapshotDecode(encoded) })
            var replica = RoomState(roomID: room.roomID)
            var changes = 0
            merge = min(merge, measure { changes = joinSnapshotMerge(&replica, decoded) })
            precondition(replica == room && changes > users, "the client's replica is not the node's room")
        }
        let total = cut + encode + decode + merge
        func ms(_ seconds: Double) -> String { String(Int((seconds * 1000).rounded())) }
        emit(BenchRow(suite: "join", name: "snapshot-in-process-\(users / 1000)k-users", n: users, bytesPerOp: Double(bytes) / Double(users),
                      seconds: total, target: "<= 0.5 s for 100k users (with the network)",
                      note: "no network: cut \(ms(cut)) ms, encode \(ms(encode)) ms, decode \(ms(decode)) ms, merge into an empty replica \(ms(merge)) ms"))
    }

    /// What `ClusterNode.handleJoin` cuts for a first join.
    @inline(never)
    static func joinSnapshotCut(_ room: RoomState) -> RoomState { room.snapshot().visible(to: "late") }

    @inline(never)
    static func joinSnapshotEncode(_ snapshot: RoomState) -> [UInt8] {
        WireCodec.encode(WireEnvelope(roomID: snapshot.roomID, sender: ReplicaID(1), sequence: 1, clock: .zero,
                                      message: .joinResponse(WireMessage.JoinResponse(session: "late-1", host: ReplicaID(1), incarnation: 1,
                                                                                      state: snapshot, isSnapshot: true))))
    }

    @inline(never)
    static func joinSnapshotDecode(_ bytes: [UInt8]) -> RoomState {
        do {
            guard case let .joinResponse(response) = try WireCodec.decode(bytes, limits: .largeReplies).message else {
                fatalError("not a join response")
            }
            return response.state
        } catch {
            fatalError("the join response did not decode: \(error)")
        }
    }

    @inline(never)
    static func joinSnapshotMerge(_ replica: inout RoomState, _ snapshot: RoomState) -> Int { replica.merge(snapshot).count }

    static func join(users: Int, emit: (BenchRow) -> Void) {
        guard let nodes = ClusterBench.makeCluster(1) else { return }
        defer { for node in nodes { node.stop() } }
        let room = "hall"
        ClusterBench.joinUsers(nodes[0], room: room, users: users)
        let logger = Logger(label: "bench", level: .error)
        var samples: [Double] = []
        var bytes = 0
        for attempt in 0..<3 {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 60_000
            options.requestTimeoutMillis = 10_000
            let client = RoomClient(room: room, user: "late-\(attempt)", role: .student, name: "Late", endpoints: [NodeEndpoint(nodes[0].listenAddress)],
                                    options: options, logger: logger)
            let seconds = measure { try? client.connect() }
            guard client.replica.users.count >= users else { client.close(); continue }
            samples.append(seconds)
            bytes = Int(nodes[0].metrics["reply_bytes_total"])
            client.close()
        }
        guard let best = samples.min() else { return }
        let median = samples.sorted()[samples.count / 2]
        // Reply bytes of one join (the node's counter also holds the small hello replies).
        let replyBytes = bytes / max(1, samples.count)
        let raw = RawTransfer.requestReply(replyBytes: replyBytes, count: 3)
        if let raw {
            emit(BenchRow(suite: "raw-nng", name: "reqrep-tcp-\(replyBytes / 1000)kB-reply", n: raw.count, bytesPerOp: Double(replyBytes),
                          p50Micros: raw.median * 1e6, seconds: raw.best,
                          note: "REQ/REP on tcp loopback, a small request answered with \(replyBytes) prebuilt bytes (the join reply's size), nothing decoded"))
        }
        emit(BenchRow(suite: "join", name: "snapshot-join-\(users / 1000)k-users-tcp", n: users, bytesPerOp: Double(replyBytes) / Double(users),
                      p50Micros: median * 1e6, seconds: best, ratioVsRaw: raw.map { best / $0.best }, target: "<= 0.5 s for 100k users",
                      note: "RoomClient.connect: hello, subscribe, join, decode and merge the whole room; bytes/op is reply bytes per user; "
                          + "ratio is the best join vs the best raw reply of the same size"))
    }

    static func detection(emit: (BenchRow) -> Void) {
        // Default timings: heartbeat 200 ms, suspect 1 s, down 2 s.
        let logger = Logger(label: "bench", level: .error)
        var nodes: [ClusterNode] = []
        for index in 0..<3 {
            let config = NodeConfig(name: "detect-\(index)-\(UInt32.random(in: 0...UInt32.max))", listen: "tcp://127.0.0.1:0",
                                    publish: "tcp://127.0.0.1:0", seeds: nodes.first.map { [$0.listenAddress] } ?? [])
            guard let node = try? ClusterNode(config: config, logger: logger) else { return }
            nodes.append(node)
        }
        defer { for node in nodes { node.stop() } }
        guard ClusterBench.waitUntil(seconds: 10, { nodes.allSatisfy { $0.alivePeers.count == 2 } }) else { return }
        let silent = nodes[2]
        var faults = FaultPolicy()
        faults.isolated = true
        let clock = ContinuousClock()
        let start = clock.now
        silent.faults = faults   // stops its heartbeats at once, as a crash would
        let declared = ClusterBench.waitUntil(seconds: 10) { nodes[0].metrics["peers_declared_down_total"] >= 1 && nodes[1].metrics["peers_declared_down_total"] >= 1 }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        emit(BenchRow(suite: "failure-detection", name: "node-down-detection-3-nodes-default-timings", n: 1, seconds: seconds,
                      target: "<= 3 s", note: declared ? "a node goes silent; both others declare it down (heartbeat 200 ms, suspect 1 s, down 2 s); no raw row: the time is the timers'" : "INCOMPLETE: not declared within 10 s"))
    }
}
