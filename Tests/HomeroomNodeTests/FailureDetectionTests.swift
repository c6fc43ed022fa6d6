import HomeroomTestSupport
import Foundation
import HomeroomCore
import Synchronization
import Testing
@testable import HomeroomNode

/// Failure detection and presence with real processes and default timings
/// (heartbeat 200 ms, suspect 1 s, down 2 s).
@Suite(.serialized) struct FailureDetectionTests {
    static let defaults = ["--heartbeat-ms", "200", "--suspect-ms", "1000", "--down-ms", "2000", "--http", "http://127.0.0.1:0"]

    static func cluster() throws -> [NodeProcess] {
        let a = try NodeProcess(name: "fd-a", seeds: [], extra: defaults)
        let b = try NodeProcess(name: "fd-b", seeds: [a.listen], extra: defaults)
        let c = try NodeProcess(name: "fd-c", seeds: [a.listen], extra: defaults)
        let nodes = [a, b, c]
        #expect(eventually(10) { nodes.allSatisfy { $0.metric("homeroom_peers{status=\"alive\"}") == 2 } }, "the cluster did not form")
        return nodes
    }

    @Test func crashedNodeIsDeclaredDownWithinThreeSeconds() throws {
        let nodes = try Self.cluster()
        defer { for node in nodes { node.stop() } }
        #expect(nodes[0].get("/healthz")?.status == 200)
        let killed = Date()
        nodes[2].crash()
        let declared = eventually(6) { nodes[0].metric("homeroom_peers{status=\"dead\"}") == 1 }
        let seconds = Date().timeIntervalSince(killed)
        #expect(declared && seconds < 3.0, "declared down after \(seconds) s")
    }

    @Test func busyCPUsCauseNoFalseDownDeclaration() throws {
        let nodes = try Self.cluster()
        defer { for node in nodes { node.stop() } }
        // Four spinning threads on two cores for four seconds.
        let stop = Atomic<Bool>(false)
        let spinners = (0..<4).map { _ in
            Thread {
                var x: UInt64 = 1
                while !stop.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1442695040888963407 }
                _ = x
            }
        }
        for spinner in spinners { spinner.start() }
        usleep(4_000_000)
        stop.store(true, ordering: .relaxed)
        for node in nodes {
            #expect(node.metric("homeroom_peers_declared_down_total") == 0, "\(node.name) declared a live node down under load")
        }
    }

    @Test func gracefulShutdownTakesUsersOfflineAtOnce() throws {
        let nodes = try Self.cluster()
        defer { for node in nodes { node.stop() } }
        let (logger, _) = Logger.capturing(label: "fd", level: .error)
        var options = RoomClient.Options()
        options.syncIntervalMillis = 100
        let watcher = RoomClient(room: "bye", user: "watcher", role: .observer, name: "W", endpoints: [NodeEndpoint(nodes[0].listen)],
                                 options: options, logger: logger)
        let leaver = RoomClient(room: "bye", user: "leaver", role: .student, name: "L", endpoints: [NodeEndpoint(nodes[2].listen)],
                                options: options, logger: logger)
        defer { watcher.close(); leaver.close() }
        try watcher.connect()
        try leaver.connect()
        #expect(eventually(5) { watcher.replica.isOnline("leaver") })
        let stopped = Date()
        nodes[2].stop()   // SIGTERM
        let offline = eventually(3) { !watcher.replica.isOnline("leaver") }
        let seconds = Date().timeIntervalSince(stopped)
        #expect(offline && seconds < 1.5, "the user went offline after \(seconds) s, not at once")
    }

    @Test func syncTrafficSettlesAfterARestart() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-settle-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let a = try NodeProcess(name: "st-a", seeds: [], extra: Self.defaults + ["--data-dir", data + "/a"])
        var b = try NodeProcess(name: "st-b", seeds: [a.listen], extra: Self.defaults + ["--data-dir", data + "/b"])
        defer { a.stop(); b.stop() }
        let (logger, _) = Logger.capturing(label: "st", level: .error)
        let teacher = RoomClient(room: "settle", user: "t", role: .teacher, name: "T", endpoints: [NodeEndpoint(a.listen)], logger: logger)
        defer { teacher.close() }
        try teacher.connect()
        // 100 writes: within the per-user burst (60/s for 2 s), so none is rate-limited.
        for index in 0..<100 { try teacher.write(.setRoomProperty(key: "k\(index % 20)", value: [UInt8(index % 256)], cause: "load")) }
        b.crash()
        b = try NodeProcess(name: "st-b", seeds: [a.listen], extra: Self.defaults + ["--data-dir", data + "/b"])
        // Within 10 s of the restart, the pulls stop: sync bytes no longer grow.
        usleep(8_000_000)
        let first = b.metric("homeroom_sync_bytes_total") ?? -1
        usleep(2_000_000)
        let second = b.metric("homeroom_sync_bytes_total") ?? -2
        #expect(first == second, "sync traffic still flowing 10 s after the restart (\(first) -> \(second) bytes)")
    }
}
