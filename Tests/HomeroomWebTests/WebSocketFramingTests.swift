import Testing
@testable import HomeroomWeb

/// RFC 6455's framing as the server reads and writes it: the handshake key, masks,
/// fragments between control frames, bounds, close.
@Suite struct WebSocketFramingTests {
    static let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

    @Test func acceptKeyIsRFC6455sExample() {
        // RFC 6455, section 1.3.
        #expect(WebSocketHandshake.acceptKey(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test func maskedHelloIsRFC6455sExample() throws {
        // RFC 6455, section 5.7: a masked "Hello".
        var reader = WebSocketReader()
        reader.feed([0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58])
        #expect(try reader.next() == .text("Hello"))
        #expect(try reader.next() == nil)
    }

    @Test func serverFramesAreUnmaskedWithEveryLengthForm() {
        #expect(WebSocketFrame.encode(.text, Array("Hello".utf8)) == [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])
        let medium = WebSocketFrame.encode(.binary, [UInt8](repeating: 1, count: 256))
        #expect(Array(medium.prefix(4)) == [0x82, 126, 0x01, 0x00])
        let large = WebSocketFrame.encode(.binary, [UInt8](repeating: 1, count: 65_536))
        #expect(Array(large.prefix(10)) == [0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])
    }

    @Test func bytesArrivingOneAtATimeMakeOneMessage() throws {
        var reader = WebSocketReader()
        let frame = WebSocketFrame.encode(.text, Array("one at a time".utf8), mask: Self.mask)
        for byte in frame.dropLast() {
            reader.feed([byte])
            #expect(try reader.next() == nil)
        }
        reader.feed([frame.last!])
        #expect(try reader.next() == .text("one at a time"))
    }

    @Test func fragmentsJoinAndControlFramesComeBetween() throws {
        var reader = WebSocketReader()
        reader.feed(WebSocketFrame.encode(.text, Array("Hel".utf8), fin: false, mask: Self.mask))
        reader.feed(WebSocketFrame.encode(.ping, Array("?".utf8), mask: Self.mask))
        reader.feed(WebSocketFrame.encode(.continuation, Array("lo".utf8), fin: true, mask: Self.mask))
        #expect(try reader.next() == .ping(Array("?".utf8)))
        #expect(try reader.next() == .text("Hello"))
    }

