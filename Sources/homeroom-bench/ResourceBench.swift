@preconcurrency import Glibc
import Foundation
import HomeroomCore
import HomeroomNode
import HomeroomTestSupport
import HomeroomWire
import Synchronization
import HomeroomSupport

/// A node's descriptors and threads before and after a minute of adversarial traffic
/// (docs/NNG.md): raw connections of every hostile kind against its REP and PUB
/// addresses from four threads, and real clients joining and leaving meanwhile. The
/// "before" rows are the baseline, measured in the same run on the same node; the
/// target is the "after" rows within 8 descriptors and 2 threads of them, and the hello
/// round trip within 3x its baseline.
enum ResourceBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let seconds = quick ? 10.0 : 60.0
        let logger = Logger(label: "bench", level: .error)
        var config = NodeConfig(name: "res-a", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: [])
        config.joinsPerSecond = 1_000_000
        config.roomCreationsPerSecond = 1_000_000
        guard let node = try? ClusterNode(config: config, logger: logger) else {
            fputs("resources: the node did not start\n", stderr)
            return
        }
        defer { node.stop() }
        func port(_ url: String) -> UInt16 { UInt16(url.split(separator: ":").last!)! }
        let cycle: @Sendable (String) -> Bool = { user in
            let client = RoomClient(room: "bench", user: user, role: .student, name: user,
                                    endpoints: [NodeEndpoint(node.listenAddress)], logger: logger)
            defer { client.close() }
            return (try? client.connect()) != nil
        }
        func helloMicros() -> Double? {
            guard let requester = try? SPRequester() else { return nil }
            defer { requester.close() }
            guard (try? requester.dial(node.listenAddress)) != nil else { return nil }
            let hello = WireCodec.encode(WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                                      message: .heartbeat(WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: ""))))
            var samples: [Double] = []
            for _ in 0..<200 {
                let start = monotonicNanos()
                guard (try? requester.request(hello, timeout: .seconds(5))) != nil else { return nil }
                samples.append(Double(monotonicNanos() - start) / 1_000)
            }
            return samples.sorted()[samples.count / 2]
        }
        _ = cycle("warm-up")
        guard let helloBefore = helloMicros() else { fputs("resources: hello failed\n", stderr); return }
        usleep(300_000)
        let before = (ProcessCounts.descriptors(), ProcessCounts.threads())

        let finished = Atomic<Int>(0)
        let connections = Atomic<Int>(0)
        let joins = Atomic<Int>(0)
        let targets: [(UInt16, UInt16)] = [(port(node.listenAddress), 0x30), (port(node.publishAddress), 0x21)]
        let kinds = Attack.allCases
        let started = monotonicNanos()
        // Four attacking threads and one of clients joining and leaving, for `seconds`.
        let lanes = (0..<5).map { lane in
            Thread {
                var i = lane
                while Double(monotonicNanos() - started) / 1e9 < seconds {
                    if lane == 4 {
                        if cycle("cycler-\(i % 100)") { joins.add(1, ordering: .relaxed) }
                    } else {
                        let (p, peer) = targets[i % 2]
                        kinds[(i / 2) % kinds.count].run(port: p, peerID: peer)
                        connections.add(1, ordering: .relaxed)
                    }
                    i += 5
                }
                finished.add(1, ordering: .relaxed)
            }
        }
        for lane in lanes { lane.start() }
        while finished.load(ordering: .relaxed) < lanes.count { usleep(50_000) }
        // The node drops what it should within its 5 s header timeout; then count.
        var after = (ProcessCounts.descriptors(), ProcessCounts.threads())
        for _ in 0..<80 where after.0 > before.0 + 8 || after.1 > before.1 + 2 {
            usleep(100_000)
            after = (ProcessCounts.descriptors(), ProcessCounts.threads())
        }
        let helloAfter = helloMicros()
        let made = connections.load(ordering: .relaxed)
        let note = "\(made) adversarial connections and \(joins.load(ordering: .relaxed)) client join/leave cycles in \(Int(seconds)) s, one node in this process"
        emit(BenchRow(suite: "resources", name: "descriptors before", n: made, seconds: Double(before.0), target: "baseline", note: "value in the seconds column: descriptors"))
        emit(BenchRow(suite: "resources", name: "descriptors after", n: made, seconds: Double(after.0), ratioVsRaw: Double(after.0) / Double(max(1, before.0)),
                      target: "within 8 of before: \(after.0 <= before.0 + 8 ? "met" : "missed")", note: note))
        emit(BenchRow(suite: "resources", name: "threads before", n: made, seconds: Double(before.1), target: "baseline", note: "value in the seconds column: threads"))
        emit(BenchRow(suite: "resources", name: "threads after", n: made, seconds: Double(after.1), ratioVsRaw: Double(after.1) / Double(max(1, before.1)),
                      target: "within 2 of before: \(after.1 <= before.1 + 2 ? "met" : "missed")", note: note))
        emit(BenchRow(suite: "resources", name: "hello round trip before", n: 200, p50Micros: helloBefore, target: "baseline"))
        if let helloAfter {
            emit(BenchRow(suite: "resources", name: "hello round trip after", n: 200, p50Micros: helloAfter, ratioVsRaw: helloAfter / helloBefore,
                          target: "within 3x of before: \(helloAfter <= helloBefore * 3 ? "met" : "missed")"))
        } else {
            emit(BenchRow(suite: "resources", name: "hello round trip after", n: 0, target: "within 3x of before: missed", note: "no answer"))
        }
    }
}
