import HomeroomCore
import HomeroomWire
import Testing

/// The messaging parts of the wire format: new operations, history, presence and
/// revisions in patches, and what a decoder refuses in them.
@Suite("Messaging on the wire")
struct MessagingWireTests {
    @Test("a room with history, presence, mutes and revisions round trips, also cut for one user")
    func historyRoundTrip() throws {
        let room = Fixtures.room()
        #expect(room.messages.count == 5)
        #expect(room.chatMuted.stamp != .origin && room.historyLimit.value == 500)
        #expect(room.properties["quiz"]?.value.revision == 5 && room.properties["quiz"]?.value.lineage.count == 2)
        #expect(!room.users["s1"]!.presence.isEmpty)
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room.snapshot()))
        #expect(decoded == room)
        #expect(decoded.history(for: "s1") == room.history(for: "s1"))
        for user in [nil, "s1", "s2", "t"] as [UserID?] {
            let view = room.visible(to: user)
            #expect(try WireCodec.decodePatch(WireCodec.encodePatch(view)) == view)
        }
        #expect(room.visible(to: "t").messages.count == 4)   // s2's whisper to s1 is not the teacher's
        #expect(room.visible(to: nil).messages.count == 3)
    }

    @Test("a patch with a message twice, a bad recipient or a long lineage is refused")
    func refusals() {
        func record(_ sender: UInt64, counter: UInt64, recipient: UInt64 = 0) -> (inout ProtoWriter) -> Void {
            { message in
                message.varint(1, sender)
                message.varint(2, counter)
                if recipient > 0 { message.varint(3, recipient) }
                message.string(4, "chat")
                message.message(7) { $0.fixed64(1, 5); $0.varint(3, 1) }
            }
        }
        let twice = ProtoWriter.build { patch in
            patch.string(1, "r")
            patch.string(2, "s")
            patch.fixed64(3, 9)
            patch.message(18, record(0, counter: 4))
            patch.message(18, record(0, counter: 4))
        }
        #expect(throws: WireError.invalidValue(field: "room_patch.messages[1]", reason: "message s#4 appears twice")) { try WireCodec.decodePatch(twice) }
        let recipient = ProtoWriter.build { patch in
            patch.string(1, "r")
            patch.string(2, "s")
            patch.fixed64(3, 9)
            patch.message(18, record(0, counter: 4, recipient: 2))
        }
        #expect(throws: WireError.invalidValue(field: "room_patch.messages[0].recipient", reason: "index 1 is past the string table (1 entries)")) {
            try WireCodec.decodePatch(recipient)
        }
        var limits = WireLimits()
        limits.maxLineage = 1
        let lineage = MalformedInputTests.batch { delta in
            delta.varint(4, 4)
            delta.message(23) { op in
                op.string(1, "k")
                op.message(7) { $0.fixed64(1, 1); $0.varint(2, 1) }
                op.message(7) { $0.fixed64(1, 1); $0.varint(2, 2) }
            }
        }
        #expect(throws: WireError.limitExceeded(what: "delta_batch.deltas[0].set_room_property.lineage", limit: 1, actual: 2)) {
            try WireCodec.decodeBatch(lineage, limits: limits)
        }
        limits = WireLimits()
        limits.maxPresenceItems = 1
        let presence = MalformedInputTests.batch { delta in
            delta.varint(4, 2)
            delta.message(32) { op in
                op.string(2, "s-1")
                op.message(3) { $0.string(1, "a") }
                op.message(3) { $0.string(1, "b") }
            }
        }
        #expect(throws: WireError.limitExceeded(what: "delta_batch.deltas[0].set_presence_state.items", limit: 1, actual: 2)) {
            try WireCodec.decodeBatch(presence, limits: limits)
        }
        limits = WireLimits()
        limits.maxMessagesPerPatch = 1
        #expect(throws: WireError.self) { try WireCodec.decodePatch(WireCodec.encodePatch(Fixtures.room()), limits: limits) }
    }

    @Test("a mute for everyone and for one user are told apart; a deleted presence key stays deleted")
    func flags() throws {
        let deltas = [
            Delta(sequence: 1, clock: Fixtures.clock(1), author: "t", authorRole: .teacher, authorCounter: 1, operation: .setChatMuted(user: nil, muted: true)),
            Delta(sequence: 2, clock: Fixtures.clock(2), author: "t", authorRole: .teacher, authorCounter: 2, operation: .setChatMuted(user: "t", muted: true)),
            Delta(sequence: 3, clock: Fixtures.clock(3), author: "s", authorRole: .student, authorCounter: 1,
                  operation: .setPresenceState(user: "s", session: "x", items: [PresenceItem(key: "k", value: nil), PresenceItem(key: "e", value: [])])),
        ]
        let decoded = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: deltas))
        #expect(decoded.deltas == deltas)
    }
}
