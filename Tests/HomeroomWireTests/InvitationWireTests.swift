import HomeroomCore
import HomeroomWire
import Testing

/// Invitations to the stage on the wire: operations 45-46 and RoomPatch field 29 round
/// trip; a room with no invitation encodes to the v1 bytes.
@Suite("Invitations on the wire")
struct InvitationWireTests {
    static func stamp(_ millis: UInt64, _ replica: UInt64, _ sequence: UInt64) -> Stamp {
        Stamp(clock: HybridTimestamp(millis: millis, logical: 0, replica: ReplicaID(replica)), sequence: sequence)
    }

    @Test("invite_to_stage and answer_invitation round trip, the answered invitation included")
    func operationsRoundTrip() throws {
        let operations: [HomeroomCore.Operation] = [
            .inviteToStage(user: "ana", seconds: 30), .inviteToStage(user: "tom", seconds: 600),
            .answerInvitation(accept: true), .answerInvitation(accept: false),
            .answerInvitation(accept: true, invitation: Self.stamp(4_000, 0xBEEF, 3), seconds: 45),
        ]
        for (index, operation) in operations.enumerated() {
            let delta = Delta(sequence: UInt64(index + 1), clock: HybridTimestamp(millis: 5_000 + UInt64(index), logical: 0, replica: ReplicaID(9)),
                              author: "tom", authorRole: .teacher, authorCounter: 3, operation: operation)
            #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(9), deltas: [delta])).deltas == [delta])
        }
    }

    @Test("a patch carries invitations, pending, answered and known only by their answer")
    func patchRoundTrips() throws {
        var room = RoomState(roomID: "maths")
        room.invitations["ana"] = StageInvitation(issued: Self.stamp(10, 1, 1), seconds: 30, inviter: "tom")
        room.invitations["ben"] = StageInvitation(issued: Self.stamp(11, 1, 2), seconds: 5, inviter: "tom",
                                                  answer: StageInvitation.Answer(at: Self.stamp(12, 2, 1), accepted: true))
        room.invitations["cy"] = StageInvitation(issued: Self.stamp(13, 1, 3), seconds: 600, inviter: "",
                                                 answer: StageInvitation.Answer(at: Self.stamp(14, 3, 1), accepted: false))
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        #expect(decoded == room)
        var bad = room
        bad.invitations["ana"]?.seconds = 700
        #expect { _ = try WireCodec.decodePatch(WireCodec.encodePatch(bad)) } throws: { error in "\(error)".contains("invitations[0].seconds") }
    }

    @Test("v1: a room without invitations encodes to the golden v1 snapshot's bytes")
    func v1KeepsItsBytes() throws {
        let golden = [UInt8](try GoldenTests.read("snapshot", "bin"))
        let envelope = try WireCodec.decode(golden)
        guard case let .snapshot(state) = envelope.message else { Issue.record("the golden snapshot is not a snapshot"); return }
        #expect(state.invitations.isEmpty && WireCodec.encode(envelope) == golden)
        var invited = state
        invited.invitations["ana"] = StageInvitation(issued: Self.stamp(2_000_000_000_000, 1, 99), seconds: 30, inviter: "tom")
        #expect(try WireCodec.decodePatch(WireCodec.encodePatch(invited)) == invited)
    }
}
