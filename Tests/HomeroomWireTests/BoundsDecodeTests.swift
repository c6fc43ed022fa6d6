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
}
