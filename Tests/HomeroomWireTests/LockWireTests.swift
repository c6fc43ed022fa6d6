import HomeroomCore
import Testing
import HomeroomWire

/// Locks on the wire: the two operations, fenced property writes, lock records in
/// patches and the fence an acknowledgement carries.
@Suite("Locks on the wire")
struct LockWireTests {
    static let fence = LockFence(lock: "grading", fence: (3 << 24) | 0x00AB_CDEF)

    static let operations: [Operation] = [
        .acquireLock(name: "grading", ttlSeconds: 120, fence: fence.fence),
        .acquireLock(name: "g", ttlSeconds: 10),
        .releaseLock(name: "grading", fence: fence.fence, revoke: false),
        .releaseLock(name: "grading", revoke: true),
        .setRoomProperty(key: "grades", value: [1, 2], cause: "c", revision: PropertyRevision(condition: 4, assigned: 5, fence: fence)),
        .setUserProperty(user: "bob", key: "mark", value: nil, cause: "", revision: PropertyRevision(assigned: 1, fence: fence)),
    ]

    @Test("lock operations and fenced property writes round trip in batches and write requests")
    func operationsRoundTrip() throws {
        for (index, operation) in Self.operations.enumerated() {
            let delta = Delta(sequence: UInt64(index + 1), clock: HybridTimestamp(millis: 1_000 + UInt64(index), logical: 0, replica: ReplicaID(7)),
                              author: "tom", authorRole: .teacher, authorCounter: 9, operation: operation)
            #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(7), deltas: [delta])).deltas == [delta])
            let envelope = WireEnvelope(roomID: "r", sender: ReplicaID(0), sequence: 1, clock: .zero,
                                        message: .writeRequest(.init(requestID: 3, write: Write(author: "tom", authorRole: .teacher, authorCounter: 9, operation: operation))))
            #expect(try WireCodec.decode(WireCodec.encode(envelope)) == envelope)
        }
    }

    @Test("a patch carries lock records and property fences; the acknowledgement carries the fence")
    func patchRoundTrip() throws {
        var room = RoomState(roomID: "r")
        let origin = ReplicaID(node: "n1", generation: 5)
        var sequencer = Sequencer(replica: origin)
        for (counter, operation) in ([.joinSession(user: "tom", session: "s", name: "Tom", role: .teacher, host: origin, incarnation: 1),
                                      .acquireLock(name: "grading", ttlSeconds: 60, fence: Self.fence.fence),
                                      .setRoomProperty(key: "grades", value: [9], cause: "", revision: PropertyRevision(assigned: 1, fence: Self.fence)),
                                      .acquireLock(name: "other", ttlSeconds: 30, fence: 1 << 24),
                                      .releaseLock(name: "other", fence: 1 << 24, revoke: false),
                                      .releaseLock(name: "never-granted", fence: 5, revoke: true)] as [Operation]).enumerated() {
            _ = room.apply(sequencer.stamp(Write(author: "tom", authorRole: .teacher, authorCounter: UInt64(counter + 1), operation: operation), nowMillis: 2_000 + UInt64(counter)))
        }
        #expect(room.locks.count == 3)
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room))
        #expect(decoded == room)
        #expect(decoded.locks["never-granted"]?.grant == nil && decoded.locks["never-granted"]?.endedFence == 5)
        #expect(decoded.properties["grades"]?.value.fence == Self.fence)

        var ack = WireMessage.WriteAck(requestID: 1, status: .accepted, dot: Dot(origin: origin, sequence: 2))
        ack.fence = Self.fence.fence
        let envelope = WireEnvelope(roomID: "r", sender: origin, sequence: 1, clock: .zero, message: .writeAck(ack))
        #expect(try WireCodec.decode(WireCodec.encode(envelope)) == envelope)
    }

    @Test("a fence without a lock name or with fence 0 is refused with the field's name")
    func malformedFences() throws {
        for bad in [LockFence(lock: "", fence: 5), LockFence(lock: "l", fence: 0), LockFence(lock: String(repeating: "x", count: 65), fence: 5)] {
            let delta = Delta(sequence: 1, clock: HybridTimestamp(millis: 1, logical: 0, replica: ReplicaID(7)), author: "tom", authorRole: .teacher,
                              authorCounter: 1, operation: .setRoomProperty(key: "k", value: [1], cause: "", revision: PropertyRevision(fence: bad)))
            #expect {
                _ = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(7), deltas: [delta]))
            } throws: { error in
                "\(error)".contains("fence")
            }
        }
    }
}
