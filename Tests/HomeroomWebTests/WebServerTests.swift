#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Testing
import HomeroomSupport
import HomeroomTestSupport
@testable import HomeroomWeb

/// The server over real loopback sockets: pages, the upgrade, frames, and the bounds a
/// slow or hostile browser meets. No node is needed: nothing here logs in for real.
@Suite(.serialized) struct WebServerTests {
    static func server(_ adjust: (inout WebLimits) -> Void = { _ in }) throws -> WebServer {
        var options = WebServer.Options(listen: "127.0.0.1:0", nodes: ["tcp://127.0.0.1:1"], themeJSON: "{}")
        adjust(&options.limits)
        return try WebServer(options, logger: Logger(label: "web-test", level: .error))
    }

    static func upgrade(_ port: UInt16) -> RawConnection? {
        guard let connection = RawConnection(port: port) else { return nil }
        connection.write(Array(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:\(port)\r\n\r\n").utf8))
        return connection
    }

    /// Reads the reply head (up to the blank line).
    static func head(_ connection: RawConnection) -> String {
        var bytes: [UInt8] = []
        while bytes.count < 8_192 {
            let byte = connection.read(1)
            guard let first = byte.first else { break }
            bytes.append(first)
            if bytes.suffix(4) == [13, 10, 13, 10] { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static let mask: [UInt8] = [1, 2, 3, 4]

    /// One unmasked server frame: its opcode and payload.
    static func frame(_ connection: RawConnection) -> (opcode: UInt8, payload: [UInt8])? {
        let header = connection.read(2)
        guard header.count == 2 else { return nil }
        var length = Int(header[1] & 0x7F)
        if length == 126 { length = connection.read(2).reduce(0) { $0 << 8 | Int($1) } }
        if length == 127 { length = connection.read(8).reduce(0) { $0 << 8 | Int($1) } }
        return (header[0] & 0x0F, connection.read(length))
    }

    @Test func servesThePageAndItsModules() throws {
        let server = try Self.server()
        defer { server.stop() }
        for (path, type) in [("/", "text/html"), ("/js/app.js", "text/javascript"), ("/style.css", "text/css"), ("/theme.json", "application/json")] {
            let connection = try #require(RawConnection(port: server.port))
            connection.write(Array("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let reply = String(decoding: connection.read(200_000), as: UTF8.self)
            connection.close()
            #expect(reply.hasPrefix("HTTP/1.1 200 OK"), "\(path): \(reply.prefix(80))")
            #expect(reply.contains("Content-Type: \(type)"))
            #expect(reply.contains("Content-Security-Policy: default-src 'self'"))
        }
        let missing = try #require(RawConnection(port: server.port))
        missing.write(Array("GET /etc/passwd HTTP/1.1\r\n\r\n".utf8))
        #expect(String(decoding: missing.read(1_000), as: UTF8.self).hasPrefix("HTTP/1.1 404"))
        missing.close()
    }

    @Test func upgradesAnswersPingsAndEchoesClose() throws {
        let server = try Self.server()
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        let head = Self.head(socket)
        #expect(head.hasPrefix("HTTP/1.1 101 "))
        #expect(head.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
        socket.write(WebSocketFrame.encode(.ping, Array("hi".utf8), mask: Self.mask))
        #expect(socket.read(4) == [0x8A, 2, 0x68, 0x69])
        socket.write(WebSocketFrame.encode(.close, [0x03, 0xE8], mask: Self.mask))
        #expect(socket.read(4) == [0x88, 2, 0x03, 0xE8])
        #expect(socket.peerClosed())
    }

    @Test func aFrameSentWithTheUpgradeIsRead() throws {
        let server = try Self.server()
        defer { server.stop() }
        let socket = try #require(RawConnection(port: server.port))
        defer { socket.close() }
        socket.write(Array(("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
            + WebSocketFrame.encode(.ping, Array("early".utf8), mask: Self.mask))
        #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        #expect(Self.frame(socket).map { $0.opcode == 0xA && $0.payload == Array("early".utf8) } == true)
    }

    @Test func aPageThatPingsAndNeverReadsIsDropped() throws {
        let server = try Self.server { $0.maxQueued = 64 << 10 }
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        _ = Self.head(socket)
        // 8 MiB of pongs owed, more than the kernel's buffers and the queue's bound hold.
        let ping = WebSocketFrame.encode(.ping, [UInt8](repeating: 0x70, count: 125), mask: Self.mask)
        let burst = Array([[UInt8]](repeating: ping, count: 1_000).joined())
        let started = WallClock.monotonicMillis()
        for _ in 0..<64 where WallClock.monotonicMillis() - started < 10_000 { socket.write(burst) }
        #expect(socket.peerClosed())
    }

    @Test func anOversizeFrameClosesTheSocketWith1009() throws {
        let server = try Self.server { $0.maxMessage = 1_024 }
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        _ = Self.head(socket)
        socket.write([0x81, 0x80 | 127, 0, 0, 0, 0, 0x7F, 0, 0, 0] + Self.mask)
        let close = socket.read(4)
        #expect(close.first == 0x88)
        #expect(close.count == 4 && UInt16(close[2]) << 8 | UInt16(close[3]) == WebSocketCloseCode.tooBig)
    }

    @Test func aBadTokenEndsTheSessionWithItsCode() throws {
        let server = try Self.server()
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        _ = Self.head(socket)
        socket.write(WebSocketFrame.encode(.text, Array(#"{"type":"login","token":"not-a-token"}"#.utf8), mask: Self.mask))
        let ended = try #require(Self.frame(socket))
        let text = String(decoding: ended.payload, as: UTF8.self)
        #expect(ended.opcode == 1 && text.contains(#""type":"ended""#) && text.contains(#""code":"invalid-argument""#), "\(text)")
        #expect(Self.frame(socket)?.opcode == 8)
    }

    @Test func sessionsAndConnectionsAreBounded() throws {
        let server = try Self.server { $0.maxSessions = 1; $0.maxConnectionsPerPeer = 3 }
        defer { server.stop() }
        let first = try #require(Self.upgrade(server.port))
        defer { first.close() }
        #expect(Self.head(first).hasPrefix("HTTP/1.1 101 "))
        let second = try #require(Self.upgrade(server.port))
        defer { second.close() }
        #expect(Self.head(second).hasPrefix("HTTP/1.1 503 "))
        // Three open from this address (the socket and two idle ones): a fourth is refused at once.
        let idle = try (0..<2).map { _ in try #require(RawConnection(port: server.port)) }
        defer { idle.forEach { $0.close() } }
        usleep(100_000)
        let extra = try #require(RawConnection(port: server.port))
        defer { extra.close() }
        #expect(String(decoding: extra.read(12), as: UTF8.self) == "HTTP/1.1 503")
    }

    @Test func aSilentConnectionIsDropped() throws {
        let server = try Self.server { $0.headTimeoutMillis = 300 }
        defer { server.stop() }
        let silent = try #require(RawConnection(port: server.port))
        defer { silent.close() }
        let started = WallClock.monotonicMillis()
        #expect(silent.peerClosed())
        #expect(WallClock.monotonicMillis() - started < 2_500)
        // Half a request head, then nothing: dropped the same way.
        let slow = try #require(RawConnection(port: server.port))
        defer { slow.close() }
        slow.write(Array("GET / HTTP/1.1\r\nHost: x".utf8))
        #expect(slow.peerClosed())
    }

    @Test func stoppingClosesEveryDescriptor() throws {
        // Twenty servers, each stopped with a socket and a half-sent request open: a leak
        // would show as at least twenty descriptors (other suites running beside this one
        // open and close a few of their own meanwhile, hence the margin).
        let before = ProcessCounts.descriptors()
        for _ in 0..<20 {
            let server = try Self.server()
            let socket = try #require(Self.upgrade(server.port))
            _ = Self.head(socket)
            let partial = try #require(RawConnection(port: server.port))
            partial.write(Array("GET / HTTP/1.1\r\n".utf8))
            server.stop()
            #expect(socket.peerClosed() && partial.peerClosed())
            socket.close()
            partial.close()
        }
        #expect(ProcessCounts.descriptors() < before + 10, "descriptors before \(before), after \(ProcessCounts.descriptors())")
    }
}
