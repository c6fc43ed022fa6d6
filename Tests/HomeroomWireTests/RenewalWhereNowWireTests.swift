import HomeroomCore
import Testing
import HomeroomWire

/// Token renewal and where-now (docs/PROTOCOL.md, "Token renewal", "Where now") survive
/// the wire, every field.
@Suite struct RenewalWhereNowWireTests {
    @Test func aRenewalAndItsReplyRoundTrip() throws {
        let request = WireEnvelope(roomID: "maths", sender: ReplicaID(0), sequence: 0, clock: .zero, credential: Array("hr1.x.y".utf8),
                                   message: .renewRequest(session: "ada-42-1"))
        let decoded = try WireCodec.decode(WireCodec.encode(request))
        #expect(decoded == request)
        #expect(decoded.message.kind == "renew_request")
        for expiresAt in [Int64(0), 1_900_000_000, Int64.max] {
            let reply = WireEnvelope(roomID: "maths", sender: ReplicaID(3), sequence: 1, clock: .zero, message: .renewReply(expiresAt: expiresAt))
            #expect(try WireCodec.decode(WireCodec.encode(reply)) == reply)
        }
    }

    @Test func aWhereNowQuestionAndItsAnswerRoundTrip() throws {
        let request = WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero, message: .whereNowRequest(user: "ada"))
        #expect(try WireCodec.decode(WireCodec.encode(request)) == request)
        for answer in [WireMessage.WhereNowReply(rooms: []),
                       WireMessage.WhereNowReply(rooms: ["art", "maths:g1", "é-room"], truncated: true, unanswered: 2)] {
            let envelope = WireEnvelope(roomID: "", sender: ReplicaID(5), sequence: 2, clock: .zero, message: .whereNowReply(answer))
            let decoded = try WireCodec.decode(WireCodec.encode(envelope))
            #expect(decoded == envelope)
            #expect(decoded.message.kind == "where_now_reply")
        }
    }
}
