import Foundation
import HomeroomCore
import Testing
@testable import HomeroomNode

@Suite(.serialized) struct ClusterTests {
    @Test func threeNodesMeshFromOneSeedAndPeersConverge() throws {
        let cluster = try TestCluster(size: 3, label: "mesh")
        #expect(cluster.meshed(), "nodes did not learn each other from one seed")
        let teacher = cluster.client("teacher", .teacher, node: 0, room: "maths")
        let alice = cluster.client("alice", .student, node: 1, room: "maths")
        let bob = cluster.client("bob", .student, node: 2, room: "maths")
        defer { for client in [teacher, alice, bob] { client.close() } }
        try teacher.connect()
        try alice.connect()
        try bob.connect()
        // A join made through another node reaches this one in a moment (user-not-found until then).
        #expect(eventually(5) { ["alice", "bob"].allSatisfy { teacher.replica.users[$0]?.isKnown == true } })
        #expect(eventually(5) { cluster.nodes[0].room("maths").map { room in ["alice", "bob"].allSatisfy { room.users[$0]?.isKnown == true } } ?? false })
        try teacher.write(.setStage(user: "alice", on: true))
        try alice.write(.setDevice(user: "alice", device: .camera, on: true))
        try teacher.write(.setPrivilege(user: "alice", device: .camera, allowed: true))
        try teacher.write(.reward(user: "bob", amount: 2))
        try bob.write(.setHand(user: "bob", raised: true))
        #expect(eventually(5) { cluster.converged(room: "maths", clients: [teacher, alice, bob]) })
        let roster = bob.roster
        #expect(roster.rows.first { $0.user == "alice" }?.camera == .live)
        #expect(roster.rows.first { $0.user == "bob" }?.rewards == 2)
        #expect(roster.raisedHands == ["bob"])
    }

    @Test func refusedWritesCarryCodes() throws {
        let cluster = try TestCluster(size: 1, label: "refuse")
        let alice = cluster.client("alice", .student, node: 0, room: "r1")
        defer { alice.close() }
        try alice.connect()
        do {
            try alice.write(.setStage(user: "alice", on: true))
            Issue.record("a student put itself on stage")
        } catch {
            #expect(error.code == "not-allowed")
            #expect(error.description.contains("only a teacher or an assistant"))
        }
        do {
            try alice.write(.reward(user: "nobody", amount: 1))
            Issue.record("a student rewarded someone")
        } catch {
            #expect(error.code == "not-allowed")
        }
    }

    @Test func partitionedNodeCatchesUpAfterHeal() throws {
        let cluster = try TestCluster(size: 3, label: "part")
        #expect(cluster.meshed())
        let teacher = cluster.client("teacher", .teacher, node: 0, room: "hist")
        let carol = cluster.client("carol", .student, node: 2, room: "hist")
        defer { teacher.close(); carol.close() }
        try teacher.connect()
        try carol.connect()
        #expect(eventually(5) { cluster.converged(room: "hist") })
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[2].faults = cut
        for round in 0..<20 { try teacher.write(.reward(user: "carol", amount: 1)); if round % 5 == 0 { try carol.write(.setHand(user: "carol", raised: round % 2 == 0)) } }
        #expect(cluster.nodes[2].room("hist")?.users["carol"]?.rewardTotal ?? 0 < 20)
        cluster.nodes[2].faults = FaultPolicy()
        #expect(eventually(8) { cluster.converged(room: "hist", clients: [teacher, carol]) }, "no convergence after heal")
        #expect(cluster.nodes[2].room("hist")?.users["carol"]?.rewardTotal == 20)
    }

    @Test(arguments: [UInt64(11), 12, 13])
    func lossyLinksStillConverge(seed: UInt64) throws {
        let cluster = try TestCluster(size: 3, transport: "inproc", label: "lossy\(seed)")
        #expect(cluster.meshed())
        for (index, node) in cluster.nodes.enumerated() {
            var faults = FaultPolicy(seed: seed &+ UInt64(index), dropPercent: 30, duplicatePercent: 10)
            faults.delayMillis = 2
            faults.jitterMillis = 15
            node.faults = faults
        }
        let clients = (0..<3).map { cluster.client($0 == 0 ? "t" : "s\($0)", $0 == 0 ? .teacher : .student, node: $0, room: "lossy") }
        defer { for client in clients { client.close() } }
        for client in clients { try client.connect() }
        #expect(eventually(10) { cluster.nodes.allSatisfy { node in ["t", "s1", "s2"].allSatisfy { node.room("lossy")?.users[$0]?.isKnown == true } } })
        for step in 0..<30 {
            try clients[0].write(.reward(user: "s\(1 + step % 2)", amount: 1))
            try clients[1 + step % 2].write(.setDevice(user: "s\(1 + step % 2)", device: .microphone, on: step % 3 == 0))
        }
        let converged = eventually(10) { cluster.converged(room: "lossy", clients: clients) }
        #expect(converged, "seed \(seed) did not converge; replay: swift test --filter lossyLinksStillConverge")
        let total = cluster.nodes[0].room("lossy").map { ($0.users["s1"]?.rewardTotal ?? 0) + ($0.users["s2"]?.rewardTotal ?? 0) }
        #expect(total == 30, "seed \(seed)")
    }

