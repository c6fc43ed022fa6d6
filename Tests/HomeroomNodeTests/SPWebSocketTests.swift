import Foundation
import Testing
@testable import HomeroomNode

/// SP over WebSocket's pure parts: the upgrade both ways, frames both ways, and what a
/// hostile peer's bytes get.
@Suite struct SPWebSocketTests {
    static func request(_ path: String, protocolName: String = "pub.sp.nanomsg.org", key: String = "dGhlIHNhbXBsZSBub25jZQ==") -> [UInt8] {
        Array("GET \(path) HTTP/1.1\r\nHost: h:1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: \(protocolName)\r\n\r\n".utf8)
    }

    @Test func theAcceptValueIsRFC6455s() {
        // RFC 6455, section 1.3's own example.
        #expect(SPWebSocket.acceptValue(key: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        #expect(SPWebSocket.base64([0xFF]) == "/w==" && SPWebSocket.base64([1, 2]) == "AQI=" && SPWebSocket.base64([1, 2, 3]) == "AQID")
    }

    @Test func anUpgradeRequestIsParsedOnlyWhenWholeAndValid() {
        let bytes = Self.request("/v1/rooms/maths")
        #expect(SPWebSocket.parseRequest(bytes.dropLast(1)[...]) == .incomplete)
        guard case .request(let request, let consumed) = SPWebSocket.parseRequest((bytes + [0x82, 0x00])[...]) else {
            Issue.record("a valid request was not taken")
            return
        }
        #expect(request.resource == "/v1/rooms/maths" && request.subprotocols == ["pub.sp.nanomsg.org"] && consumed == bytes.count)
        // A plain HTTP GET (a browser at the metrics port's neighbour), a POST, no key, an old version.
        let plain = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        guard case .invalid(426, _) = SPWebSocket.parseRequest(plain[...]) else { Issue.record("a plain GET was taken"); return }
        let post = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "GET", with: "POST").utf8)
        guard case .invalid(400, _) = SPWebSocket.parseRequest(post[...]) else { Issue.record("a POST was taken"); return }
        let old = Array(String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "Version: 13", with: "Version: 8").utf8)
        guard case .invalid(426, _) = SPWebSocket.parseRequest(old[...]) else { Issue.record("version 8 was taken"); return }
        // Headers that never end are refused once past the bound, not buffered forever.
        let endless = Array("GET / HTTP/1.1\r\n".utf8) + [UInt8](repeating: 0x41, count: SPWebSocket.maxHandshakeBytes + 10)
        guard case .invalid(431, _) = SPWebSocket.parseRequest(endless[...]) else { Issue.record("endless headers were not refused"); return }
    }

    @Test func theClientChecksTheServersAnswer() {
        let key = SPWebSocket.newKey()
        let answer = SPWebSocket.response(key: key, subprotocol: "pub.sp.nanomsg.org")
        #expect(SPWebSocket.parseResponse(answer[...], key: key, subprotocol: "pub.sp.nanomsg.org") == .accepted(consumed: answer.count))
        #expect(SPWebSocket.parseResponse(answer.dropLast(2)[...], key: key, subprotocol: "pub.sp.nanomsg.org") == .incomplete)
        guard case .refused = SPWebSocket.parseResponse(answer[...], key: SPWebSocket.newKey(), subprotocol: "pub.sp.nanomsg.org") else {
            Issue.record("an answer to another key was taken")
            return
        }
        guard case .refused(let why) = SPWebSocket.parseResponse(SPWebSocket.refusal(status: 404, reason: "no such room")[...], key: key,
                                                                  subprotocol: "pub.sp.nanomsg.org") else {
            Issue.record("a 404 was taken")
            return
        }
        #expect(why.contains("404") && why.contains("no such room"), "\(why)")
    }

    /// Parses every frame of `bytes` back into messages, as a peer would.
    static func messages(in bytes: [UInt8], fromClient: Bool) -> [[UInt8]]? {
        var out: [[UInt8]] = []
        var partial: [UInt8] = []
        var offset = 0
        while offset < bytes.count {
            guard case .frame(let frame) = SPWebSocket.parseFrame(bytes[offset...], fromClient: fromClient, maxPayload: 1 << 24) else { return nil }
            offset += frame.consumed
            partial += frame.payload
            if frame.fin { out.append(partial); partial = [] }
        }
        return out
    }

    @Test(arguments: [0, 1, 125, 126, 65_535, 65_536, 200_000])
    func aMessageOfAnySizeComesBackWhole(size: Int) {
        var random = SystemRandomNumberGenerator()
        let payload = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
        for masked in [false, true] {
            let frame = SPWebSocket.message(payload, masked: masked)
            #expect(Self.messages(in: frame.prefix + frame.body, fromClient: masked) == [payload], "size \(size), masked \(masked)")
            // Every frame this side sends fits nng's default 1 MiB frame limit.
            #expect(frame.prefix.count <= 14)
        }
    }

    @Test func hostileFramesAreRefusedBeforeTheirPayloadArrives() {
        // Unmasked from a client, masked from a server.
        #expect(SPWebSocket.parseFrame([0x82, 0x01, 0x41][...], fromClient: true, maxPayload: 100) != .incomplete)
        guard case .invalid = SPWebSocket.parseFrame([0x82, 0x01, 0x41][...], fromClient: true, maxPayload: 100) else { Issue.record("unmasked"); return }
        guard case .invalid = SPWebSocket.parseFrame([0x82, 0x81, 1, 2, 3, 4, 0x41][...], fromClient: false, maxPayload: 100) else { Issue.record("masked"); return }
        // A 2^63-byte frame announced in ten bytes is refused at once.
        let huge: [UInt8] = [0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        guard case .invalid = SPWebSocket.parseFrame(huge[...], fromClient: true, maxPayload: 16 << 20) else { Issue.record("huge"); return }
        // Reserved bits, unknown opcodes, long or fragmented control frames.
        for bad: [UInt8] in [[0xC2, 0x80, 0, 0, 0, 0], [0x83, 0x80, 0, 0, 0, 0], [0x89, 0xFE, 0, 200, 0, 0, 0, 0], [0x09, 0x80, 0, 0, 0, 0]] {
            guard case .invalid = SPWebSocket.parseFrame(bad[...], fromClient: true, maxPayload: 1 << 20) else { Issue.record("\(bad) taken"); return }
        }
    }

    @Test func roomStreamPathsNameExactlyTheirTopics() throws {
        #expect(try RoomStreams.topics(forResource: "/v1/rooms/maths").get() == [Topics.clientRoom("maths")])
        #expect(try RoomStreams.topics(forResource: "/v1/rooms/maths:g1/users/ada%20lovelace").get()
                == [Topics.clientRoom("maths:g1"), Topics.clientUser("maths:g1", "ada lovelace")])
        #expect(RoomStreams.path(room: "maths", user: "ada lovelace/x") == "/v1/rooms/maths/users/ada%20lovelace%2Fx")
        #expect(try RoomStreams.topics(forResource: RoomStreams.path(room: "r", user: "ä/b")).get()[1] == Topics.clientUser("r", "ä/b"))
        #expect(RoomStreams.url(publishAddress: "tls+tcp://node-1:7101", room: "r") == "wss://node-1:7101/v1/rooms/r")
        #expect(RoomStreams.url(publishAddress: "ipc:///tmp/x", room: "r") == nil)
        for bad in ["/", "/v1/rooms/", "/v1/rooms/a b", "/v1/rooms/%zz", "/v1/rooms/r/users/", "/v1/rooms/r/users/a/b", "/v1/rooms/r/x/y",
                    "/v1/rooms/r/users/%00"] {
            guard case .failure = RoomStreams.topics(forResource: bad) else { Issue.record("\(bad) was taken"); continue }
        }
    }
}
