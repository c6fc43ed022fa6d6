import HomeroomCore
import HomeroomWire
import Testing

/// The teacher lane's reading of a request's bytes (`WireLane`) agrees with Core's
/// (`Operation.isTeacherControl`) for every operation, and takes anything it cannot
/// read as ordinary without failing.
@Suite struct WireLaneTests {
    /// Every operation: the wire fixtures, and the kinds they lack.
    static var operations: [(author: UserID, role: Role, operation: Operation)] {
        Fixtures.everyOperation + [
            ("ada", .teacher, .setDeviceMuted(device: .camera, muted: true)),
            ("ada", .teacher, .setHandRaising(allowed: false, autoStage: false)),
            ("ada", .teacher, .setCarousel(Carousel(running: true, intervalSeconds: 20, range: .all, order: .joinOrder))),
            ("ada", .teacher, .setBreakoutGroup(id: "g1", name: "Fractions")),
            ("ada", .teacher, .assignBreakoutGroup(user: "ann", group: "g1")),
            ("ada", .teacher, .endBreakout),
            ("ann", .student, .acquireLock(name: "board", ttlSeconds: 30)),
            ("ann", .student, .releaseLock(name: "board", revoke: false)),
            ("node:a", .system, .foldRewards(user: "ann", upTo: 3, sum: 4)),
            ("node:a", .system, .retirePredecessors(generation: 2, rewardFloors: [])),
            ("ada", .teacher, .inviteToStage(user: "ann", seconds: 30)),
            ("ann", .student, .answerInvitation(accept: true)),
        ]
    }

    static func request(_ operation: Operation, author: UserID, role: Role) -> [UInt8] {
        let write = Write(author: author, authorRole: role, authorCounter: 9, operation: operation)
        return WireCodec.encode(WireEnvelope(roomID: "maths", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                             message: .writeRequest(.init(requestID: 3, write: write))))
    }

    /// A message's top-level fields: (number, wire type, raw value bytes; for length-
    /// delimited fields the payload without its length). Enough protobuf for these tests.
    struct Field { var number: UInt64; var type: UInt64; var value: [UInt8] }

    static func varint(_ bytes: [UInt8], _ at: inout Int) -> UInt64? {
        var value: UInt64 = 0, shift: UInt64 = 0
        while at < bytes.count, shift < 64 {
            let byte = bytes[at]; at += 1
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
        }
        return nil
    }

    static func encodeVarint(_ value: UInt64) -> [UInt8] {
        var value = value, out: [UInt8] = []
        while value >= 0x80 { out.append(UInt8(value & 0x7f) | 0x80); value >>= 7 }
        return out + [UInt8(value)]
    }

    static func fields(_ bytes: [UInt8]) -> [Field]? {
        var at = 0, out: [Field] = []
        while at < bytes.count {
            guard let tag = varint(bytes, &at) else { return nil }
            let start = at
            switch tag & 7 {
            case 0: guard varint(bytes, &at) != nil else { return nil }; out.append(Field(number: tag >> 3, type: 0, value: Array(bytes[start..<at])))
            case 1, 5:
                let size = tag & 7 == 1 ? 8 : 4
                guard bytes.count - at >= size else { return nil }
                at += size; out.append(Field(number: tag >> 3, type: tag & 7, value: Array(bytes[start..<at])))
            case 2:
                guard let length = varint(bytes, &at), Int(length) <= bytes.count - at else { return nil }
                out.append(Field(number: tag >> 3, type: 2, value: Array(bytes[at..<(at + Int(length))]))); at += Int(length)
            default: return nil
            }
        }
        return out
    }

    static func encode(_ fields: [Field]) -> [UInt8] {
        fields.flatMap { field in
            encodeVarint(field.number << 3 | field.type) + (field.type == 2 ? encodeVarint(UInt64(field.value.count)) : []) + field.value
        }
    }

