import HomeroomTestSupport
import Foundation
import HomeroomCore
import Testing
@testable import HomeroomNode

/// Real `homeroom node` processes on tcp loopback: partition one away, heal, converge.
@Suite(.serialized) struct MultiProcessTests {
    @Test func threeProcessesPartitionHealAndConverge() throws {
        let first = try NodeProcess(name: "mp-a", seeds: [])
        let second = try NodeProcess(name: "mp-b", seeds: [first.listen])
        let third = try NodeProcess(name: "mp-c", seeds: [first.listen])
        let nodes = [first, second, third]
        defer { for node in nodes { node.stop() } }
        let (logger, _) = Logger.capturing(label: "mp", level: .warning)
        func client(_ user: String, _ role: Role, _ node: NodeProcess) -> RoomClient {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 100
            options.requestTimeoutMillis = 500
            let endpoints = [node] + nodes.filter { $0 !== node }
            return RoomClient(room: "physics", user: user, role: role, name: user, endpoints: endpoints.map { NodeEndpoint($0.listen) },
                              options: options, logger: logger)
        }
        let teacher = client("teacher", .teacher, first)
        let bob = client("bob", .student, second)
        let carol = client("carol", .student, third)
        let clients = [teacher, bob, carol]
        defer { for client in clients { client.close() } }
        for client in clients { try client.connect() }
        func converged() -> Bool { clients.allSatisfy { $0.replica == teacher.replica } }
        #expect(eventually(10) { clients.allSatisfy { $0.replica.users.count == 3 } && converged() },
                "clients did not converge before the partition")

        third.signal(SIGUSR1)   // cut mp-c from the cluster (its clients still reach it)
        // The cut is in force once mp-c hears nobody (its suspect period, 500 ms, after the signal).
        #expect(eventually(10) {
            (try? NodeProbe.hello(third.listen, token: nil, timeoutMillis: 1_000))?.peers.allSatisfy { $0.status != .alive } == true
        }, "mp-c still hears its peers after SIGUSR1")
        for _ in 0..<10 { try teacher.write(.reward(user: "carol", amount: 1)) }
        try teacher.write(.setStage(user: "bob", on: true))
        try carol.write(.setHand(user: "carol", raised: true))
        usleep(500_000)
        #expect(carol.replica.users["carol"]?.rewardTotal ?? 0 < 10, "the partition did not hold")
        #expect(teacher.replica.raisedHands.isEmpty, "the partition did not hold")

        third.signal(SIGUSR2)   // heal
        let healed = eventually(10) { converged() }
        #expect(healed, "no convergence after heal; logs:\n\(nodes.map(\.log).joined(separator: "\n"))")
        #expect(carol.replica.users["carol"]?.rewardTotal == 10)
        #expect(teacher.replica.raisedHands == ["carol"])
        #expect(carol.replica.stageWinners == ["bob"])
        for node in nodes {
            #expect(!node.log.contains("Fatal error"), "\(node.name) crashed")
        }
    }

    /// A node process is killed and restarted on the same addresses from its store; its
    /// client's links redial by themselves, so the client never rejoins, but the new
    /// boot ended its session with the old incarnation. The node reclaims the session
    /// when the client syncs; a session whose client is gone (nothing syncs) stays over.
    /// (Processes, not in-process nodes: the restart must free the node's ports the way
    /// a real crash does.)
    @Test
    func aClientAttachedAcrossItsNodesRestartStaysOnline() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-reclaim-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let first = try NodeProcess(name: "rc-a", seeds: [])
        let leased = ["--data-dir", data, "--session-timeout-ms", "1000", "--http", "http://127.0.0.1:0"]
        var second = try NodeProcess(name: "rc-b", seeds: [first.listen], extra: leased)
        defer { first.stop(); second.stop() }
        let (logger, _) = Logger.capturing(label: "reclaim", level: .warning)
        func client(_ user: String, _ role: Role, _ node: NodeProcess) -> RoomClient {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 100
            options.requestTimeoutMillis = 500
            // Only its node, and no switching: the restart goes unnoticed, as when a
            // request is simply resent on the redialled link.
            options.failuresBeforeReconnect = 1_000
            return RoomClient(room: "pres", user: user, role: role, name: user, endpoints: [NodeEndpoint(node.listen)], options: options, logger: logger)
        }
        let watcher = client("watcher", .observer, first)
        let carol = client("carol", .student, second)
        defer { watcher.close(); carol.close() }
        try watcher.connect()
        try carol.connect()
        #expect(eventually(10) { watcher.replica.isOnline("carol") })

        // Node b crashes and comes back on the same addresses.
        let (listen, publish) = (second.listen, second.publish)
        second.crash()
        second = try NodeProcess(name: "rc-b", seeds: [first.listen], extra: leased + ["--listen", listen, "--publish", publish])
        // The new boot ended the old incarnation's sessions; carol's next sync reclaims hers.
        #expect(eventually(10) { second.metric("homeroom_sessions_reclaimed_total") == 1 },
                "carol's session was not reclaimed")
        #expect(eventually(10) { watcher.replica.isOnline("carol") && carol.replica.isOnline("carol") },
                "carol stayed offline after her node restarted under her")
        #expect(carol.connectionState == .connected)
        // When carol's client vanishes, the reclaimed copy's lease runs out: no ghost.
        carol.abandon()
        #expect(eventually(6) { !watcher.replica.isOnline("carol") }, "a reclaimed session outlived its client")
    }
}
