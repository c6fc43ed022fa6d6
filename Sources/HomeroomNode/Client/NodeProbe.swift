import HomeroomCore
import HomeroomWire

/// One hello to one node, for the CLI's list commands: where it publishes, the
/// members it sees, and (an open node) the rooms it holds. A node that requires
/// tokens lists its peers only to a valid token, and its rooms to no client.
public enum NodeProbe {
    public static func hello(_ address: String, token: String?, timeoutMillis: UInt64) throws(ClientError) -> WireMessage.Heartbeat {
        let requester: SPRequester
        do {
            requester = try SPRequester(name: "hr-probe")
            try requester.dial(address)
        } catch {
            throw .unavailable("\(address): \(error)")
        }
        defer { requester.close() }
        var hello = WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: "")
        hello.listing = true
        let envelope = WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero, credential: token.map { Array($0.utf8) } ?? [],
                                    message: .heartbeat(hello))
        let reply: [UInt8]
        do {
            reply = try requester.request(WireCodec.encode(envelope), timeout: .milliseconds(Int64(min(timeoutMillis, 3_600_000))))
        } catch {
            throw .unavailable("\(error)")
        }
        let decoded: WireEnvelope
        do {
            decoded = try WireCodec.decode(reply, limits: .largeReplies)
        } catch {
            throw .protocolError("\(error)")
        }
        switch decoded.message {
        case let .heartbeat(heartbeat): return heartbeat
        case let .error(refusal): throw .refused(code: refusal.code, message: refusal.message)
        default: throw .protocolError("a hello was answered with \(decoded.message.kind)")
        }
    }
}