    /// `control`'s envelope with `other`'s delta op appended inside its delta (the
    /// decoder keeps the last member of a oneof, so it reads as `other`'s operation).
    static func appendingToDelta(_ control: [UInt8], from other: [UInt8]) -> [UInt8]? {
        func path(_ envelope: [UInt8]) -> (envelope: [Field], write: [Field], delta: [Field])? {
            guard let outer = fields(envelope), let body = outer.first(where: { $0.number == 13 })?.value,
                  let write = fields(body), let deltaBytes = write.first(where: { $0.number == 3 })?.value,
                  let delta = fields(deltaBytes) else { return nil }
            return (outer, write, delta)
        }
        guard let mine = path(control), let theirs = path(other),
              let op = theirs.delta.last(where: { $0.number >= 6 && $0.number != 40 }) else { return nil }
        let delta = mine.delta + [op]
        let write = mine.write.map { $0.number == 3 ? Field(number: 3, type: 2, value: encode(delta)) : $0 }
        return encode(mine.envelope.map { $0.number == 13 ? Field(number: 13, type: 2, value: encode(write)) : $0 })
    }

    @Test func theBytesSayWhatCoreSaysForEveryOperation() {
        var controls: Set<String> = []
        for entry in Self.operations {
            let bytes = Self.request(entry.operation, author: entry.author, role: entry.role)
            #expect(WireLane.isTeacherControl(request: bytes) == entry.operation.isTeacherControl, "\(entry.operation.name)")
            if entry.operation.isTeacherControl { controls.insert(entry.operation.name) }
        }
        // Each of the twelve control kinds was tried, so a wrong field number fails above.
        #expect(controls.count == 12, "\(controls.sorted())")
    }

    @Test func whatIsNotAWriteOrCannotBeReadIsOrdinary() throws {
        let mute = Self.request(.muteAll, author: "ada", role: .teacher)
        #expect(WireLane.isTeacherControl(request: mute))
        // Every truncation of a control write, and a join, a sync, nothing at all.
        for cut in 0..<mute.count { #expect(!WireLane.isTeacherControl(request: Array(mute[..<cut])), "cut at \(cut)") }
        let join = WireCodec.encode(WireEnvelope(roomID: "maths", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                                 message: .joinRequest(.init(user: "ann", role: .student, session: "s", name: "Ann"))))
        #expect(!WireLane.isTeacherControl(request: join))
        #expect(!WireLane.isTeacherControl(request: []))
        // Bytes shaped to ride the lane while decoding as something else: a second op
        // after the control one (the decoder keeps the last), a second body, a second write.
        let chat = Self.request(.sendMessage(type: "chat", payload: Array("hi".utf8), previous: 0), author: "ann", role: .student)
        #expect(!WireLane.isTeacherControl(request: chat))
        let mixed = try #require(Self.appendingToDelta(mute, from: chat))
        guard case let .writeRequest(decoded) = try WireCodec.decode(mixed).message, case .sendMessage = decoded.write.operation else {
            Issue.record("the mixed request does not decode as a chat write: the test built it wrong"); return
        }
        #expect(!WireLane.isTeacherControl(request: mixed), "a control op followed by a chat op")
        #expect(!WireLane.isTeacherControl(request: mute + Self.encode([Field(number: 20, type: 2, value: [])])), "a control write followed by another body")
        #expect(!WireLane.isTeacherControl(request: mute + mute), "two write requests")
        // Too large to be a control write: ordinary without a walk.
        let long = Self.request(.kick(user: String(repeating: "x", count: WireLane.maxControlBytes)), author: "ada", role: .teacher)
        #expect(!WireLane.isTeacherControl(request: long))
        // Random bytes (seeded): never a crash, and ordinary unless they happen to frame a control write.
        let seed = UInt64.random(in: 1...UInt64.max)
        var generator = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            var bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator) { bytes = Array(mute.prefix(Int.random(in: 0...mute.count, using: &generator))) + bytes }
            _ = WireLane.isTeacherControl(request: bytes)
        }
        print("WireLaneTests seed \(seed) (replay: the loop above with SplitMix64(seed: \(seed)))")
    }
}
