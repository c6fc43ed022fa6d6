import HomeroomTestSupport
import Foundation
import HomeroomCore
import HomeroomEngine
import HomeroomWire
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

/// The tick never waits on the network: pulls from a peer that never answers (cut off,
/// paused) run off it, so this node's heartbeats keep their period and its other
/// peers never take it for down.
@Suite struct PullsOffTheTickTests {
    @Test func aPeerThatNeverAnswersAPullDoesNotHoldUpHeartbeats() throws {
        // A black hole: a TCP listener that never accepts, so a request to it is sent
        // and never answered (each waits the node's whole request timeout).
        let hole = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(hole >= 0)
        defer { close(hole) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(hole, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        #expect(bound == 0 && listen(hole, 64) == 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(hole, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)

        let cluster = try TestCluster(size: 1, label: "pull-off-tick", heartbeatMillis: 50) { _, config in
            config.requestTimeoutMillis = 1_000
            config.downMillis = 60_000        // the silent peer stays "alive": its pulls keep coming back
            config.suspectMillis = 30_000
        }
        let node = cluster.nodes[0]
        let sniffer = try Sniffer(node.publishAddress, topic: Topics.heartbeat)
        defer { sniffer.close() }
        // The silent peer advertised newer state for eight rooms: eight pulls wait on it.
        let silent = ReplicaID(name: "silent-peer")
        node.state.withLock { state in
            _ = state.peers.heard(WireMessage.Heartbeat(node: silent, incarnation: 1, address: "tcp://127.0.0.1:\(port)",
                                                        publishAddress: "tcp://127.0.0.1:\(port)"), nowMillis: WallClock.monotonicMillis())
            for index in 0..<8 { state.pulls.want(NodeState.SyncKey(peer: silent, room: "waiting-\(index)")) }
        }
        let start = sniffer.messages.count
        usleep(3_000_000)
        // Heartbeats as they were sent (their own clock), across those 3 s.
        let sent = sniffer.messages.dropFirst(start).compactMap { message -> UInt64? in
            guard let envelope = try? WireCodec.decode(Array(message.dropFirst(Topics.heartbeat.count)), limits: .default),
                  case let .heartbeat(heartbeat) = envelope.message else { return nil }
            return heartbeat.sentAtMillis
        }
        let gaps = zip(sent.dropFirst(), sent).map { $0 &- $1 }
        // At a 50 ms period, 3 s holds about 60; a tick held by pulls sends one per 8 s.
        #expect(sent.count >= 20, "\(sent.count) heartbeats in 3 s")
        #expect((gaps.max() ?? .max) < 900, "the longest silence between heartbeats was \(gaps.max() ?? 0) ms")
        // The pulls did happen (and wait): one at a time, the rest put back.
        #expect(node.state.withLock { $0.pulls.isPulling(silent) || !$0.pulls.pending.isEmpty })
    }
}
