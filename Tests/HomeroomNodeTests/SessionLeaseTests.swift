@preconcurrency import Glibc
import HomeroomCore
import Testing
@testable import HomeroomNode

/// Session leases: a client that vanishes without leaving goes offline once its node
/// stops hearing its syncs; live clients, idle or not, stay online.
@Suite(.serialized) struct SessionLeaseTests {
    @Test func aVanishedClientGoesOfflineAndALiveOneStays() throws {
        let cluster = try TestCluster(size: 2, label: "lease") { _, config in config.sessionTimeoutMillis = 1_500 }
        #expect(cluster.meshed())
        let watcher = cluster.client("watcher", .observer, node: 0, room: "lease")
        let idle = cluster.client("idle", .student, node: 1, room: "lease")
        let ghost = cluster.client("ghost", .student, node: 1, room: "lease")
        defer { watcher.close(); idle.close(); ghost.close() }
        try watcher.connect()
        try idle.connect()
        try ghost.connect()
        #expect(eventually(5) { watcher.replica.isOnline("ghost") && watcher.replica.isOnline("idle") })
        // Both clients have synced naming their sessions: the node holds their leases.
        #expect(eventually(5) { cluster.nodes[1].leasedSessions == 2 })
        let started = WallClock.monotonicMillis()
        ghost.abandon()   // as if killed: no leave_session is ever sent
        #expect(eventually(6) { !watcher.replica.isOnline("ghost") }, "the vanished client is still shown online")
        let offlineAfter = WallClock.monotonicMillis() - started
        #expect(offlineAfter >= 1_400, "ended before its lease ran out: \(offlineAfter) ms")
        #expect(cluster.nodes[1].metrics["sessions_expired_total"] == 1)
        // The idle client only syncs, and stays online well past the timeout.
        usleep(2_000_000)
        #expect(watcher.replica.isOnline("idle"))
        #expect(cluster.nodes.allSatisfy { $0.room("lease")?.isOnline("idle") == true })
    }

    @Test func aClientWhoseLeaseRanOutJoinsAgainByItself() throws {
        let cluster = try TestCluster(size: 1, label: "lease-heal") { _, config in config.sessionTimeoutMillis = 1_000 }
        let watcher = cluster.client("watcher", .observer, node: 0, room: "heal")
        // Syncs every 2.5 s: slower than the lease, as a frozen process would be.
        let slow = cluster.client("slow", .student, node: 0, room: "heal") { $0.syncIntervalMillis = 2_500 }
        defer { watcher.close(); slow.close() }
        try watcher.connect()
        try slow.connect()
        #expect(eventually(3) { watcher.replica.isOnline("slow") })
        // The lease ends the session; at its next sync the client finds out and joins again.
        #expect(eventually(6) { !watcher.replica.isOnline("slow") }, "the lease never ran out")
        #expect(eventually(6) { watcher.replica.isOnline("slow") }, "the client did not join again")
        // The watcher can see the rejoin before the reply reaches the client itself.
        #expect(eventually(5) { slow.connectionState == .connected })
    }

    @Test func leasesAreOptional() throws {
        var config = NodeConfig(name: "x", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0")
        config.sessionTimeoutMillis = 0
        #expect(throws: Never.self) { try config.validate() }
        config.sessionTimeoutMillis = 500
        #expect(throws: NodeConfigError.self) { try config.validate() }
    }
}
