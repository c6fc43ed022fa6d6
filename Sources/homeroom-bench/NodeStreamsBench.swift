import Foundation
import HomeroomCore
import HomeroomNode
import HomeroomTestSupport

/// What a node receives from its peers with placement: nine `homeroom node` processes
/// keeping each room on three (`--replicas 3`), a writer per room, and each node's
/// received delta bytes (`homeroom_cluster_bytes_in_total`) over the window. Run twice in
/// the same sitting, on fresh clusters with the same workload: with node streams (the
/// default: a node gets the deltas of the rooms it owns or holds) and with
/// `--node-streams off` (every peer's deltas, as before). With R = 3 of N = 9, a room's
/// delta is needed by R - 1 = 2 of the sequencer's 8 peers, so the ideal ratio is 0.25.
enum NodeStreamsBench {
    struct Phase {
        var deltaBytesPerNode: [Double] = []
        var heartbeatBytesPerNode: [Double] = []
        var cpuPerNode: [Double] = []
        var applied = 0.0
        var ignored = 0.0
        var acknowledged = 0
        var refused = 0
        var seconds = 0.0
    }

    static let nodes = 9
    static let replicas = 3

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let rooms = quick ? 36 : 180
        let window = quick ? 8.0 : 20.0
        let name = "\(nodes)-nodes-R\(replicas)-\(rooms)-rooms"
        // The node children are the release `homeroom` beside this binary, unless HOMEROOM_BIN says otherwise.
        if ProcessInfo.processInfo.environment["HOMEROOM_BIN"] == nil {
            let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("homeroom").path
            guard FileManager.default.isExecutableFile(atPath: beside) else {
                emit(BenchRow(suite: "node-streams", name: name, n: 0, note: "INCOMPLETE: no homeroom binary beside homeroom-bench (swift build -c release --product homeroom)"))
                return
            }
            setenv("HOMEROOM_BIN", beside, 1)
        }
        let phases: [(label: String, extra: [String])] = [("streams", []), ("all-deltas", ["--node-streams", "off"])]
        var results: [String: Phase] = [:]
        for (label, extra) in phases {
            switch measure(rooms: rooms, window: window, extra: extra, label: label) {
            case .success(let phase): results[label] = phase
            case .failure(let problem):
                emit(BenchRow(suite: "node-streams", name: "\(label)-\(name)", n: 0, note: "INCOMPLETE: \(problem.reason)"))
                return
            }
        }
        guard let streams = results["streams"], let all = results["all-deltas"] else { return }
        func mean(_ values: [Double]) -> Double { values.isEmpty ? 0 : values.reduce(0, +) / Double(values.count) }
        let ideal = Double(replicas - 1) / Double(nodes - 1)
        for (label, phase) in [("streams", streams), ("all-deltas", all)] {
            let perNode = mean(phase.deltaBytesPerNode)
            emit(BenchRow(suite: label == "streams" ? "node-streams" : "node-streams-baseline", name: "node-received-delta-bytes-\(label)-\(name)",
                          n: nodes, bytesPerOp: perNode, seconds: phase.seconds,
                          ratioVsRaw: label == "streams" ? perNode / max(mean(all.deltaBytesPerNode), 1) : nil,
                          target: label == "streams" ? "ratio near the ideal \(ideal) ((R-1)/(N-1))" : nil,
                          note: "bytes/op: delta bytes per second one node's cluster SUB socket received (homeroom_cluster_bytes_in_total{topic=deltas}), "
                              + "mean of \(nodes) nodes (min \(Int(phase.deltaBytesPerNode.min() ?? 0)), max \(Int(phase.deltaBytesPerNode.max() ?? 0))); "
                              + (label == "streams" ? "node streams (the default); ratio: against the same run's --node-streams off phase; "
                                                    : "baseline, same run and workload on a fresh cluster: --node-streams off, every peer's deltas over SP/TCP; ")
                              + "heartbeat bytes/s per node \(Int(mean(phase.heartbeatBytesPerNode))); deltas applied \(Int(phase.applied)), ignored as not-owner "
                              + "\(Int(phase.ignored)) (all nodes); node CPU-s per minute \(String(format: "%.2f", mean(phase.cpuPerNode) * 60 / phase.seconds)); "
                              + "\(nodes) release homeroom node processes, --replicas \(replicas), \(rooms) rooms with one teacher RoomClient each (sent to its "
                              + "room's owners by not-owner), 2 room-property writes/s per room paced over \(Int(phase.seconds)) s: \(phase.acknowledged) acknowledged, "
                              + "\(phase.refused) refused or failed"))
        }
        // Against the node's own rooms' traffic: what it would receive if it got exactly
        // the deltas its owned rooms need, estimated from the same run's all-deltas phase.
        let own = mean(all.deltaBytesPerNode) * ideal
        emit(BenchRow(suite: "node-streams", name: "node-received-vs-owned-rooms-traffic-\(name)", n: nodes, bytesPerOp: mean(streams.deltaBytesPerNode),
                      ratioVsRaw: mean(streams.deltaBytesPerNode) / max(own, 1), target: "~1x its owned rooms' traffic",
                      note: "ratio: a node's received delta bytes/s with node streams / its owned rooms' traffic, taken as the same run's all-deltas "
                          + "bytes/s per node x (R-1)/(N-1) = \(Int(own)) B/s (every room has R owners; each delta is needed by the R-1 other owners of "
                          + "the sequencer's N-1 peers)"))
    }

    struct Problem: Error { var reason: String }

    static func measure(rooms: Int, window: Double, extra: [String], label: String) -> Result<Phase, Problem> {
        let base = ["--replicas", String(replicas), "--http", "http://127.0.0.1:0", "--session-timeout-ms", "0",
                    "--writes-per-second", "1000000", "--joins-per-second", "1000000", "--room-creations-per-second", "1000000"] + extra
        var children: [NodeProcess] = []
        defer { for child in children { child.stop() } }
        do {
            for index in 0..<nodes {
                children.append(try NodeProcess(name: "\(label)-\(index)", seeds: children.first.map { [$0.listen] } ?? [], heartbeatMillis: 200,
                                                logLevel: "error", extra: base))
            }
        } catch {
            return .failure(Problem(reason: "a node did not start: \(error)"))
        }
        // Every node knows the eight others (or placement would differ between them).
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline, !children.allSatisfy({ ($0.metric("homeroom_peers{status=\"alive\"}") ?? 0) >= Double(nodes - 1) }) { usleep(100_000) }
        guard children.allSatisfy({ ($0.metric("homeroom_peers{status=\"alive\"}") ?? 0) >= Double(nodes - 1) }) else {
            return .failure(Problem(reason: "the \(nodes) nodes did not all see each other within 30 s"))
        }
        let (logger, _) = Logger.capturing(label: "node-streams-bench", level: .error)
        let endpoints = children.map { NodeEndpoint($0.listen) }
        var clients: [RoomClient] = []
        defer { for client in clients { client.close() } }
        for index in 0..<rooms {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 30_000
            let client = RoomClient(room: "school-\(index)", user: "teacher", role: .teacher, name: "Teacher", endpoints: endpoints, options: options, logger: logger)
            do { try client.connect() } catch { return .failure(Problem(reason: "room \(index)'s teacher did not connect: \(error)")) }
            clients.append(client)
        }
        usleep(1_000_000)
        func reading() -> [(deltas: Double, beats: Double, cpu: Double)] {
            children.map { child in
                (child.metric("homeroom_cluster_bytes_in_total{topic=\"deltas\"}") ?? 0,
                 child.metric("homeroom_cluster_bytes_in_total{topic=\"heartbeats\"}") ?? 0,
                 NodeProcesses.cpuSeconds(child.process.processIdentifier) ?? 0)
            }
        }
        let before = reading()
        let appliedBefore = children.reduce(0.0) { $0 + ($1.metric("homeroom_deltas_in_total") ?? 0) }
        let ignoredBefore = children.reduce(0.0) { $0 + ($1.metric("homeroom_deltas_ignored_total{reason=\"not-owner\"}") ?? 0) }
        let start = Date()
        var acknowledged = 0, refused = 0
        let ticks = Int(window * 2)
        for tick in 0..<ticks {
            let due = start.addingTimeInterval(Double(tick) * 0.5)
            let wait = due.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            for (index, client) in clients.enumerated() {
                do {
                    _ = try client.write(.setRoomProperty(key: "page", value: Array("page \(tick) of room \(index)".utf8), cause: "bench"))
                    acknowledged += 1
                } catch {
                    refused += 1
                }
            }
        }
        // The last writes reach the other owners.
        usleep(500_000)
        let seconds = Date().timeIntervalSince(start)
        let after = reading()
        var phase = Phase()
        phase.seconds = seconds
        phase.deltaBytesPerNode = zip(before, after).map { ($1.deltas - $0.deltas) / seconds }
        phase.heartbeatBytesPerNode = zip(before, after).map { ($1.beats - $0.beats) / seconds }
        phase.cpuPerNode = zip(before, after).map { $1.cpu - $0.cpu }
        phase.applied = children.reduce(0.0) { $0 + ($1.metric("homeroom_deltas_in_total") ?? 0) } - appliedBefore
        phase.ignored = children.reduce(0.0) { $0 + ($1.metric("homeroom_deltas_ignored_total{reason=\"not-owner\"}") ?? 0) } - ignoredBefore
        phase.acknowledged = acknowledged
        phase.refused = refused
        return .success(phase)
    }
}
