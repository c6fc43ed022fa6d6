@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import HomeroomSupport

/// What idle rooms cost a cluster (#20 item 4): nodes in child processes of their own on
/// loopback (with `--netns`, each in a network namespace), every room replicated on every node, no client, no write. Per node, CPU time
/// from the kernel and the heartbeat bytes it published, over a window that starts once
/// every node holds every room, identical. The baseline is the same
/// cluster with no room, in the same run; the marginal cost per 1,000 rooms is the
/// difference, against the target of at most 0.1 CPU-s per minute per 1,000 idle rooms.
enum IdleCostBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let window = quick ? 8.0 : 30.0
        let clusters = quick ? [3] : [3, 6, 9]
        let roomCounts = quick ? [0, 1_000] : [0, 1_000, 10_000]
        for nodes in clusters {
            var baseline: Measurement?
            for rooms in roomCounts {
                guard let measured = measure(nodes: nodes, rooms: rooms, windowSeconds: window) else {
                    fputs("idle: \(nodes) nodes with \(rooms) rooms did not settle; no row\n", stderr)
                    continue
                }
                if rooms == 0 { baseline = measured }
                let perNode = measured.cpuPerMinute
                emit(BenchRow(suite: "idle", name: "idle-\(nodes)-nodes-\(rooms)-rooms-cpu-s-per-min-per-node", n: nodes,
                              bytesPerOp: rooms > 0 ? measured.heartbeatBytesPerSecond / Double(rooms) : nil,
                              seconds: perNode.reduce(0, +) / Double(nodes),
                              note: "\(BenchNamespaces.whereNodesRun); seconds: mean CPU-s per minute per node (each: \(perNode.map { String(format: "%.2f", $0) }.joined(separator: ", "))) over \(Int(window)) s; "
                                  + "heartbeats: \(Int(measured.heartbeatBytesPerSecond)) bytes/s per node; "
                                  + "in the window, gossip view mismatches: \(measured.mismatches), peers declared down: \(measured.downs)"
                                  + (rooms > 0 ? ", bytes/op: per room per second" : "")))
                if rooms > 0, let baseline {
                    let extra = (perNode.reduce(0, +) - baseline.cpuPerMinute.reduce(0, +)) / Double(nodes)
                    emit(BenchRow(suite: "idle", name: "idle-\(nodes)-nodes-cpu-s-per-min-per-1000-rooms", n: rooms,
                                  bytesPerOp: (measured.heartbeatBytesPerSecond - baseline.heartbeatBytesPerSecond) / Double(rooms),
                                  seconds: extra * 1_000 / Double(rooms), target: "<= 0.1 CPU-s per minute per 1,000 idle owned rooms",
                                  note: "\(BenchNamespaces.whereNodesRun); seconds: (mean CPU-s per minute per node with \(rooms) rooms - with none, same run) per 1,000 rooms; "
                                      + "bytes/op: extra heartbeat bytes per second per node per room"))
                }
            }
        }
    }

    /// The same with placement (`--suite idle-placed`): `--replicas 3`, each room joined
    /// once at its first owner (followed from any node) by a raw client, so a node holds
    /// about rooms x 3 / nodes of them; the marginal row is per 1,000 rooms a node owns.
    static func runPlaced(quick: Bool, emit: (BenchRow) -> Void) {
        let replicas = 3
        let window = quick ? 8.0 : 30.0
        let clusters = quick ? [6] : [3, 6, 9]
        let roomCounts = quick ? [0, 1_000] : [0, 1_000, 10_000]
        for nodes in clusters {
            var baseline: Measurement?
            for rooms in roomCounts {
                guard let measured = measure(nodes: nodes, rooms: rooms, windowSeconds: window, replicas: replicas) else {
                    fputs("idle-placed: \(nodes) nodes with \(rooms) rooms did not settle; no row\n", stderr)
                    continue
                }
                if rooms == 0 { baseline = measured }
                let perNode = measured.cpuPerMinute
                let owned = Double(rooms * min(replicas, nodes)) / Double(nodes)
                emit(BenchRow(suite: "idle-placed", name: "idle-placed-\(nodes)-nodes-\(rooms)-rooms-cpu-s-per-min-per-node", n: nodes,
                              bytesPerOp: rooms > 0 ? measured.heartbeatBytesPerSecond / owned : nil,
                              seconds: perNode.reduce(0, +) / Double(nodes),
                              note: "\(BenchNamespaces.whereNodesRun); \(replicas) replicas, about \(Int(owned)) rooms owned per node; seconds: mean CPU-s per minute per node (each: \(perNode.map { String(format: "%.2f", $0) }.joined(separator: ", "))) over \(Int(window)) s; "
                                  + "heartbeats: \(Int(measured.heartbeatBytesPerSecond)) bytes/s per node; in the window, gossip view mismatches: \(measured.mismatches), peers declared down: \(measured.downs)"
                                  + (rooms > 0 ? ", bytes/op: per owned room per second" : "")))
                if rooms > 0, let baseline {
                    let extra = (perNode.reduce(0, +) - baseline.cpuPerMinute.reduce(0, +)) / Double(nodes)
                    emit(BenchRow(suite: "idle-placed", name: "idle-placed-\(nodes)-nodes-cpu-s-per-min-per-1000-owned-rooms", n: rooms,
                                  seconds: extra * 1_000 / owned, target: "<= 0.1 CPU-s per minute per 1,000 idle owned rooms",
                                  note: "\(BenchNamespaces.whereNodesRun); seconds: (mean CPU-s per minute per node with \(rooms) rooms on \(replicas) replicas - with none, same run) per 1,000 rooms a node owns"))
                }
            }
        }
    }

    struct Measurement {
        var cpuPerMinute: [Double]
        var heartbeatBytesPerSecond: Double
        /// Summed over the nodes, during the window.
        var mismatches: UInt64
        var downs: UInt64
    }

    static func measure(nodes: Int, rooms: Int, windowSeconds: Double, replicas: Int = 0) -> Measurement? {
        guard let children = NodeProcesses.start(count: nodes, rooms: replicas > 0 ? 0 : rooms, replicas: replicas) else { return nil }
        defer { NodeProcesses.finish(children) }
        if replicas > 0 {
            guard settled(children, rooms: 0, timeoutSeconds: 60) else { return nil }
            for room in 0..<rooms where WriteCapacityBench.join(room: room, children: children, named: NodeProcesses.roomName) == nil {
                fputs("idle-placed: room \(room) could not be joined\n", stderr)
                return nil
            }
            guard settledPlaced(children, rooms: rooms, replicas: replicas, timeoutSeconds: 180) else { return nil }
        } else {
            guard settled(children, rooms: rooms, timeoutSeconds: 180) else { return nil }
        }
        // Rooms just settled: let the last repairs and compactions pass.
        usleep(3_000_000)
        let cpuBefore = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        let bytesBefore = children.map { NodeProcesses.metric($0, "heartbeat_bytes_total") }
        let mismatchesBefore = children.map { NodeProcesses.metric($0, "gossip_view_mismatches_total") }
        let downsBefore = children.map { NodeProcesses.metric($0, "peers_declared_down_total") }
        let started = monotonicNanos()
        usleep(UInt32(windowSeconds * 1e6))
        let cpuAfter = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        // The counters are reported once a second: let one more report come.
        usleep(1_100_000)
        let bytesAfter = children.map { NodeProcesses.metric($0, "heartbeat_bytes_total") }
        let mismatches = zip(mismatchesBefore, children.map { NodeProcesses.metric($0, "gossip_view_mismatches_total") }).map { $1 &- $0 }.reduce(0, +)
        let downs = zip(downsBefore, children.map { NodeProcesses.metric($0, "peers_declared_down_total") }).map { $1 &- $0 }.reduce(0, +)
        let seconds = Double(monotonicNanos() - started) / 1e9
        let cpuWindow = windowSeconds
        let bytes = zip(bytesBefore, bytesAfter).map { Double($1 &- $0) }.reduce(0, +) / Double(nodes)
        return Measurement(cpuPerMinute: zip(cpuBefore, cpuAfter).map { ($1 - $0) * 60 / cpuWindow },
                           heartbeatBytesPerSecond: bytes / seconds, mismatches: mismatches, downs: downs)
    }

    /// Every child's answer to a hello, in order, as long as each sees every other child
    /// alive; otherwise the answers so far and what is wrong.
    static func meshedHellos(_ children: [NodeProcesses.Child]) -> (hellos: [WireMessage.Heartbeat], problem: String) {
        var hellos: [WireMessage.Heartbeat] = []
        for child in children {
            guard let hello = try? NodeProbe.hello(child.address, token: nil, timeoutMillis: 5_000) else {
                return (hellos, "\(child.address) did not answer")
            }
            let alive = hello.peers.filter { $0.status == .alive && $0.node != hello.node }.count
            if alive < children.count - 1 { return (hellos, "\(child.address) sees \(alive) of \(children.count - 1) peers alive") }
            hellos.append(hello)
        }
        return (hellos, "")
    }

    /// With placement: whether every room is listed by exactly its `replicas` owners,
    /// identical, and every node sees every other alive, within the timeout.
    static func settledPlaced(_ children: [NodeProcesses.Child], rooms: Int, replicas: Int, timeoutSeconds: Double) -> Bool {
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        var lastProblem = ""
        while monotonicNanos() < deadline {
            lastProblem = ""
            var copies: [String: [VersionVector]] = [:]
            let (hellos, problem) = meshedHellos(children)
            lastProblem = problem
            for hello in hellos { for digest in hello.rooms { copies[digest.roomID, default: []].append(digest.seen) } }
            if lastProblem.isEmpty {
                let wanted = min(replicas, children.count)
                let misplaced = copies.filter { $0.value.count != wanted }.count
                let uneven = copies.filter { entry in entry.value.dropFirst().contains { $0 != entry.value[0] } }.count
                if copies.count == rooms && misplaced == 0 && uneven == 0 { return true }
                lastProblem = "\(copies.count) of \(rooms) rooms listed, \(misplaced) not on exactly \(wanted) nodes, \(uneven) differing between copies"
            }
            usleep(500_000)
        }
        fputs("idle-placed: not settled after \(Int(timeoutSeconds)) s: \(lastProblem)\n", stderr)
        return false
    }

    /// Whether every node lists every room, identical, and sees every
    /// other node alive, within the timeout.
    static func settled(_ children: [NodeProcesses.Child], rooms: Int, timeoutSeconds: Double) -> Bool {
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        var lastProblem = ""
        while monotonicNanos() < deadline {
            var listings: [[String: VersionVector]] = []
            lastProblem = ""
            let (hellos, problem) = meshedHellos(children)
            lastProblem = problem
            for (child, hello) in zip(children, hellos) where lastProblem.isEmpty {
                if hello.rooms.count != rooms { lastProblem = "\(child.address) holds \(hello.rooms.count) of \(rooms) rooms"; break }
                listings.append(Dictionary(uniqueKeysWithValues: hello.rooms.map { ($0.roomID, $0.seen) }))
            }
            if lastProblem.isEmpty {
                if listings.dropFirst().allSatisfy({ $0 == listings[0] }) { return true }
                lastProblem = "the rooms differ between nodes"
            }
            usleep(500_000)
        }
        fputs("idle: not settled after \(Int(timeoutSeconds)) s: \(lastProblem)\n", stderr)
        return false
    }
}
