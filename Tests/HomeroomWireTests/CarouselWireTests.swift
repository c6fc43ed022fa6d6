import HomeroomCore
import Testing
import HomeroomWire

/// The carousel's interval on the wire: a `set_carousel` write out of 10-99 s is a
/// well-formed message (the authority rules refuse it, `not-allowed`, as they do a
/// lock TTL out of range), while a patch whose carousel register holds one is refused
/// whole: no replica's state can hold it.
@Suite("Carousel on the wire")
struct CarouselWireTests {
    static let clock = HybridTimestamp(millis: 1_000, logical: 0, replica: ReplicaID(7))

    @Test("a set_carousel write with its interval out of 10-99 s decodes, in a write request and in a batch", arguments: [UInt32(0), 5, 9, 100, 3_600])
    func anIntervalOutOfRangeDecodes(seconds: UInt32) throws {
        let operation = Operation.setCarousel(Carousel(intervalSeconds: seconds))
        let write = Write(author: "tom", authorRole: .teacher, authorCounter: 9, operation: operation)
        let envelope = WireEnvelope(roomID: "r", sender: ReplicaID(0), sequence: 1, clock: .zero,
                                    message: .writeRequest(.init(requestID: 3, write: write)))
        #expect(try WireCodec.decode(WireCodec.encode(envelope)) == envelope)
        let delta = Delta(sequence: 1, clock: Self.clock, author: "tom", authorRole: .teacher, authorCounter: 9, operation: operation)
        #expect(try WireCodec.decodeBatch(WireCodec.encodeBatch(origin: ReplicaID(7), deltas: [delta])).deltas == [delta])
        // ... and every replica refuses it alike, as the rule of a lock TTL out of range.
        #expect(Authority.check(author: "tom", role: .teacher, operation: operation)?.code == "invalid-value")
    }

    @Test("a patch whose running carousel turns every 5 s is refused invalid-value; 10 and 99 s, or a stopped one, are taken")
    func aPatchHoldsOnlyAnIntervalInRange() throws {
        func patch(_ carousel: Carousel) -> [UInt8] {
            var room = RoomState(roomID: "r")
            room.carousel = Register(carousel, stamp: Stamp(clock: Self.clock, sequence: 1))
            return WireCodec.encodePatch(room)
        }
        for carousel in [Carousel(intervalSeconds: 10), Carousel(intervalSeconds: 99), Carousel(running: false, intervalSeconds: 5)] {
            #expect(try WireCodec.decodePatch(patch(carousel)).carousel.value == carousel)
        }
        #expect(throws: WireError.self) { try WireCodec.decodePatch(patch(Carousel(intervalSeconds: 5))) }
        do {
            _ = try WireCodec.decodePatch(patch(Carousel(intervalSeconds: 100)))
            Issue.record("a carousel turning every 100 s was taken")
        } catch {
            #expect("\(error)".contains("interval_seconds"), "\(error)")
        }
    }
}
