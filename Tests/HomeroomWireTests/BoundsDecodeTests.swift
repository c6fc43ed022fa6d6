import HomeroomCore
import HomeroomWire
import Testing

/// Never write what cannot be read: a room with every structure a client can grow at
/// the bound the origin keeps it to (docs/ARCHITECTURE.md, "Lifetime") still encodes
/// to a snapshot the default decoder accepts, and the origin refuses to grow it further.
@Suite struct BoundsDecodeTests {
    @Test func aRoomAtEveryAdmissionBoundDecodes() throws {
        var room = RoomState(roomID: "bounds")
        var sequence: UInt64 = 0
        let node = ReplicaID(7)
        func apply(_ author: UserID, _ role: Role, _ operation: Operation, counter: UInt64 = 0) {
            sequence += 1
            let write = Write(author: author, authorRole: role, authorCounter: counter, operation: operation)
            if let refusal = room.admit(write, nowMillis: 1_000_000 + sequence) {
                Issue.record("refused below its bound: \(operation.name): \(refusal)")
                return
            }
            let delta = Delta(sequence: sequence, clock: HybridTimestamp(packed: (1_000_000 + sequence) << 16, replica: node), author: author,
                              authorRole: role, authorCounter: counter, operation: room.prepare(write, origin: ReplicaID(0), nowMillis: 0).operation)
            _ = room.apply(delta)
        }
        apply("t", .teacher, .joinSession(user: "t", session: "t-1", name: "T", role: .teacher, host: node, incarnation: 1))
        for index in 0..<RoomState.maxOpenSessionsPerUser {
            apply("s", .student, .joinSession(user: "s", session: "s-\(index)", name: "S", role: .student, host: node, incarnation: 1))
        }
        for index in 0..<RoomState.maxRewardsPerUser { apply("t", .teacher, .reward(user: "s", amount: 1, issuedAtMillis: 1_000_001 + sequence), counter: UInt64(index + 1)) }
        for index in 0..<RoomState.maxRoomPropertyKeys { apply("t", .teacher, .setRoomProperty(key: "k\(index)", value: [1], cause: "")) }
        for index in 0..<RoomState.maxUserPropertyKeys { apply("s", .student, .setUserProperty(user: "s", key: "k\(index)", value: [1], cause: "")) }
        for index in 0..<RoomState.maxPresenceEntriesPerUser {
            apply("s", .student, .setPresenceState(user: "s", session: "s-0", items: [PresenceItem(key: "p\(index)", value: nil)]))
        }
        // One more of each is refused at the origin.
        func refused(_ author: UserID, _ role: Role, _ operation: Operation, counter: UInt64 = 999_999_999) -> String? {
            room.admit(Write(author: author, authorRole: role, authorCounter: counter, operation: operation), nowMillis: 2_000_000)?.code
        }
        #expect(refused("s", .student, .joinSession(user: "s", session: "one-more", name: "S", role: .student, host: node, incarnation: 1)) == "too-many-sessions")
        #expect(refused("t", .teacher, .reward(user: "s", amount: 1, issuedAtMillis: 2_000_000)) == "limit-reached")
        // A reward must say when it was issued, within the window of the node's clock.
        #expect(refused("t", .teacher, .reward(user: "t", amount: 1)) == "invalid")
        #expect(refused("t", .teacher, .reward(user: "t", amount: 1, issuedAtMillis: 2_000_000 - 60_001)) == "reward-window")
        #expect(refused("t", .teacher, .reward(user: "t", amount: 1, issuedAtMillis: 2_000_000 + 60_001)) == "reward-window")
        #expect(refused("t", .teacher, .reward(user: "t", amount: 1, issuedAtMillis: 2_000_000 - 60_000)) == nil)
        #expect(refused("t", .teacher, .setRoomProperty(key: "new", value: [1], cause: "")) == "limit-reached")
        #expect(refused("t", .teacher, .setRoomProperty(key: "k1", value: [2], cause: "")) == nil, "an existing key can still be written")
        #expect(refused("s", .student, .setUserProperty(user: "s", key: "new", value: [1], cause: "")) == "limit-reached")
        #expect(refused("s", .student, .setPresenceState(user: "s", session: "s-0", items: [PresenceItem(key: "new", value: [1])])) == "limit-reached")

        // Twice the bound, as if two nodes admitted the same writes concurrently, still decodes.
        var doubled = room
        for index in 0..<RoomState.maxRewardsPerUser {
            sequence += 1
            _ = doubled.apply(Delta(sequence: sequence, clock: HybridTimestamp(packed: (3_000_000 + sequence) << 16, replica: node), author: "t2",
                                    authorRole: .teacher, authorCounter: UInt64(index + 1), operation: .reward(user: "s", amount: 1)))
        }
        for state in [room, doubled] {
            let bytes = WireCodec.encodePatch(state.snapshot())
            var limits = WireLimits.default
            limits.maxMessageBytes = 256 << 20
            limits.maxDecodedBytes = 2 << 30
            let decoded = try WireCodec.decodePatch(bytes, limits: limits)
            #expect(decoded == state, "a snapshot at the bounds did not decode to itself (\(bytes.count) bytes)")
        }
    }

