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
    static let heartbeatMillis: UInt64 = 200, suspectMillis: UInt64 = 1_000, downMillis: UInt64 = 2_000
    static let defaults = ["--heartbeat-ms", "\(heartbeatMillis)", "--suspect-ms", "\(suspectMillis)", "--down-ms", "\(downMillis)",
                           "--http", "http://127.0.0.1:0"]

    static func cluster(_ extra: [String] = defaults) throws -> [NodeProcess] {
        let a = try NodeProcess(name: "fd-a", seeds: [], extra: extra)
        let b = try NodeProcess(name: "fd-b", seeds: [a.listen], extra: extra)
        let c = try NodeProcess(name: "fd-c", seeds: [a.listen], extra: extra)
        let nodes = [a, b, c]
        #expect(eventually(20) { nodes.allSatisfy { $0.metric("homeroom_peers{status=\"alive\"}") == 2 } }, "the cluster did not form")
        return nodes
    }

    /// The `silent_ms` of each "peer declared down" line of a node's log: how long the
    /// peer had been silent, by the declaring node's own clock, when it was declared down.
    static func declaredDownSilences(_ node: NodeProcess) -> [UInt64] {
        node.log.split(separator: "\n").filter { $0.contains("peer declared down") }.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("silent_ms=") }.flatMap { UInt64($0.dropFirst("silent_ms=".count)) }
        }
    }

    /// The gaps between a node's consecutive heartbeats (as it stamped them) in what a
    /// sniffer recorded from `start` on.
    static func heartbeatGaps(_ sniffer: Sniffer, from start: Int) -> [UInt64] {
        let sent = sniffer.messages.dropFirst(start).compactMap { message -> UInt64? in
            guard let envelope = try? WireCodec.decode(Array(message.dropFirst(Topics.heartbeat.count)), limits: .default),
                  case let .heartbeat(heartbeat) = envelope.message else { return nil }
            return heartbeat.sentAtMillis
        }
        return zip(sent.dropFirst(), sent).map { $0 > $1 ? $0 - $1 : 0 }
    }

    /// Declared down by silence: not before the down period, and within a few heartbeat
    /// periods of it, by the declaring node's own account (`silent_ms` in its log), so the
    /// bound does not depend on how fast this test's polls run. The test's own clock only
    /// bounds the whole (generously: a hang, or a detector off by seconds).
    @Test func crashedNodeIsDeclaredDownInTheDownPeriod() throws {
        let nodes = try Self.cluster()
        defer { for node in nodes { node.stop() } }
        #expect(nodes[0].get("/healthz")?.status == 200)
        let killed = Date()
        nodes[2].crash()
        let declared = eventually(15) { nodes[0].metric("homeroom_peers{status=\"dead\"}") == 1 }
        let seconds = Date().timeIntervalSince(killed)
        #expect(declared, "not declared down \(seconds) s after the crash")
        // The line is written before the metric moves; read it once it is there.
        var silences: [UInt64] = []
        _ = eventually(5) { silences = Self.declaredDownSilences(nodes[0]); return !silences.isEmpty }
        print("FailureDetectionTests: crashed node declared down after \(String(format: "%.2f", seconds)) s (test clock); silent_ms \(silences)")
        #expect(silences.count == 1, "one 'peer declared down' line with silent_ms: \(nodes[0].log.suffix(1_000))")
        // Not early: a detector that gives up on a peer before the down period fails here.
        #expect(silences.allSatisfy { $0 >= Self.downMillis }, "declared down after \(silences) ms of silence, under --down-ms \(Self.downMillis)")
        // Not late: the sweep runs every tick; 1.5 s (7 heartbeat periods) allows a node that
        // a loaded machine runs late, not a detector that waits twice the down period.
        #expect(silences.allSatisfy { $0 < Self.downMillis + 1_500 }, "declared down only after \(silences) ms of silence (--down-ms \(Self.downMillis))")
        #expect(seconds < 10, "declared down \(seconds) s after the crash")
    }

    /// A loaded node is not declared down falsely. The load has to be fair to the detector
    /// (--heartbeat-ms 200, --suspect-ms 1000, --down-ms 2000): a node's heartbeats must keep
    /// coming more often than the down period. Four spinning threads on two cores for four
    /// seconds (on their own they delay a heartbeat by milliseconds, so they could not tell
    /// a sound detector from one that gives up after one missed heartbeat), and within
    /// them one node frozen (SIGSTOP) as long as a fair stall can be: its silence (the
    /// freeze, plus up to a period since its last heartbeat) leaves four heartbeat periods
    /// of lateness before the down period, so 1 s, the suspect period here. A detector that
    /// declares a node down after a missed heartbeat, or at the suspect period, fails
    /// here even on an idle machine. The heartbeats recorded show that the freeze happened
    /// and that the load stayed fair, so a failure says which of the two was wrong.
    @Test func busyCPUsCauseNoFalseDownDeclaration() throws {
        let nodes = try Self.cluster()
        let frozen = nodes[2]
        defer { frozen.signal(SIGCONT); for node in nodes { node.stop() } }
        let sniffers = try nodes.map { try Sniffer($0.publish, topic: Topics.heartbeat) }
        defer { for sniffer in sniffers { sniffer.close() } }
        #expect(eventually(10) { sniffers.allSatisfy { !$0.messages.isEmpty } }, "no heartbeat recorded")
        let starts = sniffers.map(\.messages.count)
        let stop = Atomic<Bool>(false)
        let spinners = (0..<4).map { _ in
            Thread {
                var x: UInt64 = 1
                while !stop.load(ordering: .relaxed) { x = x &* 6364136223846793005 &+ 1442695040888963407 }
                _ = x
            }
        }
        for spinner in spinners { spinner.start() }
        let loadStarted = Date()
        usleep(1_000_000)
        let lateness = 4 * Self.heartbeatMillis
        let freeze = Self.downMillis - Self.heartbeatMillis - lateness
        #expect(freeze >= Self.suspectMillis, "the freeze (\(freeze) ms) should reach the suspect period")
        frozen.signal(SIGSTOP)
        usleep(useconds_t(freeze * 1_000))
        frozen.signal(SIGCONT)
        usleep(2_000_000)
        stop.store(true, ordering: .relaxed)
        let loaded = Date().timeIntervalSince(loadStarted)
        // Back to normal: everyone hears everyone (a node declared down and back would show in the counters below).
        #expect(eventually(10) { nodes.allSatisfy { $0.metric("homeroom_peers{status=\"alive\"}") == 2 } }, "the cluster did not settle after the load")
        let gaps = zip(sniffers, starts).map { Self.heartbeatGaps($0, from: $1).max() ?? .max }
        let summary = zip(nodes, gaps).map { "\($0.name) \($1) ms" }.joined(separator: ", ")
        print("FailureDetectionTests: \(String(format: "%.1f", loaded)) s of load, \(freeze) ms freeze of \(frozen.name); longest heartbeat gaps: \(summary)")
        // The freeze did silence the frozen node past several heartbeat periods...
        #expect(gaps[2] >= freeze && gaps[2] != .max, "the frozen node's heartbeats show no freeze: \(summary)")
        // ...and the load was fair: no node went silent for the down period (if one did, the
        // machine starved it, and a down would have been right: not a detector bug).
        #expect(gaps.allSatisfy { $0 < Self.downMillis }, "the machine stalled a node for the down period: not a fair load (\(summary))")
        for node in nodes {
            #expect(node.metric("homeroom_peers_declared_down_total") == 0,
                    "\(node.name) declared a live node down (longest heartbeat gaps: \(summary)); silent_ms \(Self.declaredDownSilences(node))")
        }
    }

    /// A stopping node ends its users' sessions itself. The down period here is 30 s, so
    /// the user going offline within the wait cannot be the failure detector's doing.
    @Test func gracefulShutdownTakesUsersOfflineAtOnce() throws {
        let nodes = try Self.cluster(["--heartbeat-ms", "200", "--suspect-ms", "1000", "--down-ms", "30000", "--http", "http://127.0.0.1:0"])
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
        #expect(eventually(10) { watcher.replica.isOnline("leaver") })
        let stopped = Date()
        nodes[2].stop()   // SIGTERM
        let offline = eventually(10) { !watcher.replica.isOnline("leaver") }
        let seconds = Date().timeIntervalSince(stopped)
        print("FailureDetectionTests: offline \(String(format: "%.2f", seconds)) s after SIGTERM")
        #expect(offline, "the user was still online \(seconds) s after their node stopped")
        #expect(nodes[0].metric("homeroom_peers_declared_down_total") == 0 && nodes[1].metric("homeroom_peers_declared_down_total") == 0,
                "the stopped node was declared down: its sessions ended by the detector, not by the stop")
    }

    /// After a restart the pulls stop: sync bytes no longer grow. Polled: done once they
    /// stay still for 3 s (a pull loop repeating within that shows), on an idle machine
    /// about 3 s after the restart; bounded at 40 s.
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
        let restarted = Date()
        // It hears its peer again (and pulls what it lacks, if anything: often a few hundred
        // bytes at once, or nothing when every write reached its store before the crash).
        #expect(eventually(20) { b.metric("homeroom_peers{status=\"alive\"}") == 1 }, "the restarted node did not hear its peer")
        let quiet = 3.0
        var last = b.metric("homeroom_sync_bytes_total") ?? -1
        var stillSince = Date()
        var settled = false
        while !settled && Date().timeIntervalSince(restarted) < 40 {
            usleep(250_000)
            let now = b.metric("homeroom_sync_bytes_total") ?? -2
            if now != last { (last, stillSince) = (now, Date()) }
            settled = Date().timeIntervalSince(stillSince) >= quiet
        }
        print("FailureDetectionTests: sync traffic still for \(quiet) s, \(String(format: "%.1f", Date().timeIntervalSince(restarted))) s after the restart")
        #expect(settled, "sync traffic still flowing 40 s after the restart (\(last) bytes, last growth \(Date().timeIntervalSince(stillSince)) s ago)")
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

        // Each pull waits 5 s for its answer: a tick held by one would leave a silence of
        // 5 s, far above anything a loaded machine does to a 50 ms period.
        let requestTimeoutMillis: UInt64 = 5_000
        let cluster = try TestCluster(size: 1, label: "pull-off-tick", heartbeatMillis: 50) { _, config in
            config.requestTimeoutMillis = requestTimeoutMillis
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
        // A pull is waiting on the black hole from here on.
        #expect(eventually(10) { node.state.withLock { $0.pulls.isPulling(silent) } }, "no pull started")
        let start = sniffer.messages.count
        // Forty heartbeats (2 s at the 50 ms period) while it waits; a tick held by the
        // pull sends one per 5 s, so the wait runs out (15 s) with about three.
        func heartbeatsSent() -> [UInt64] {
            sniffer.messages.dropFirst(start).compactMap { message -> UInt64? in
                guard let envelope = try? WireCodec.decode(Array(message.dropFirst(Topics.heartbeat.count)), limits: .default),
                      case let .heartbeat(heartbeat) = envelope.message else { return nil }
                return heartbeat.sentAtMillis
            }
        }
        #expect(eventually(15) { heartbeatsSent().count >= 40 }, "\(heartbeatsSent().count) heartbeats while a pull waited")
        let sent = heartbeatsSent()
        let gaps = zip(sent.dropFirst(), sent).map { $0 &- $1 }
        // Heartbeats as they were sent (their own clock): the longest silence stays far
        // below the pull's 5 s (half of it: 50 heartbeat periods of a loaded machine).
        #expect((gaps.max() ?? .max) < requestTimeoutMillis / 2, "the longest silence between heartbeats was \(gaps.max() ?? 0) ms")
        // The pulls did happen (and wait): one at a time, the rest put back.
        #expect(node.state.withLock { $0.pulls.isPulling(silent) || !$0.pulls.pending.isEmpty })
    }
}