    @Test func ipcNodesAndALateJoinerLearnTheWholeCluster() throws {
        let cluster = try TestCluster(size: 2, transport: "ipc", label: "ipc")
        #expect(cluster.meshed())
        let teacher = cluster.client("teacher", .teacher, node: 0, room: "geo")
        defer { teacher.close() }
        try teacher.connect()
        try teacher.write(.setRoomName("Geography"))
        // A third node, seeded only with the first, meets the second and gets the room.
        try cluster.add(name: "ipc-late", transport: "ipc")
        #expect(cluster.meshed(), "the late node did not learn every peer")
        #expect(eventually(5) { cluster.converged(room: "geo") })
        #expect(cluster.nodes[2].room("geo")?.name.value == "Geography")
    }

    @Test func clientReconnectsToAnotherNodeAndResumes() throws {
        let cluster = try TestCluster(size: 2, label: "resume")
        #expect(cluster.meshed())
        let teacher = cluster.client("teacher", .teacher, node: 1, room: "art")
        let dan = cluster.client("dan", .student, node: 0, room: "art")
        defer { teacher.close(); dan.close() }
        try teacher.connect()
        try dan.connect()
        #expect(dan.connectionState == .connected)
        cluster.nodes[0].stop()
        try teacher.write(.reward(user: "dan", amount: 3))
        #expect(eventually(8) { dan.connectionState == .connected && dan.attachedNode == cluster.nodes[1].replica })
        #expect(eventually(5) { dan.replica.users["dan"]?.rewardTotal == 3 })
        try dan.write(.setHand(user: "dan", raised: true))
        #expect(eventually(5) { teacher.replica.raisedHands == ["dan"] })
    }
}

@Suite(.serialized) struct RefutationTests {
    @Test func aNodeDeclaredDownWhileAliveRefutesAndItsUsersComeBackOnline() throws {
        let cluster = try TestCluster(size: 3, label: "refute")
        #expect(cluster.meshed())
        let watcher = cluster.client("watcher", .observer, node: 0, room: "pres")
        let carol = cluster.client("carol", .student, node: 2, room: "pres")
        defer { watcher.close(); carol.close() }
        try watcher.connect()
        try carol.connect()
        #expect(eventually(5) { watcher.replica.isOnline("carol") })
        // Cut node 2 off for longer than the down period (20 heartbeats = 1 s).
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[2].faults = cut
        #expect(eventually(5) { !watcher.replica.isOnline("carol") }, "the others never declared node 2 down")
        cluster.nodes[2].faults = FaultPolicy()
        // Node 2 hears it was declared down, takes a new incarnation and re-announces carol.
        #expect(eventually(8) { watcher.replica.isOnline("carol") }, "carol stayed offline after the heal")
        #expect(cluster.nodes[2].metrics["refutations_total"] >= 1)
        // When carol leaves, the copy the refutation made ends as well: no ghost.
        carol.close()
        #expect(eventually(5) { !watcher.replica.isOnline("carol") }, "a re-announced session outlived its client")
    }

    /// The copy a refutation makes holds the lease its client renews by naming the
    /// original session, so a client that vanishes after a refutation goes offline too.
    @Test func aRefutedSessionStillEndsWhenItsClientVanishes() throws {
        let cluster = try TestCluster(size: 3, label: "refute-lease") { _, config in config.sessionTimeoutMillis = 1_000 }
        #expect(cluster.meshed())
        let watcher = cluster.client("watcher", .observer, node: 0, room: "lease")
        let erin = cluster.client("erin", .student, node: 2, room: "lease")
        defer { watcher.close(); erin.close() }
        try watcher.connect()
        try erin.connect()
        #expect(eventually(5) { watcher.replica.isOnline("erin") })
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[2].faults = cut
        #expect(eventually(5) { !watcher.replica.isOnline("erin") }, "the others never declared node 2 down")
        cluster.nodes[2].faults = FaultPolicy()
        #expect(eventually(8) { watcher.replica.isOnline("erin") }, "erin stayed offline after the heal")
        #expect(cluster.nodes[2].metrics["refutations_total"] >= 1)
        erin.abandon()
        #expect(eventually(5) { !watcher.replica.isOnline("erin") }, "the refutation's copy outlived a client that vanished")
    }
}
