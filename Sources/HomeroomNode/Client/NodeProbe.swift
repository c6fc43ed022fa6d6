import HomeroomCore
import HomeroomWire

/// One request to one node, for the CLI's one-shot commands: a hello (where it
/// publishes, the members it sees, and, an open node, the rooms it holds), or
/// where-now. A node that requires tokens lists its peers only to a valid token, and
/// its rooms to no client.
public enum NodeProbe {
    public static func hello(_ address: String, token: String?, timeoutMillis: UInt64) throws(ClientError) -> WireMessage.Heartbeat {
        var hello = WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: "")
        hello.listing = true
        let reply = try ask(address, token: token, .heartbeat(hello), timeoutMillis: timeoutMillis)
        guard case let .heartbeat(heartbeat) = reply else { throw .protocolError("a hello was answered with \(reply.kind)") }
        return heartbeat
    }

    /// Which rooms `user` is in now, across the cluster the node at `address` belongs
    /// to (docs/PROTOCOL.md, "Where now"). `token`: one for every room ("*").
    public static func whereNow(_ address: String, user: String, token: String?, timeoutMillis: UInt64) throws(ClientError) -> WireMessage.WhereNowReply {
        let reply = try ask(address, token: token, .whereNowRequest(user: user), timeoutMillis: timeoutMillis)
        guard case let .whereNowReply(answer) = reply else { throw .protocolError("a where-now request was answered with \(reply.kind)") }
        return answer
    }

    /// One request, one reply; a refusal is thrown with its code.
    static func ask(_ address: String, token: String?, _ message: WireMessage, timeoutMillis: UInt64) throws(ClientError) -> WireMessage {
        let requester: SPRequester
        do {
            requester = try SPRequester(name: "hr-probe")
            try requester.dial(address)
        } catch {
            throw .unavailable("\(address): \(error)")
        }
        defer { requester.close() }
        let envelope = WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero, credential: token.map { Array($0.utf8) } ?? [],
                                    message: message)
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
        if case let .error(refusal) = decoded.message { throw .refused(code: refusal.code, message: refusal.message) }
        return decoded.message
    }
}
