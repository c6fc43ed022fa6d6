import HomeroomCore
import Testing
@testable import HomeroomWire

/// Users with only a name, a role and sessions are written as bytes instead of C
/// structures for protobuf-c; the patch must be the same bytes either way.
@Suite("Plain users written as bytes")
struct PlainUserBytesTests {
    /// Same bytes both ways; and, for a state the wire can carry, back to the same state.
    static func expectSameBytes(_ state: RoomState, _ label: String, roundTrips: Bool = true) {
        let written = WireCodec.encodePatch(state)
        let reference = WireCodec.encodePatchThroughStructs(state)
        #expect(written == reference, "\(label): \(written.count) bytes written, \(reference.count) through structs")
        if roundTrips { #expect((try? WireCodec.decodePatch(written, limits: .default)) == state, "\(label): does not decode back") }
    }

    @Test func theFixtureRoomIsTheSameBytes() {
        Self.expectSameBytes(Fixtures.room(), "fixture room")
        Self.expectSameBytes(Fixtures.room(order: Array((0..<Fixtures.roomDeltaCount).reversed())), "fixture room, reversed")
    }

    @Test func largeAndOddRoomsAreTheSameBytes() {
        var rng = SplitMix64(seed: 99)
        var room = RoomState(roomID: "hall")
        var sequences: [UInt64: UInt64] = [:]
        // 300 nodes: replica indexes past 127 take two varint bytes.
        func delta(_ replica: UInt64, _ author: UserID, _ role: Role, _ operation: HomeroomCore.Operation) -> Delta {
            sequences[replica, default: 0] += UInt64.random(in: 1...200, using: &rng)
            let millis = UInt64.random(in: 0...2_000_000_000_000, using: &rng)
            return Delta(sequence: sequences[replica]!, clock: HybridTimestamp(millis: millis, logical: UInt16.random(in: 0...3, using: &rng),
                                                                               replica: ReplicaID(replica)),
                         author: author, authorRole: role, authorCounter: 1, operation: operation)
        }
        let names = ["", "Ada", "Éowyn ✓", String(repeating: "x", count: 200)]
        for index in 0..<2_000 {
            let user = index % 97 == 0 ? "ü-\(index)" : "student-\(index)"
            let replica = UInt64.random(in: 1...300, using: &rng) * 0x1_0000_0001
            let name = names[Int.random(in: 0..<names.count, using: &rng)]
            _ = room.apply(delta(replica, user, .student, .joinSession(user: user, session: "s-\(index)", name: name, role: .student,
                                                                        host: ReplicaID(replica), incarnation: UInt64.random(in: 0...3, using: &rng))))
            if index % 3 == 0 {
                // A second session, its id sorting before the first in UTF-8 but not always in Swift's order.
                _ = room.apply(delta(replica, user, .student, .joinSession(user: user, session: index % 2 == 0 ? "S-\(index)" : "é-\(index)",
                                                                            name: name, role: .student, host: ReplicaID(replica), incarnation: 1)))
            }
            if index % 5 == 0 { _ = room.apply(delta(replica, user, .student, .leaveSession(user: user, session: "s-\(index)"))) }
            if index % 7 == 0 { _ = room.apply(delta(replica, user, .student, .leaveSession(user: user, session: "never-started-\(index)"))) }
            if index % 50 == 0 { _ = room.apply(delta(replica, user, .student, .setHand(user: user, raised: true))) }  // not plain
        }
        Self.expectSameBytes(room, "2,000 users over 300 nodes")
        var half = VersionVector()
        for (origin, progress) in room.seen.origins where origin.rawValue % 2 == 0 {
            half.formUnion(VersionVector([origin: progress]))
        }
        Self.expectSameBytes(room.missing(since: half), "half the nodes' writes")
        Self.expectSameBytes(room.missing(since: room.seen), "an empty patch")

        // What the wire cannot carry as it is, but must still encode alike: zero and
        // unwritten stamps, an empty id, strings cut at a NUL.
        _ = room.apply(delta(7, "nul\u{0}user", .student, .joinSession(user: "nul\u{0}user", session: "a\u{0}b", name: "c\u{0}d",
                                                                        role: .student, host: ReplicaID(7), incarnation: 1)))
        var odd = UserRecord()
        odd.name = Register("zero", stamp: Stamp(clock: HybridTimestamp(packed: 0, replica: ReplicaID(0)), sequence: 7))
        odd.role = Register(.observer, stamp: Stamp(clock: HybridTimestamp(packed: 5, replica: ReplicaID(3)), sequence: 0))
        room.users["odd"] = odd
        room.users["empty"] = UserRecord()
        room.users[""] = odd
        Self.expectSameBytes(room, "odd users", roundTrips: false)
    }

    @Test func aJoinReplyWithPlainUsersRoundTrips() throws {
        let room = Fixtures.room()
        let envelope = WireEnvelope(roomID: room.roomID, sender: Fixtures.nodeA, sequence: 1, clock: Fixtures.clock(1),
                                    message: .joinResponse(WireMessage.JoinResponse(session: "s-9", host: Fixtures.nodeA, incarnation: 2,
                                                                                    state: room, isSnapshot: true)))
        let decoded = try WireCodec.decode(WireCodec.encode(envelope), limits: .default)
        #expect(decoded == envelope)
    }
}
