@preconcurrency import Glibc
import Testing
import HomeroomCore
import HomeroomWire
@testable import HomeroomNode

/// Gossip that costs what changes (docs/PROTOCOL.md "Heartbeats"), with real nodes:
/// idle rooms stay out of published heartbeats, and a change every repeat of which a
/// peer missed still reaches it, through the hash of the rooms and a complete list.
/// The waits are async (`settles`): they hold no thread other suites need.
@Suite(.serialized) struct GossipDigestTests {
    @Test func idleRoomsStayOutOfPublishedHeartbeats() async throws {
        let cluster = try TestCluster(size: 2, label: "gossip-idle", heartbeatMillis: 100)
        #expect(await settles(within: 10) { cluster.nodes.allSatisfy { $0.alivePeers.count == cluster.nodes.count - 1 } })
        let rooms = (0..<300).map { "idle-\($0)" }
        for (index, room) in rooms.enumerated() {
            _ = cluster.nodes[0].join(room: room, user: "teacher", role: .teacher, session: "s\(index)", name: "Teacher")
        }
        #expect(await settles(within: 20) { rooms.allSatisfy { cluster.converged(room: $0) } }, "the rooms did not reach the other node")
        // Past the repeats of the last change (RoomDigests.repeats heartbeats) and the
        // start's complete lists: counted in heartbeats, not seconds, so a loaded machine
        // that sends them late waits longer (ten: 1 s idle).
        let node = cluster.nodes[0]
        let settledFrom = node.metrics["heartbeats_published_total"]
        #expect(await settles(within: 20) { node.metrics["heartbeats_published_total"] >= settledFrom + 10 }, "the node stopped publishing heartbeats")
        let complete = WireCodec.encode(node.envelope(room: "", .heartbeat(node.ownHeartbeat()))).count
        let bytesBefore = node.metrics["heartbeat_bytes_total"], sentBefore = node.metrics["heartbeats_published_total"]
        // Then twenty heartbeats (2 s idle) measured.
        #expect(await settles(within: 30) { node.metrics["heartbeats_published_total"] >= sentBefore + 20 }, "the node stopped publishing heartbeats")
        let bytes = node.metrics["heartbeat_bytes_total"] - bytesBefore, sent = node.metrics["heartbeats_published_total"] - sentBefore
        #expect(sent >= 20, "only \(sent) heartbeats measured")
        // At most one complete list (every 150 heartbeats) falls in the window.
        #expect(sent > 0 && bytes / sent < UInt64(complete) / 4,
                "\(sent) heartbeats of \(bytes / max(sent, 1)) bytes on average; a complete list of the 300 rooms is \(complete) bytes")
    }

    @Test func aChangeWhoseEveryRepeatWasMissedComesThroughTheHash() async throws {
        // Slow failure detection: the cut below must not make anyone suspect.
        let cluster = try TestCluster(size: 2, label: "gossip-missed", heartbeatMillis: 100) { _, config in
            config.suspectMillis = 20_000
            config.downMillis = 40_000
        }
        #expect(await settles(within: 10) { cluster.nodes.allSatisfy { $0.alivePeers.count == cluster.nodes.count - 1 } })
        let (origin, peer) = (cluster.nodes[0], cluster.nodes[1])
        _ = origin.join(room: "maths", user: "teacher", role: .teacher, session: "s1", name: "Teacher")
        #expect(await settles(within: 10) { cluster.converged(room: "maths") })
        let mismatchesBefore = peer.metrics["gossip_view_mismatches_total"]
        var cut = FaultPolicy()
        cut.blocked = [origin.replica]
        peer.faults = cut
        let ack = origin.submit(room: "maths", Write(author: "teacher", authorRole: .teacher, authorCounter: 10,
                                                     operation: .setRoomProperty(key: "topic", value: Array("fractions".utf8), cause: "test")))
        let dot = try #require(ack.dot, "the write was not acknowledged: \(ack.status)")
        // The delta and every heartbeat that lists the change (3 of them) are lost: the cut
        // lasts until the origin has published 5 heartbeats since (counted, not timed, so a
        // loaded machine's slower heartbeats cannot end it early).
        let publishedAtCut = origin.metrics["heartbeats_published_total"]
        #expect(await settles(within: 30) { origin.metrics["heartbeats_published_total"] >= publishedAtCut + 5 })
        peer.faults = FaultPolicy()
        #expect(await settles(within: 5) { peer.room("maths")?.seen.contains(dot) == true }, "the missed write never reached the peer")
        #expect(peer.metrics["gossip_view_mismatches_total"] > mismatchesBefore, "the peer's view should have missed the change")
        #expect(await settles(within: 5) { cluster.converged(room: "maths") })
    }

    /// A quiet room's rewards fold long before the next complete list (every 150
    /// heartbeats: 30 s here): the peers' confirmed views are their checkpoints.
    @Test func rewardsInAQuietRoomFoldWithoutWaitingForACompleteList() async throws {
        let cluster = try TestCluster(size: 2, label: "gossip-fold", heartbeatMillis: 200) { _, config in
            config.rewardWindowMillis = 1_000
            config.maxClockDriftMillis = 1_000
        }
        #expect(await settles(within: 10) { cluster.nodes.allSatisfy { $0.alivePeers.count == cluster.nodes.count - 1 } })
        let teacher = cluster.client("tina", .teacher, node: 0, room: "semester")
        let bob = cluster.client("bob", .student, node: 1, room: "semester")
        defer { for client in [teacher, bob] { client.close() } }
        try bob.connect()
        try teacher.connect()
        #expect(await settles(within: 10) { teacher.replica.users["bob"]?.isKnown == true })
        for _ in 0..<3 { _ = try teacher.write(.reward(user: "bob", amount: 1)) }
        let folded = await settles(within: 12) { cluster.nodes[0].metrics["reward_folds_total"] >= 1 }
        #expect(folded, "no fold 12 s after the rewards (a complete list comes every 30 s)")
        #expect(await settles(within: 10) { cluster.nodes.allSatisfy { $0.room("semester")?.users["bob"]?.rewardTotal == 3 } })
    }
}
