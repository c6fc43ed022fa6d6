@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import HomeroomSupport

/// What idle rooms cost a cluster (#20 item 4): nodes in child processes of their own on
/// loopback, every room replicated on every node, no client, no write. Per node, CPU time
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
                              note: "seconds: mean CPU-s per minute per node (each: \(perNode.map { String(format: "%.2f", $0) }.joined(separator: ", "))) over \(Int(window)) s; "
                                  + "heartbeats: \(Int(measured.heartbeatBytesPerSecond)) bytes/s per node; "
                                  + "in the window, gossip view mismatches: \(measured.mismatches), peers declared down: \(measured.downs)"
                                  + (rooms > 0 ? ", bytes/op: per room per second" : "")))
                if rooms > 0, let baseline {
                    let extra = (perNode.reduce(0, +) - baseline.cpuPerMinute.reduce(0, +)) / Double(nodes)
                    emit(BenchRow(suite: "idle", name: "idle-\(nodes)-nodes-cpu-s-per-min-per-1000-rooms", n: rooms,
                                  bytesPerOp: (measured.heartbeatBytesPerSecond - baseline.heartbeatBytesPerSecond) / Double(rooms),
                                  seconds: extra * 1_000 / Double(rooms), target: "<= 0.1 CPU-s per minute per 1,000 idle owned rooms",
                                  note: "seconds: (mean CPU-s per minute per node with \(rooms) rooms - with none, same run) per 1,000 rooms; "
                                      + "bytes/op: extra heartbeat bytes per second per node per room"))
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

    static func measure(nodes: Int, rooms: Int, windowSeconds: Double) -> Measurement? {
        guard let children = NodeProcesses.start(count: nodes, rooms: rooms) else { return nil }
        defer { NodeProcesses.finish(children) }
        guard settled(children, rooms: rooms, timeoutSeconds: 180) else { return nil }
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

    /// Whether every node lists every room, identical, and sees every
    /// other node alive, within the timeout.
    static func settled(_ children: [NodeProcesses.Child], rooms: Int, timeoutSeconds: Double) -> Bool {
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        var lastProblem = ""
        while monotonicNanos() < deadline {
            var listings: [[String: VersionVector]] = []
            lastProblem = ""
            for child in children {
                guard let hello = try? NodeProbe.hello(child.address, token: nil, timeoutMillis: 5_000) else {
                    lastProblem = "\(child.address) did not answer"
                    break
                }
                let alive = hello.peers.filter { $0.status == .alive && $0.node != hello.node }.count
                if alive < children.count - 1 { lastProblem = "\(child.address) sees \(alive) of \(children.count - 1) peers alive"; break }
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
