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
            // Messaging (docs/MESSAGING.md).
            ("messaging_batch", envelope(11, .deltaBatch(.init(origin: nodeA, deltas: messagingDeltas)))),
            ("peer_message_batch", envelope(12, .deltaBatch(.init(origin: privateA, deltas: [peerMessage])))),
            ("messaging_snapshot", envelope(13, .snapshot(messagingRoom.snapshot()))),
            ("sync_request_user", envelope(14, .syncRequest(.init(seen: seen, user: "stu-1")))),
            ("write_ack_revision", envelope(15, .writeAck(.init(requestID: 11, status: .accepted, dot: Dot(origin: nodeA, sequence: 52), revision: 2)))),
            ("write_ack_revision_mismatch", envelope(16, .writeAck(.init(requestID: 12, status: .rejected, errorCode: "revision-mismatch",
                                                                         message: "topic is at revision 2, not 1: read it again and retry")))),
        ]
    }

    /// Node A's private origin (peer messages are sequenced under it).
    static let privateA = ReplicaID(0x8000_0000_0000_0A01)

    /// After the small room: a chat message, a reply, presence state, a mute, a
    /// conditional property write (revision 2, after the one in `room`), a history limit.
    static let messagingDeltas: [Delta] = [
        Delta(sequence: 46, clock: clock(10), author: "teach", authorRole: .teacher, authorCounter: 23,
              operation: .sendMessage(type: "chat", payload: Array("Welcome!".utf8), previous: 0)),
        Delta(sequence: 47, clock: clock(11), author: "stu-1", authorRole: .student, authorCounter: 3,
              operation: .sendMessage(type: "chat", payload: Array("Hello".utf8), previous: 0)),
        Delta(sequence: 48, clock: clock(11, logical: 1), author: "stu-1", authorRole: .student, authorCounter: 4,
              operation: .setPresenceState(user: "stu-1", session: "stu-1-web", items: [PresenceItem(key: "mood", value: Array("curious".utf8))])),
        Delta(sequence: 49, clock: clock(12), author: "teach", authorRole: .teacher, authorCounter: 24,
              operation: .setChatMuted(user: "stu-1", muted: true)),
        Delta(sequence: 50, clock: clock(12, logical: 1), author: "teach", authorRole: .teacher, authorCounter: 25,
              operation: .setRoomProperty(key: "topic", value: Array("decimals".utf8), cause: "next",
                                          revision: PropertyRevision(condition: 1, assigned: 2, lineage: [Dot(origin: nodeB, sequence: 2)]))),
        Delta(sequence: 51, clock: clock(13), author: "teach", authorRole: .teacher, authorCounter: 26,
              operation: .setHistoryLimit(200)),
    ]

    /// A whisper from the teacher to the student, sequenced under node A's private origin.
    static let peerMessage = Delta(sequence: 1, clock: HybridTimestamp(millis: millis + 14, logical: 0, replica: privateA), author: "teach",
                                   authorRole: .teacher, authorCounter: 27,
                                   operation: .sendPeerMessage(to: "stu-1", type: "whisper", payload: Array("Well done".utf8), previous: 0))

    /// A room like `room` (its property written with a revision) after the messaging
    /// deltas and the whisper.
    static var messagingRoom: RoomState {
        var room = RoomState(roomID: "math-101")
        _ = room.apply(Delta(sequence: 40, clock: clock(0), author: "teach", authorRole: .teacher, authorCounter: 16,
                             operation: .joinSession(user: "teach", session: "teach-app", name: "Grace", role: .teacher, host: nodeA, incarnation: 2)))
        for delta in batchDeltas { _ = room.apply(delta) }
        _ = room.apply(Delta(sequence: 2, clock: clock(5, nodeB), author: "teach", authorRole: .teacher, authorCounter: 21,
                             operation: .setRoomProperty(key: "topic", value: Array("fractions".utf8), cause: "plan",
                                                         revision: PropertyRevision(condition: 0, assigned: 1))))
        for delta in messagingDeltas { _ = room.apply(delta) }
        _ = room.apply(peerMessage)
        return room
    }
}
