import HomeroomCore
import Testing
import HomeroomWire

/// The probe messages (docs/PROTOCOL.md, "Probes") survive the wire, every field.
@Suite struct ProbeWireTests {
    @Test func aProbeRequestAndItsReplyRoundTrip() throws {
        let target = ReplicaID(0xFEDC_BA98_7654_3210)
        let request = WireEnvelope(roomID: "", sender: ReplicaID(7), sequence: 3, clock: .zero, message: .probeRequest(target: target))
        #expect(try WireCodec.decode(WireCodec.encode(request)) == request)
        for reply in [WireMessage.ProbeReply(target: target, alive: true, incarnation: .max, heardAgoMillis: 420),
                      WireMessage.ProbeReply(target: target, alive: false, incarnation: 0)] {
            let envelope = WireEnvelope(roomID: "", sender: ReplicaID(9), sequence: 4, clock: .zero, message: .probeReply(reply))
            let decoded = try WireCodec.decode(WireCodec.encode(envelope))
            #expect(decoded == envelope)
            #expect(decoded.message.kind == "probe_reply")
        }
    }
}
