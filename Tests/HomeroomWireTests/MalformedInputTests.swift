import HomeroomCore
import HomeroomWire
import Testing

/// Bad input gives a typed error, never a crash and never a partial value.
@Suite("Malformed input")
struct MalformedInputTests {
    static let envelope = WireEnvelope(roomID: "room-42", sender: Fixtures.nodeA, sequence: 1, clock: Fixtures.clock(1),
                                       message: .deltaBatch(.init(origin: Fixtures.nodeA, deltas: Fixtures.deltas())))

    /// A DeltaBatch with one hand-made delta.
    static func batch(strings: [[UInt8]] = [Array("t".utf8)], _ delta: (inout ProtoWriter) -> Void) -> [UInt8] {
        ProtoWriter.build { batch in
            batch.fixed64(1, 7)
            for string in strings { batch.bytes(2, string) }
            batch.message(3, delta)
        }
    }

    @Test("a message over maxMessageBytes is refused before parsing")
    func oversized() {
        let bytes = WireCodec.encode(Self.envelope)
        var limits = WireLimits()
        limits.maxMessageBytes = 64
        #expect(throws: WireError.oversized(limit: 64, actual: bytes.count)) { try WireCodec.decode(bytes, limits: limits) }
        #expect(throws: WireError.oversized(limit: 64, actual: bytes.count)) { try WireCodec.decodeBatch(bytes, limits: limits) }
    }

    @Test("every strict prefix of a message is refused as truncated or malformed")
    func truncated() throws {
        let bytes = WireCodec.encode(Self.envelope)
        do {
            _ = try WireCodec.decode(Array(bytes.prefix(bytes.count - 1)))
            Issue.record("a message missing its last byte decoded")
        } catch {
            guard case let .truncated(needed, available) = error else { Issue.record("unexpected \(error)"); return }
            #expect(needed == available + 1)
        }
        for length in 0..<bytes.count {
            do {
                _ = try WireCodec.decode(Array(bytes.prefix(length)))
                Issue.record("a \(length)-byte prefix of a \(bytes.count)-byte message decoded")
            } catch {
                switch error {
                case .truncated, .missingField, .malformed: break
                default: Issue.record("prefix \(length): unexpected \(error)")
                }
            }
        }
    }

    @Test("an unknown protocol version is refused with the versions this build speaks")
    func unsupportedVersion() {
        var envelope = Self.envelope
        envelope.protocolVersion = 2
        #expect(throws: WireError.unsupportedVersion(got: 2, supported: 1...1)) { try WireCodec.decode(WireCodec.encode(envelope)) }
        envelope.protocolVersion = 0
        #expect(throws: WireError.missingField("envelope.protocol_version")) { try WireCodec.decode(WireCodec.encode(envelope)) }
        let reply = WireMessage.ErrorReply(WireError.unsupportedVersion(got: 2, supported: 1...1))
        #expect(reply.code == "unsupported-version")
        #expect(reply.supportedVersion == 1)
    }

