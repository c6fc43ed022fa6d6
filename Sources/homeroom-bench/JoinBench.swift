@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode

/// Join time: a peer connects to a node holding a large room and receives its snapshot.
/// Node-down detection: how long the others take to declare a silent node down.
enum JoinBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        for users in quick ? [10_000] : [10_000, 100_000] { join(users: users, emit: emit) }
        detection(emit: emit)
    }

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
        emit(BenchRow(suite: "join", name: "snapshot-join-\(users / 1000)k-users-tcp", n: users, bytesPerOp: Double(bytes) / Double(max(1, samples.count)) / Double(users),
                      p50Micros: median * 1e6, seconds: best, target: "<= 0.5 s for 100k users",
                      note: "RoomClient.connect: hello, subscribe, join, decode and merge the whole room; bytes/op is reply bytes per user"))
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
                      target: "<= 3 s", note: declared ? "a node goes silent; both others declare it down (heartbeat 200 ms, suspect 1 s, down 2 s)" : "INCOMPLETE: not declared within 10 s"))
    }
}
