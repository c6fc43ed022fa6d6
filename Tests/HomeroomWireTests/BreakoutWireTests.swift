import HomeroomCore
import Testing
import HomeroomWire

/// Breakout groups on the wire: the three operations and the registry in patches.
@Suite("Breakout groups on the wire")
struct BreakoutWireTests {
    @Test("the operations round trip, and a patch carries groups, assignments and the end")
    func roundTrips() throws {
        let operations: [Operation] = [.setBreakoutGroup(id: "g1", name: "Red"), .setBreakoutGroup(id: "g-2", name: nil),
                                       .assignBreakoutGroup(user: "bob", group: "g1"), .assignBreakoutGroup(user: "bob", group: nil), .endBreakout]
        for (index, operation) in operations.enumerated() {
            let delta = Delta(sequence: UInt64(index + 1), clock: HybridTimestamp(millis: 5_000 + UInt64(index), logical: 0, replica: ReplicaID(9)),
                              author: "tom", authorRole: .teacher, authorCounter: 3, operation: operation)
            #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(9), deltas: [delta])).deltas == [delta])
        }
        var room = RoomState(roomID: "maths")
        var sequencer = Sequencer(replica: ReplicaID(node: "n1", generation: 2))
        let writes: [Operation] = [.setBreakoutGroup(id: "g0", name: "Old"), .endBreakout, .setBreakoutGroup(id: "g1", name: "Red"),
                                   .setBreakoutGroup(id: "g2", name: nil), .assignBreakoutGroup(user: "bob", group: "g1"),
                                   .assignBreakoutGroup(user: "cy", group: nil)]
        for (index, operation) in writes.enumerated() {
            _ = room.apply(sequencer.stamp(Write(author: "tom", authorRole: .teacher, authorCounter: UInt64(index + 1), operation: operation), nowMillis: 9_000 + UInt64(index)))
        }
        #expect(room.breakoutGroups.count == 2 && room.breakoutAssignments.count == 2 && room.breakoutEnded != .origin)
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        #expect(decoded == room && decoded.breakout.map(\.members) == [["bob"]])
    }

    @Test("a patch with a bad group id is refused with the field's name")
    func badIDs() throws {
        var room = RoomState(roomID: "maths")
        room.breakoutGroups["Bad Id"] = Register("x", stamp: Stamp(clock: HybridTimestamp(millis: 1, logical: 0, replica: ReplicaID(3)), sequence: 1))
        #expect {
            _ = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        } throws: { error in "\(error)".contains("breakout_groups[0].id") }
    }
}
