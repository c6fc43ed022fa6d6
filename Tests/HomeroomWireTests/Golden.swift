import HomeroomCore
import HomeroomWire

/// The golden vectors: example envelopes whose encoding is frozen in
/// Proto/golden/NAME.bin, with `protoc --decode` text in Proto/golden/NAME.txt,
/// so another implementation can check itself against them.
enum Golden {
    static let nodeA = ReplicaID(0x0000_0000_0000_0A01)
    static let nodeB = ReplicaID(0x0000_0000_0000_0B02)
    static let millis: UInt64 = 1_764_000_000_000

    static func clock(_ offset: UInt64, logical: UInt16 = 0, _ replica: ReplicaID = nodeA) -> HybridTimestamp {
        HybridTimestamp(millis: millis + offset, logical: logical, replica: replica)
    }

    static func envelope(_ sequence: UInt64, _ message: WireMessage, room: String = "math-101", sender: ReplicaID = nodeA) -> WireEnvelope {
        WireEnvelope(roomID: room, sender: sender, sequence: sequence, clock: clock(100 + sequence), message: message)
    }

    /// Live deltas: a student joins and turns its camera on, the teacher puts it
    /// on stage, allows its microphone and rewards it.
    static let batchDeltas: [Delta] = [
        Delta(sequence: 41, clock: clock(1), author: "stu-1", authorRole: .student, authorCounter: 1,
              operation: .joinSession(user: "stu-1", session: "stu-1-web", name: "Ada", role: .student, host: nodeA, incarnation: 2)),
        Delta(sequence: 42, clock: clock(1, logical: 1), author: "stu-1", authorRole: .student, authorCounter: 2,
              operation: .setDevice(user: "stu-1", device: .camera, on: true)),
        Delta(sequence: 43, clock: clock(2), author: "teach", authorRole: .teacher, authorCounter: 17,
              operation: .setStage(user: "stu-1", on: true)),
        Delta(sequence: 44, clock: clock(2, logical: 1), author: "teach", authorRole: .teacher, authorCounter: 18,
              operation: .setPrivilege(user: "stu-1", device: .microphone, allowed: true)),
        Delta(sequence: 45, clock: clock(3), author: "teach", authorRole: .teacher, authorCounter: 19,
              operation: .reward(user: "stu-1", amount: 2)),
    ]

    /// A small room: a teacher, a student on stage, a reward, a property, a name.
    static var room: RoomState {
        var room = RoomState(roomID: "math-101")
        let teacherJoin = Delta(sequence: 40, clock: clock(0), author: "teach", authorRole: .teacher, authorCounter: 16,
                                operation: .joinSession(user: "teach", session: "teach-app", name: "Grace", role: .teacher, host: nodeA, incarnation: 2))
        _ = room.apply(teacherJoin)
        for delta in batchDeltas { _ = room.apply(delta) }
        _ = room.apply(Delta(sequence: 1, clock: clock(4, nodeB), author: "teach", authorRole: .teacher, authorCounter: 20,
                             operation: .setRoomName("Algebra")))
        _ = room.apply(Delta(sequence: 2, clock: clock(5, nodeB), author: "teach", authorRole: .teacher, authorCounter: 21,
                             operation: .setRoomProperty(key: "topic", value: Array("fractions".utf8), cause: "plan")))
        return room
    }

    static var vectors: [(name: String, envelope: WireEnvelope)] {
        var seen = VersionVector(contiguous: [nodeA: 45])
        seen.insert(Dot(origin: nodeB, sequence: 3))
        return [
            ("delta_batch", envelope(1, .deltaBatch(.init(origin: nodeA, deltas: batchDeltas)))),
            ("snapshot", envelope(2, .snapshot(room.snapshot()))),
            ("digest", envelope(3, .digest(seen))),
            ("sync_request", envelope(4, .syncRequest(.init(seen: seen, missing: [.init(origin: nodeB, first: 1, last: 2)])))),
            ("write_request", WireEnvelope(roomID: "math-101", sender: ReplicaID(0), sequence: 7, clock: .zero, credential: Array("token".utf8),
                                           message: .writeRequest(.init(requestID: 9, write: Write(author: "teach", authorRole: .teacher, authorCounter: 22,
                                                                                                   operation: .setBoard(user: "stu-1", granted: true)))))),
            ("write_ack", envelope(5, .writeAck(.init(requestID: 9, status: .accepted, dot: Dot(origin: nodeA, sequence: 46))))),
            ("write_ack_rejected", envelope(6, .writeAck(.init(requestID: 10, status: .rejected, errorCode: "requires-moderator",
                                                               message: "set-stage refused: only a teacher or an assistant may do this, the author is a student")))),
            ("join_request", WireEnvelope(roomID: "math-101", sender: ReplicaID(0), sequence: 1, clock: .zero,
                                          message: .joinRequest(.init(user: "stu-2", role: .student, session: "stu-2-web", name: "Bob")))),
            ("heartbeat", envelope(8, .heartbeat(.init(node: nodeA, incarnation: 2, address: "tcp://127.0.0.1:7401",
                                                       rooms: [.init(roomID: "math-101", seen: seen)],
                                                       peers: [.init(node: nodeB, address: "tcp://127.0.0.1:7411", incarnation: 1, status: .alive)])),
                                   room: "")),
            ("room_message", envelope(9, .roomMessage(.init(sender: "teach", type: "chat", payload: Array("Welcome!".utf8), senderSequence: 1,
                                                            timestampMillis: millis + 9)))),
            ("error_reply", envelope(10, .error(.init(code: "unsupported-version", message: "protocol version 2 is not supported", supportedVersion: 1)))),
        ]
    }
}