    /// Issue 39: property bounds were per user only (1,000 keys of up to 32 KiB), so eight
    /// students filling theirs made a join reply past its 256 MiB limit
    /// (`WireLimits.largeReplies`) and nobody could join the room again. The room's own
    /// bound stops them at a quarter of it; what still fits is taken, a write that grows
    /// the room past it is refused (a teacher's small one too: there is no reserve), and
    /// one that shrinks it is taken, so the room can be cleaned up.
    @Test func studentsFillingPropertiesStopAtTheRoomBoundAndTheRoomStaysJoinable() throws {
        var room = RoomState(roomID: "bytes")
        var sequence: UInt64 = 0
        let node = ReplicaID(7)
        func write(_ author: UserID, _ role: Role, _ operation: Operation) -> WriteError? {
            sequence += 1
            let write = Write(author: author, authorRole: role, authorCounter: sequence, operation: operation)
            if let refusal = room.admit(write, nowMillis: 1_000_000 + sequence) { return refusal }
            _ = room.apply(Delta(sequence: sequence, clock: HybridTimestamp(packed: (1_000_000 + sequence) << 16, replica: node), author: author,
                                 authorRole: role, authorCounter: sequence, operation: room.prepare(write, origin: node, nowMillis: 0).operation))
            return nil
        }
        let students = (0..<8).map { "s\($0)" }
        for (user, role) in [("t", Role.teacher)] + students.map({ ($0, Role.student) }) {
            #expect(write(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role, host: node, incarnation: 1)) == nil)
        }
        let largest = [UInt8](repeating: 0xA5, count: WireLimits.default.maxBytesValue)
        var refusals: [UserID: WriteError] = [:]
        var accepted = 0
        for key in 0..<RoomState.maxUserPropertyKeys where refusals.count < students.count {
            for student in students where refusals[student] == nil {
                if let refusal = write(student, .student, .setUserProperty(user: student, key: "k\(key)", value: largest, cause: "")) {
                    refusals[student] = refusal
                } else {
                    accepted += 1
                }
            }
        }
        #expect(refusals.count == students.count && refusals.values.allSatisfy { $0.code == "limit-reached" }, "\(refusals)")
        #expect(accepted < students.count * RoomState.maxUserPropertyKeys / 3, "\(accepted) writes of 32 KiB taken")
        #expect(room.propertyBytes <= RoomState.maxPropertyBytesPerRoom && room.propertyBytes > RoomState.maxPropertyBytesPerRoom - 2 * largest.count)
        #expect(room.propertyBytes == room.recountPropertyBytes())

        // The teacher takes what is left to the byte; then even a small new key is refused.
        let left = RoomState.maxPropertyBytesPerRoom - room.propertyBytes
        try #require(left >= 4, "\(left) bytes left")
        #expect(write("t", .teacher, .setRoomProperty(key: "rest", value: [UInt8](repeating: 1, count: left - 4), cause: "")) == nil)
        #expect(room.propertyBytes == RoomState.maxPropertyBytesPerRoom)
        #expect(write("t", .teacher, .setRoomProperty(key: "note", value: [1], cause: ""))?.code == "limit-reached")
        #expect(write("t", .teacher, .setUserProperty(user: "s0", key: "k0", value: largest, cause: "x"))?.code == "limit-reached",
                "a cause is bytes too")
        // Shrinking is taken, and makes room.
        #expect(write("s0", .student, .setUserProperty(user: "s0", key: "k0", value: [1], cause: "")) == nil)
        #expect(write("s1", .student, .setUserProperty(user: "s1", key: "k0", value: nil, cause: "")) == nil)
        #expect(write("t", .teacher, .setRoomProperty(key: "note", value: [1], cause: "")) == nil)
        #expect(room.propertyBytes == room.recountPropertyBytes() && room.propertyBytes <= RoomState.maxPropertyBytesPerRoom)

        // As many again admitted at another node at the same time (the merge refuses
        // nothing) still make a snapshot the join reply's limit takes.
        var doubled = room
        let other = ReplicaID(8)
        for student in students {
            let keys = room.users[student]?.properties.keys.sorted() ?? []
            for key in keys {
                sequence += 1
                _ = doubled.apply(Delta(sequence: sequence, clock: HybridTimestamp(packed: (3_000_000 + sequence) << 16, replica: other),
                                        author: student, authorRole: .student, authorCounter: sequence,
                                        operation: .setUserProperty(user: student, key: "again-\(key)", value: largest, cause: "")))
            }
        }
        #expect(doubled.propertyBytes > room.propertyBytes * 3 / 2 && doubled.propertyBytes == doubled.recountPropertyBytes())
        for state in [room, doubled] {
            let bytes = WireCodec.encodePatch(state.snapshot())
            #expect(bytes.count < 256 << 20, "a snapshot of \(state.propertyBytes) property bytes encodes to \(bytes.count) bytes")
            var limits = WireLimits.default
            limits.maxMessageBytes = 256 << 20
            limits.maxDecodedBytes = 2 << 30
            let decoded = try WireCodec.decodePatch(bytes, limits: limits)
            #expect(decoded == state && decoded.propertyBytes == state.propertyBytes)
        }
    }
}
