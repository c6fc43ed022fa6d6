import HomeroomCore
import HomeroomWire
import Testing

/// Hand raising on the wire: operation 44 and RoomPatch fields 27-28 round trip; a v1
/// set_hand means what it meant, and an auto-staged raise travels as a v1 set_stage.
@Suite("Hand raising on the wire")
struct HandRaisingWireTests {
    static func stamp(_ millis: UInt64, _ replica: UInt64, _ sequence: UInt64) -> Stamp {
        Stamp(clock: HybridTimestamp(millis: millis, logical: 0, replica: ReplicaID(replica)), sequence: sequence)
    }

    @Test("set_hand_raising round trips, the ended switch-off included, and a patch carries the gate and auto-stage")
    func roundTrips() throws {
        let operations: [HomeroomCore.Operation] = [.setHandRaising(allowed: false, autoStage: false), .setHandRaising(allowed: true, autoStage: true),
                                                    .setHandRaising(allowed: true, autoStage: false, ending: Self.stamp(4_000, 0xBEEF, 3))]
        for (index, operation) in operations.enumerated() {
            let delta = Delta(sequence: UInt64(index + 1), clock: HybridTimestamp(millis: 5_000 + UInt64(index), logical: 0, replica: ReplicaID(9)),
                              author: "tom", authorRole: .teacher, authorCounter: 3, operation: operation)
            #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(9), deltas: [delta])).deltas == [delta])
        }
        var room = RoomState(roomID: "maths")
        room.handRaising.close(at: Self.stamp(10, 1, 1))
        room.handRaising.open(ending: Self.stamp(10, 1, 1), at: Self.stamp(11, 1, 2))
        room.autoStage = Register(true, stamp: Self.stamp(11, 1, 2))
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        #expect(decoded == room && decoded.handRaisingPolicy == HandRaisingPolicy(allowed: true, autoStage: true))
    }

    @Test("an auto-staged raise is a set_stage by the system: a v1 decoder reads it as it always did")
    func anAutoStagedRaiseIsAV1StageWrite() throws {
        var room = RoomState(roomID: "maths")
        var sequencer = Sequencer(replica: ReplicaID(node: "n1", generation: 2))
        func write(_ author: UserID, _ role: Role, _ operation: HomeroomCore.Operation, _ counter: UInt64) -> Delta {
            let prepared = room.prepare(Write(author: author, authorRole: role, authorCounter: counter, operation: operation), origin: sequencer.replica, nowMillis: 9_000)
            let delta = sequencer.stamp(prepared, nowMillis: 9_000 + counter)
            _ = room.apply(delta)
            return delta
        }
        for (user, role) in [("tom", Role.teacher), ("ana", .student)] {
            _ = write(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role, host: sequencer.replica, incarnation: 1), 1)
        }
        _ = write("tom", .teacher, .setHandRaising(allowed: true, autoStage: true), 2)
        let raise = write("ana", .student, .setHand(user: "ana", raised: true), 2)
        let decoded = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: sequencer.replica, deltas: [raise])).deltas
        #expect(decoded == [raise] && raise.operation == .setStage(user: "ana", on: true) && raise.authorRole == .system)
        #expect(room.stageWinners == ["ana"])
    }
}
