import Foundation
import HomeroomCore
import Testing
@testable import HomeroomNode

/// A room removed after its class closed stays removed while a peer still holds it (a
/// longer `--closed-room-retention` there): that peer's heartbeats, its late deltas and
/// the pulls they would ask for bring nothing back.
@Suite(.serialized) struct ClosedRoomClusterTests {
    @Test func aPeerThatStillHoldsTheRoomDoesNotBringItBack() throws {
        let cluster = try TestCluster(size: 2, label: "closed-peer") { index, config in
            config.closedRoomRetentionSeconds = index == 0 ? 0 : 3_600
        }
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed())
        let room = "geo-\(UInt32.random(in: 0...UInt32.max))"
        let first = cluster.nodes[0], second = cluster.nodes[1]
        #expect(first.join(room: room, user: "t", role: .teacher, session: "t1", name: "T").status == .accepted)
        for (counter, operation) in [Operation.setSchedule(Schedule(startMillis: 1, durationSeconds: 60, closeDelaySeconds: 0)),
                                     .setClassState(.during), .setClassState(.after)].enumerated() {
            #expect(first.submit(room: room, Write(author: "t", authorRole: .teacher, authorCounter: UInt64(10 + counter), operation: operation)).status == .accepted)
        }
        #expect(eventually(10) { second.room(room)?.classState.state == .after }, "the second node never saw the class end")
        // The first node (retention 0) removes it at its next pass; the second keeps it for an hour.
        #expect(eventually(10) { first.room(room) == nil }, "the first node never removed the closed room")
        #expect(second.room(room) != nil)
        #expect(eventually(10) { second.room(room)?.hasLiveSession == false }, "the teacher's session never ended")
        // A late write at the second node (its own, as system) reaches the first as a delta.
        second.systemWrite(room: room, .setRoomName("late"))
        #expect(second.room(room)?.name.value == "late")
        // Many heartbeats later (50 ms each) nothing of it has come back.
        Thread.sleep(forTimeInterval: 1.0)
        #expect(first.room(room) == nil, "a peer's message resurrected the removed room")
        #expect(first.join(room: room, user: "t", role: .teacher, session: "t2", name: "T").errorCode == "room-closed")
        #expect(first.room(room) == nil)
    }
}
