import Foundation
import HomeroomCore
import HomeroomWire
import Testing

/// The room's camera and microphone mutes on the wire: operation 43 and RoomPatch fields
/// 25-26 round trip, and what a v1 peer sends or receives keeps its meaning (a v1 write
/// has none of the new fields; a room never muted encodes to the very bytes it did).
@Suite("Room mutes on the wire")
struct RoomMuteWireTests {
    static func stamp(_ millis: UInt64, _ replica: UInt64, _ sequence: UInt64) -> Stamp {
        Stamp(clock: HybridTimestamp(millis: millis, logical: 0, replica: ReplicaID(replica)), sequence: sequence)
    }

    @Test("set_device_muted round trips in a batch and in a write request, the unmute's ended mute included")
    func operationsRoundTrip() throws {
        let operations: [HomeroomCore.Operation] = [.setDeviceMuted(device: .camera, muted: true), .setDeviceMuted(device: .microphone, muted: false),
                                       .setDeviceMuted(device: .camera, muted: false, ending: Self.stamp(4_000, 0xABCD, 17))]
        for (index, operation) in operations.enumerated() {
            let delta = Delta(sequence: UInt64(index + 1), clock: HybridTimestamp(millis: 5_000 + UInt64(index), logical: 0, replica: ReplicaID(9)),
                              author: "tom", authorRole: .teacher, authorCounter: 3, operation: operation)
            #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(9), deltas: [delta])).deltas == [delta])
            let write = Write(author: "tom", authorRole: .teacher, authorCounter: 4, operation: operation)
            let envelope = WireEnvelope(roomID: "r", sender: ReplicaID(0), sequence: 1, clock: .zero,
                                        message: .writeRequest(.init(requestID: 3, write: write)))
            #expect(try WireCodec.decode(WireCodec.encode(envelope)) == envelope)
        }
    }

    @Test("a patch carries both mutes: closed, opened, and an opening that came before its closing")
    func patchesRoundTrip() throws {
        var room = RoomState(roomID: "maths")
        room.cameraMute.close(at: Self.stamp(10, 1, 1))
        room.microphoneMute.close(at: Self.stamp(11, 2, 1))
        room.microphoneMute.open(ending: Self.stamp(11, 2, 1), at: Self.stamp(12, 3, 1))
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        #expect(decoded == room && decoded.cameraMute.isClosed && !decoded.microphoneMute.isClosed)
        var early = RoomState(roomID: "maths")
        early.cameraMute.open(ending: Self.stamp(10, 1, 1), at: Self.stamp(20, 1, 2))
        #expect(try WireCodec.decodePatch(WireCodec.encodePatch(early)) == early)
    }

    @Test("an opening without its own stamp is refused, naming the field")
    func anOpeningNeedsItsStamp() throws {
        // RoomPatch{room_id: "r", replicas: [5], camera_mute: RoomGate{opening_ends: Stamp{clock 1, replica 0, sequence 1}}}
        let bytes = ProtoWriter.build { patch in
            patch.string(1, "r")
            patch.fixed64(3, 5)
            patch.message(25) { gate in gate.message(2) { stamp in stamp.fixed64(1, 1); stamp.varint(3, 1) } }
        }
        #expect { _ = try WireCodec.decodePatch(bytes) } throws: { error in "\(error)".contains("camera_mute.opening_at") }
    }

    @Test("v1: a set_device write as a v1 client encodes it means what it meant, and a room never muted encodes to the v1 bytes")
    func v1KeepsItsMeaning() throws {
        // DeltaBatch{origin 9, strings ["ana"], Delta{clock_delta 5, author 0, role STUDENT, set_device{user 0, CAMERA, on}}}
        let v1Batch = ProtoWriter.build { batch in
            batch.fixed64(1, 9)
            batch.string(2, "ana")
            batch.message(3) { delta in
                delta.zigzag(1, 5)
                delta.varint(4, 2)
                delta.message(7) { op in op.varint(2, 1); op.varint(3, 1) }
            }
        }
        let decoded = try WireCodec.decodeBatch(v1Batch).deltas
        #expect(decoded.map(\.operation) == [.setDevice(user: "ana", device: .camera, on: true)])
        // A v1 snapshot (the golden vector, made before the mutes existed) is a room with
        // neither mute, and encoding it again gives the same bytes: no new field appears.
        let golden = [UInt8](try GoldenTests.read("snapshot", "bin"))
        let envelope = try WireCodec.decode(golden)
        guard case let .snapshot(state) = envelope.message else { Issue.record("the golden snapshot is not a snapshot"); return }
        #expect(state.cameraMute == RoomGate() && state.microphoneMute == RoomGate())
        #expect(WireCodec.encode(envelope) == golden)
        // And a muted room adds only the new fields: without them it is the v1 room.
        var muted = state
        muted.cameraMute.close(at: Self.stamp(2_000_000_000_000, 1, 99))
        let bytes = WireCodec.encodePatch(muted)
        #expect(bytes.count > WireCodec.encodePatch(state).count)
        #expect(try WireCodec.decodePatch(bytes) == muted)
    }
}