    @Test func unmaskedClientFrameIsAProtocolError() {
        var reader = WebSocketReader()
        reader.feed(WebSocketFrame.encode(.text, Array("hi".utf8)))
        #expect(throws: WebSocketViolation.self) { try reader.next() }
        do { _ = try reader.next() } catch { #expect(error.closeCode == WebSocketCloseCode.protocolError) }
    }

    @Test func oversizeFrameIsRefusedOnItsHeader() {
        var reader = WebSocketReader(maxMessage: 1_024)
        // Only the header of a 1 MiB frame: refused before any payload is buffered.
        reader.feed([0x81, 0x80 | 127, 0, 0, 0, 0, 0, 0x10, 0, 0] + Self.mask)
        do {
            _ = try reader.next()
            Issue.record("a 1 MiB frame was accepted")
        } catch {
            #expect(error.closeCode == WebSocketCloseCode.tooBig)
        }
    }

    @Test func fragmentsAddingUpPastTheBoundAreRefused() throws {
        var reader = WebSocketReader(maxMessage: 100)
        reader.feed(WebSocketFrame.encode(.text, [UInt8](repeating: 0x61, count: 60), fin: false, mask: Self.mask))
        #expect(try reader.next() == nil)
        reader.feed(WebSocketFrame.encode(.continuation, [UInt8](repeating: 0x61, count: 60), fin: true, mask: Self.mask))
        do {
            _ = try reader.next()
            Issue.record("120 bytes in fragments passed a 100-byte bound")
        } catch {
            #expect(error.closeCode == WebSocketCloseCode.tooBig)
        }
    }

    @Test func controlFramesMustBeSmallAndWhole() {
        var reader = WebSocketReader()
        reader.feed(WebSocketFrame.encode(.ping, [UInt8](repeating: 0, count: 126), mask: Self.mask))
        #expect(throws: WebSocketViolation.self) { try reader.next() }
        var fragmented = WebSocketReader()
        fragmented.feed(WebSocketFrame.encode(.ping, [], fin: false, mask: Self.mask))
        #expect(throws: WebSocketViolation.self) { try fragmented.next() }
    }

    @Test func continuationWithoutStartAndReservedBitsAreRefused() {
        var stray = WebSocketReader()
        stray.feed(WebSocketFrame.encode(.continuation, [1], mask: Self.mask))
        #expect(throws: WebSocketViolation.self) { try stray.next() }
        var reserved = WebSocketReader()
        var frame = WebSocketFrame.encode(.text, [0x61], mask: Self.mask)
        frame[0] |= 0x40
        reserved.feed(frame)
        #expect(throws: WebSocketViolation.self) { try reserved.next() }
    }

    @Test func invalidUTF8TextIsRefused() {
        var reader = WebSocketReader()
        reader.feed(WebSocketFrame.encode(.text, [0xC3, 0x28], mask: Self.mask))
        do {
            _ = try reader.next()
            Issue.record("invalid UTF-8 accepted")
        } catch {
            #expect(error.closeCode == WebSocketCloseCode.invalidData)
        }
    }

    @Test func closeCarriesItsCode() throws {
        var reader = WebSocketReader()
        reader.feed(WebSocketFrame.encode(.close, [0x03, 0xE8] + Array("bye".utf8), mask: Self.mask))
        #expect(try reader.next() == .close(code: 1000))
        var empty = WebSocketReader()
        empty.feed(WebSocketFrame.encode(.close, [], mask: Self.mask))
        #expect(try empty.next() == .close(code: nil))
        // The server's own close: code, then a reason cut to fit a control frame.
        let close = WebSocketFrame.close(1009, String(repeating: "x", count: 300))
        #expect(close[0] == 0x88 && close[1] == 125 && close[2] == 0x03 && close[3] == 0xF1)
    }

    @Test func handshakeChecksTheRequest() throws {
        let hosts: Set<String> = ["127.0.0.1:8080", "localhost:8080"]
        func head(_ lines: [String]) -> HTTPHead { HTTPHead(Array((["GET /ws HTTP/1.1"] + lines).joined(separator: "\r\n").utf8))! }
        let good = ["Host: 127.0.0.1:8080", "Upgrade: websocket", "Connection: keep-alive, Upgrade",
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "Origin: http://127.0.0.1:8080"]
        let reply = String(decoding: try WebSocketHandshake.reply(to: head(good), hosts: hosts), as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 101 "))
        #expect(reply.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"))
        // Another site's page may not open a socket here.
        let foreign = good.map { $0.hasPrefix("Origin:") ? "Origin: http://evil.example" : $0 }
        #expect(throws: WebSocketHandshake.Refusal(status: 403, reason: "origin http://evil.example is not this classroom's page (http://127.0.0.1:8080)")) {
            try WebSocketHandshake.reply(to: head(foreign), hosts: hosts)
        }
        let oldVersion = good.map { $0.hasPrefix("Sec-WebSocket-Version") ? "Sec-WebSocket-Version: 8" : $0 }
        #expect(throws: WebSocketHandshake.Refusal.self) { try WebSocketHandshake.reply(to: head(oldVersion), hosts: hosts) }
        let shortKey = good.map { $0.hasPrefix("Sec-WebSocket-Key") ? "Sec-WebSocket-Key: c2hvcnQ=" : $0 }
        #expect(throws: WebSocketHandshake.Refusal.self) { try WebSocketHandshake.reply(to: head(shortKey), hosts: hosts) }
        // A rebound DNS name (its Host and Origin agree, but name another host), and no Host at all.
        let rebound = good.map { $0.hasPrefix("Host:") ? "Host: evil.example:8080" : $0.hasPrefix("Origin:") ? "Origin: http://evil.example:8080" : $0 }
        #expect(throws: WebSocketHandshake.Refusal.self) { try WebSocketHandshake.reply(to: head(rebound), hosts: hosts) }
        #expect(throws: WebSocketHandshake.Refusal.self) { try WebSocketHandshake.reply(to: head(good.filter { !$0.hasPrefix("Host:") }), hosts: hosts) }
    }

    @Test func behindAProxyThePublicOriginIsAcceptedAndNoOtherSite() throws {
        let hosts: Set<String> = ["127.0.0.1:8080", "localhost:8080"]
        let origins = Set(["https://Class.Example.org/", "http://10.0.0.5:8000"].compactMap(WebSocketHandshake.normalizedOrigin))
        #expect(origins == ["https://class.example.org", "http://10.0.0.5:8000"])
        func head(host: String, origin: String) -> HTTPHead {
            HTTPHead(Array((["GET /ws HTTP/1.1", "Host: \(host)", "Upgrade: websocket", "Connection: Upgrade",
                             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13", "Origin: \(origin)"])
                .joined(separator: "\r\n").utf8))!
        }
        let proxied = try WebSocketHandshake.reply(to: head(host: "class.example.org", origin: "https://class.example.org"),
                                                   hosts: hosts, publicOrigins: origins)
        #expect(String(decoding: proxied, as: UTF8.self).hasPrefix("HTTP/1.1 101 "))
        // Without the setting, the same request is refused: the proxy's name is not this server's.
        #expect(throws: WebSocketHandshake.Refusal.self) {
            try WebSocketHandshake.reply(to: head(host: "class.example.org", origin: "https://class.example.org"), hosts: hosts)
        }
        // The public Host with another site's Origin, or the public Origin over another Host: refused.
        #expect(throws: WebSocketHandshake.Refusal.self) {
            try WebSocketHandshake.reply(to: head(host: "class.example.org", origin: "https://evil.example"), hosts: hosts, publicOrigins: origins)
        }
        #expect(throws: WebSocketHandshake.Refusal.self) {
            try WebSocketHandshake.reply(to: head(host: "10.0.0.5:8000", origin: "https://class.example.org"), hosts: hosts, publicOrigins: origins)
        }
        #expect(WebSocketHandshake.normalizedOrigin("class.example.org") == nil)
        #expect(WebSocketHandshake.normalizedOrigin("ftp://class.example.org") == nil)
        #expect(WebSocketHandshake.normalizedOrigin("https://class.example.org/path") == nil)
        #expect(WebSocketHandshake.normalizedOrigin("https://class.example.org:443") == "https://class.example.org")
    }
}
