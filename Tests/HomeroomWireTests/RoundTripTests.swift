import HomeroomCore
import Testing
import HomeroomWire

@Suite("Round trips")
struct RoundTripTests {
    @Test("every Operation case survives a batch round trip")
    func everyOperation() throws {
        let deltas = Fixtures.deltas(firstSequence: 41)
        let bytes = WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: deltas)
        let batch = try WireCodec.decodeBatch(bytes)
        #expect(batch.origin == Fixtures.nodeA)
        #expect(batch.deltas.count == deltas.count)
        for (decoded, original) in zip(batch.deltas, deltas) {
            #expect(decoded == original, "\(original.operation.name)")
        }
        // Every case of Operation is covered.
        #expect(Set(deltas.map(\.operation.name)).count == 28)
    }

    @Test("each Operation alone, in a write request and in a one-delta batch")
    func eachOperationAlone() throws {
        for (index, entry) in Fixtures.everyOperation.enumerated() {
            let write = Write(author: entry.author, authorRole: entry.role, authorCounter: UInt64(index) * 1_000 + 7, operation: entry.operation)
            let envelope = WireEnvelope(roomID: "r", sender: ReplicaID(0), sequence: UInt64(index + 1), clock: .zero,
                                        message: .writeRequest(.init(requestID: UInt64(index), write: write)))
            #expect(try WireCodec.decode(WireCodec.encode(envelope)) == envelope)

            let delta = Delta(sequence: .max - UInt64(index), clock: HybridTimestamp(packed: .max, replica: Fixtures.nodeB),
                              author: entry.author, authorRole: entry.role, authorCounter: .max, operation: entry.operation)
            let batch = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: [delta]))
            #expect(batch.deltas == [delta], "\(entry.operation.name)")
        }
    }

    @Test("clocks and sequences that go backwards or wrap still round trip")
    func nonMonotonicBatch() throws {
        var deltas = Fixtures.deltas()
        deltas.reverse()
        deltas[3].sequence = 0xFFFF_FFFF_FFFF_FFFF
        deltas[4].clock = HybridTimestamp(packed: 1, replica: Fixtures.nodeA)
        deltas[5].authorCounter = 0
        deltas[6].clock = HybridTimestamp(packed: 99, replica: ReplicaID(0))
        let batch = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: deltas))
        #expect(batch.deltas == deltas)
    }

    @Test("an empty batch round trips")
    func emptyBatch() throws {
        let batch = try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(0), deltas: []))
        #expect(batch == WireMessage.DeltaBatch(origin: ReplicaID(0), deltas: []))
    }

    @Test("a snapshot round trips to an equal RoomState that behaves the same")
    func snapshotRoundTrip() throws {
        let room = Fixtures.room()
        #expect(room.users.count >= 6)
        #expect(room.users["s1"]!.rewardTotal == 13)
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(room.snapshot()))
        #expect(decoded == room)
        #expect(decoded.users["s1"]!.rewardTotal == room.users["s1"]!.rewardTotal)
        #expect(decoded.stageWinners == room.stageWinners)
        #expect(decoded.raisedHands == room.raisedHands)
        #expect(decoded.seen == room.seen)
        #expect(!decoded.seen.origins[Fixtures.nodeB]!.early.isEmpty)

        // Merging the decoded snapshot into an empty room gives the room.
        var fresh = RoomState(roomID: room.roomID)
        fresh.merge(decoded)
        #expect(fresh == room)
    }

    @Test("a patch since a version vector round trips")
    func patchRoundTrip() throws {
        let room = Fixtures.room()
        let old = Fixtures.room(order: Array(0..<10))
        let patch = room.missing(since: old.seen)
        let decoded = try WireCodec.decodePatch(WireCodec.encodePatch(patch))
        #expect(decoded == patch)
        var caughtUp = old
        caughtUp.merge(decoded)
        #expect(caughtUp == room)
    }

    @Test("equal states built in different orders encode to identical bytes")
    func canonicalEncoding() throws {
        let reference = Fixtures.room()
        let bytes = WireCodec.encodePatch(reference)
        var generator = SplitMix64(seed: 0x5EED)
        for _ in 0..<20 {
            let order = Array(0..<Fixtures.roomDeltaCount).shuffled(using: &generator)
            let shuffled = Fixtures.room(order: order)
            #expect(shuffled == reference)
            #expect(WireCodec.encodePatch(shuffled) == bytes)
        }
        // A state rebuilt from its own encoding encodes the same again.
        #expect(WireCodec.encodePatch(try WireCodec.decodePatch(bytes)) == bytes)
    }

    @Test("every envelope body round trips")
    func everyBody() throws {
        let room = Fixtures.room()
        let vector = room.seen
        let batch = WireMessage.DeltaBatch(origin: Fixtures.nodeA, deltas: Fixtures.deltas())
        let bodies: [WireMessage] = [
            .deltaBatch(batch),
            .snapshot(room.snapshot()),
            .patch(room.missing(since: Fixtures.room(order: Array(0..<5)).seen)),
            .digest(vector),
            .digest(VersionVector()),
            .syncRequest(.init(seen: vector, missing: [.init(origin: Fixtures.nodeB, first: 10, last: 11)])),
            .syncResponse(.init(patch: room.snapshot(), batches: [batch, batch], seen: vector)),
            .syncResponse(.init(seen: VersionVector())),
            .writeRequest(.init(requestID: 77, write: Write(author: "t", authorRole: .teacher, authorCounter: 12,
                                                             operation: .setStage(user: "s1", on: true)))),
            .writeAck(.init(requestID: 77, status: .accepted, dot: Dot(origin: Fixtures.nodeA, sequence: 9))),
            .writeAck(.init(requestID: 78, status: .rejected, errorCode: "requires-moderator", message: "only a teacher")),
            .writeAck({ var ack = WireMessage.WriteAck(requestID: 79, status: .accepted, dot: Dot(origin: Fixtures.nodeA, sequence: 10), revision: 3)
                        ack.setRevision = 11
                        return ack }()),
            .heartbeat(.init(node: Fixtures.nodeA, incarnation: 3, address: "tcp://127.0.0.1:7401",
                             rooms: [.init(roomID: "room-42", seen: vector)],
                             peers: [.init(node: Fixtures.nodeB, address: "tcp://127.0.0.1:7402", incarnation: 2, status: .suspect)])),
            .heartbeat({ var named = WireMessage.Heartbeat(node: Fixtures.nodeA, incarnation: 4, address: "tcp://127.0.0.1:7401",
                                                           peers: [{ var peer = WireMessage.Peer(node: Fixtures.nodeB, address: "tcp://127.0.0.1:7402",
                                                                                                 incarnation: 2, status: .dead)
                                                                     peer.nodeName = "node-b"
                                                                     return peer }()])
                         named.nodeName = "node-a"
                         return named }()),
            .joinRequest(.init(user: "s9", role: .student, session: "s9-1", name: "Nine")),
            .joinRequest(.init(user: "s9", role: .student, session: "s9-2", name: "Nine", resume: vector)),
            .joinResponse(.init(session: "s9-1", host: Fixtures.nodeA, incarnation: 3, state: room.snapshot(), isSnapshot: true)),
            .joinResponse(.init(session: "s9-2", host: Fixtures.nodeA, incarnation: 3, state: room.missing(since: vector), isSnapshot: false)),
            .roomMessage(.init(sender: "t", type: "chat", payload: Array("hello".utf8), senderSequence: 1, timestampMillis: Fixtures.baseMillis)),
            .peerMessage(.init(sender: "t", recipient: "s1", type: "nudge", payload: [], senderSequence: 2, timestampMillis: Fixtures.baseMillis)),
            .error(.init(WireError.unsupportedVersion(got: 9, supported: 1...1))),
        ]
        for (index, body) in bodies.enumerated() {
            let envelope = WireEnvelope(roomID: "room-42", sender: Fixtures.nodeA, sequence: UInt64(index + 1),
                                        clock: Fixtures.clock(UInt64(index)), credential: index % 2 == 0 ? [] : [1, 2, 3], message: body)
            let decoded = try WireCodec.decode(WireCodec.encode(envelope))
            #expect(decoded == envelope, "\(body.kind)")
        }
    }

    @Test("strings are checked as UTF-8 and non-ASCII ones survive")
    func unicodeStrings() throws {
        let delta = Delta(sequence: 1, clock: Fixtures.clock(1), author: "ü-教师", authorRole: .teacher, authorCounter: 1,
                          operation: .setRoomName("Klasse 5b · 数学 🧮"))
        #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: [delta])).deltas == [delta])
    }

    @Test("the pub/sub topic is the room id and a zero byte")
    func topic() {
        #expect(WireCodec.topic(forRoom: "r1") == [0x72, 0x31, 0x00])
    }
}
