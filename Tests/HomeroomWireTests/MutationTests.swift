import Foundation
import HomeroomCore
import HomeroomWire
import Testing

/// Seeded random mutations of the golden vectors: decoding never crashes and
/// either returns a whole, valid value or throws a `WireError`.
/// Replay a failure with the seed it prints:
///     HOMEROOM_SEED=<seed> swift test --filter HomeroomWireTests.MutationTests
@Suite("Random mutations")
struct MutationTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["HOMEROOM_MUTATIONS"] ?? "") ?? 2_000

    static var seed: UInt64 {
        if let text = ProcessInfo.processInfo.environment["HOMEROOM_SEED"] {
            if let value = UInt64(text) { return value }
            if text.hasPrefix("0x"), let value = UInt64(text.dropFirst(2), radix: 16) { return value }
        }
        return 0x484F_4D45_524F_4F4D
    }

    static func mutate(_ bytes: inout [UInt8], _ random: inout SplitMix64) {
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            if bytes.isEmpty { bytes = [UInt8.random(in: 0...255, using: &random)]; continue }
            let at = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<7, using: &random) {
            case 0: bytes[at] ^= 1 << UInt8.random(in: 0..<8, using: &random)
            case 1: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 2: bytes.removeSubrange(at...)
            case 3: bytes.insert(contentsOf: (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }, at: at)
            case 4: bytes.removeSubrange(at..<min(bytes.count, at + Int.random(in: 1...16, using: &random)))
            case 5:
                let end = min(bytes.count, at + Int.random(in: 1...32, using: &random))
                bytes.insert(contentsOf: bytes[at..<end], at: Int.random(in: 0...bytes.count, using: &random))
            default: bytes[at] = [0x00, 0x7F, 0x80, 0xFF][Int.random(in: 0..<4, using: &random)]
            }
        }
    }

    /// Feeds what was decoded to Core, as a node would.
    static func exercise(_ envelope: WireEnvelope) {
        var room = RoomState(roomID: envelope.roomID)
        switch envelope.message {
        case let .deltaBatch(batch):
            for delta in batch.deltas { _ = room.apply(delta) }
        case let .snapshot(state), let .patch(state):
            room.merge(state)
            room.merge(state)
        case let .syncResponse(response):
            if let patch = response.patch { room.merge(patch) }
            for batch in response.batches { for delta in batch.deltas { _ = room.apply(delta) } }
        case let .joinResponse(response):
            room.merge(response.state)
        default:
            break
        }
        _ = room.snapshot()
    }

    @Test("2,000 mutated golden vectors decode or throw, never crash")
    func mutations() throws {
        let seed = Self.seed
        let replay = "HOMEROOM_SEED=\(seed) swift test --filter HomeroomWireTests.MutationTests"
        var random = SplitMix64(seed: seed)
        let originals = Golden.vectors.map { WireCodec.encode($0.envelope) }
        var decoded = 0
        var codes: [String: Int] = [:]
        for iteration in 0..<Self.iterations {
            var bytes = originals[Int.random(in: 0..<originals.count, using: &random)]
            Self.mutate(&bytes, &random)
            do {
                let envelope = try WireCodec.decode(bytes)
                decoded += 1
                // A decoded value is whole and valid: it encodes and decodes to itself.
                let again = try WireCodec.decode(WireCodec.encode(envelope))
                if again != envelope {
                    Issue.record("iteration \(iteration): re-decoding changed the value; replay: \(replay)")
                }
                Self.exercise(envelope)
            } catch {
                codes[error.code, default: 0] += 1
            }
        }
        // The mix should exercise both outcomes.
        #expect(decoded > 0, "no mutation decoded; replay: \(replay)")
        #expect(codes.values.reduce(0, +) > Self.iterations / 4, "few mutations failed: \(codes); replay: \(replay)")
    }

    @Test("mutated bare batches and patches decode or throw, never crash")
    func bareMessages() {
        let seed = Self.seed &+ 1
        let replay = "HOMEROOM_SEED=\(Self.seed) swift test --filter HomeroomWireTests.MutationTests"
        var random = SplitMix64(seed: seed)
        let batch = WireCodec.encodeBatch(origin: Golden.nodeA, deltas: Golden.batchDeltas)
        let patch = WireCodec.encodePatch(Golden.room)
        for iteration in 0..<Self.iterations / 2 {
            var bytes = iteration % 2 == 0 ? batch : patch
            Self.mutate(&bytes, &random)
            if iteration % 2 == 0 {
                if let decoded = try? WireCodec.decodeBatch(bytes) {
                    var room = RoomState(roomID: "math-101")
                    for delta in decoded.deltas { _ = room.apply(delta) }
                    if (try? WireCodec.decodeBatch(WireCodec.encodeBatch(origin: decoded.origin, deltas: decoded.deltas))) != decoded {
                        Issue.record("iteration \(iteration): batch re-decode differs; replay: \(replay)")
                    }
                }
            } else if let decoded = try? WireCodec.decodePatch(bytes) {
                var room = Golden.room
                if decoded.roomID == room.roomID { room.merge(decoded) }
                if (try? WireCodec.decodePatch(WireCodec.encodePatch(decoded))) != decoded {
                    Issue.record("iteration \(iteration): patch re-decode differs; replay: \(replay)")
                }
            }
        }
    }
}