    @Test("an envelope without a body is refused")
    func missingBody() {
        let bytes = ProtoWriter.build { $0.varint(1, 1); $0.string(2, "r") }
        #expect(throws: WireError.missingField("envelope.body (absent, or of a kind this version does not know)")) {
            try WireCodec.decode(bytes)
        }
    }

    @Test("bytes that are not protobuf are malformed")
    func malformed() {
        #expect(throws: WireError.malformed("field number 0 at byte 2")) { try WireCodec.decode([0x08, 0x01, 0x00]) }
        #expect(throws: WireError.malformed("wire type 3 of field 1 at byte 2 is not used by homeroom.v1")) {
            try WireCodec.decode([0x08, 0x01, 0x0B])
        }
        // Known field with the wrong wire type, and garbage inside the body.
        #expect(throws: WireError.malformed("protobuf-c could not parse the bytes as a homeroom.v1.Envelope")) {
            try WireCodec.decode([0x08, 0x01, 0x12, 0x01, 0x41, 0x1A, 0x00])
        }
        #expect(throws: WireError.malformed("protobuf-c could not parse the bytes as a homeroom.v1.Envelope")) {
            try WireCodec.decode([0x08, 0x01, 0x3A, 0x03, 0x1A, 0x05, 0x00])
        }
    }

    @Test("enum values out of range are refused")
    func enums() {
        let badRole = Self.batch { $0.varint(4, 9); $0.message(6) { _ in } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].author_role", reason: "role 9 is not one of 1-5 (observer..system)")) {
            try WireCodec.decodeBatch(badRole)
        }
        let noRole = Self.batch { $0.message(6) { _ in } }
        #expect(throws: WireError.missingField("delta_batch.deltas[0].author_role (first delta of this author in the batch)")) {
            try WireCodec.decodeBatch(noRole)
        }
        let badDevice = Self.batch { $0.varint(4, 4); $0.message(7) { $0.varint(2, 3) } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].set_device.device", reason: "device 3 is not 1 (camera) or 2 (microphone)")) {
            try WireCodec.decodeBatch(badDevice)
        }
        let noDevice = Self.batch { $0.varint(4, 4); $0.message(8) { $0.varint(3, 1) } }
        #expect(throws: WireError.missingField("delta_batch.deltas[0].set_privilege.device")) { try WireCodec.decodeBatch(noDevice) }
        let negativeClassState = Self.batch { $0.varint(4, 4); $0.message(21) { $0.varint(1, UInt64(bitPattern: -1)) } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].set_class_state.state", reason: "class state 4294967295 is not one of 1-3")) {
            try WireCodec.decodeBatch(negativeClassState)
        }
    }

    @Test("indexes past the string table and sequence 0 are refused")
    func indexes() {
        let author = Self.batch { $0.varint(3, 1); $0.varint(4, 4); $0.message(22) { _ in } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].author", reason: "index 1 is past the string table (1 entries)")) {
            try WireCodec.decodeBatch(author)
        }
        let target = Self.batch { $0.varint(4, 4); $0.message(25) { $0.varint(1, 2) } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].kick.user", reason: "index 2 is past the string table (1 entries; 0 is the author)")) {
            try WireCodec.decodeBatch(target)
        }
        let zero = Self.batch { $0.zigzag(2, -1); $0.varint(4, 4); $0.message(22) { _ in } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].sequence_delta", reason: "gives sequence 0; sequence numbers start at 1")) {
            try WireCodec.decodeBatch(zero)
        }
        let noOperation = Self.batch { $0.varint(4, 4); $0.varint(99, 1) }
        #expect(throws: WireError.missingField("delta_batch.deltas[0].op (no operation this version knows)")) {
            try WireCodec.decodeBatch(noOperation)
        }
    }

    @Test("strings must be valid UTF-8 and within maxStringBytes")
    func strings() {
        let invalid = Self.batch(strings: [[0xC3, 0x28]]) { $0.varint(4, 4); $0.message(22) { _ in } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.strings[0]", reason: "not valid UTF-8")) { try WireCodec.decodeBatch(invalid) }
        let surrogate = Self.batch { $0.varint(4, 4); $0.message(16) { $0.bytes(1, [0xED, 0xA0, 0x80]) } }
        #expect(throws: WireError.invalidValue(field: "delta_batch.deltas[0].set_room_name.name", reason: "not valid UTF-8")) {
            try WireCodec.decodeBatch(surrogate)
        }
        var limits = WireLimits()
        limits.maxStringBytes = 4
        let long = Self.batch { $0.varint(4, 4); $0.message(16) { $0.string(1, "Algebra") } }
        #expect(throws: WireError.limitExceeded(what: "delta_batch.deltas[0].set_room_name.name (bytes)", limit: 4, actual: 7)) {
            try WireCodec.decodeBatch(long, limits: limits)
        }
        limits = WireLimits()
        limits.maxBytesValue = 2
        let value = Self.batch { $0.varint(4, 4); $0.message(23) { $0.string(1, "k"); $0.bytes(2, [1, 2, 3]) } }
        #expect(throws: WireError.limitExceeded(what: "delta_batch.deltas[0].set_room_property.value (bytes)", limit: 2, actual: 3)) {
            try WireCodec.decodeBatch(value, limits: limits)
        }
    }

    @Test("counts over the limits are refused")
    func counts() {
        let deltas = Fixtures.deltas()
        let bytes = WireCodec.encodeBatch(origin: Fixtures.nodeA, deltas: deltas)
        var limits = WireLimits()
        limits.maxDeltasPerBatch = 3
        #expect(throws: WireError.limitExceeded(what: "delta_batch.deltas", limit: 3, actual: deltas.count)) {
            try WireCodec.decodeBatch(bytes, limits: limits)
        }
        limits = WireLimits()
        limits.maxStringTable = 2
        #expect(throws: WireError.limitExceeded(what: "delta_batch.strings entries", limit: 2, actual: 8)) {
            try WireCodec.decodeBatch(bytes, limits: limits)
        }
        limits = WireLimits()
        limits.maxDecodedBytes = 1_000
        do {
            _ = try WireCodec.decodeBatch(bytes, limits: limits)
            Issue.record("decoded within a 1000-byte memory budget")
        } catch {
            guard case let .limitExceeded(what, limit, actual) = error else { Issue.record("unexpected \(error)"); return }
            #expect(what == "memory to parse one message (bytes)")
            #expect(limit == 1_000 && actual > 1_000)
        }
        let room = Fixtures.room()
        limits = WireLimits()
        limits.maxUsersPerPatch = 2
        #expect(throws: WireError.limitExceeded(what: "room_patch.users", limit: 2, actual: room.users.count)) {
            try WireCodec.decodePatch(WireCodec.encodePatch(room), limits: limits)
        }
        limits = WireLimits()
        limits.maxSessionsPerUser = 0
        #expect(throws: WireError.self) { try WireCodec.decodePatch(WireCodec.encodePatch(room), limits: limits) }
    }

    @Test("a patch with duplicates, bad indexes or another room's id is refused")
    func patches() {
        let twice = ProtoWriter.build { patch in
            patch.string(1, "r")
            patch.message(4) { $0.string(1, "u") }
            patch.message(4) { $0.string(1, "u") }
        }
        #expect(throws: WireError.invalidValue(field: "room_patch.users[1].id", reason: "user u appears twice")) { try WireCodec.decodePatch(twice) }
        let badReplica = ProtoWriter.build { patch in
            patch.string(1, "r")
            patch.message(5) { $0.string(1, "name"); $0.message(2) { $0.varint(2, 3) } }
        }
        #expect(throws: WireError.invalidValue(field: "room_patch.name.stamp.replica", reason: "index 3 is past the replica table (0 entries)")) {
            try WireCodec.decodePatch(badReplica)
        }
        let zeroGap = ProtoWriter.build { patch in
            patch.message(14) { $0.message(1) { $0.fixed64(1, 1); $0.varint(2, 5); $0.bytes(3, [2, 0]) } }
        }
        #expect(throws: WireError.invalidValue(field: "room_patch.seen.origins[0].early_gaps[1]", reason: "gaps are at least 1 (early sequences are sorted and unique)")) {
            try WireCodec.decodePatch(zeroGap)
        }
        let envelope = WireEnvelope(roomID: "room-1", sender: Fixtures.nodeA, sequence: 1, clock: .zero, message: .snapshot(RoomState(roomID: "room-2")))
        #expect(throws: WireError.invalidValue(field: "envelope.snapshot.room_id", reason: "room room-2 differs from the envelope's room room-1")) {
            try WireCodec.decode(WireCodec.encode(envelope))
        }
    }

    @Test("unknown fields are skipped, at the top and inside")
    func unknownFields() throws {
        var bytes = WireCodec.encode(Self.envelope)
        var extra = ProtoWriter()
        extra.varint(99, 12_345)
        extra.string(100, "from a newer version")
        extra.fixed64(101, 1)
        bytes += extra.bytes
        #expect(try WireCodec.decode(bytes) == Self.envelope)

        let delta = Self.batch { delta in
            delta.varint(4, 4)
            delta.message(6) { $0.varint(1, 0); $0.varint(2, 1); $0.string(50, "future") }
            delta.varint(77, 1)
        }
        let batch = try WireCodec.decodeBatch(delta)
        #expect(batch.deltas.map(\.operation) == [.setStage(user: "t", on: true)])
    }

    @Test("WireError descriptions say what to do")
    func descriptions() {
        let errors: [WireError] = [
            .truncated(needed: 10, available: 3), .malformed("x"), .oversized(limit: 1, actual: 2),
            .unsupportedVersion(got: 2, supported: 1...1), .missingField("envelope.body"),
            .invalidValue(field: "f", reason: "r"), .limitExceeded(what: "w", limit: 1, actual: 2),
        ]
        #expect(Set(errors.map(\.code)).count == errors.count)
        for error in errors { #expect(error.description.count > 30, "\(error.code): \(error.description)") }
    }
}
