#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Testing
import Synchronization
import HomeroomSupport
import HomeroomTestSupport
@testable import HomeroomWeb

/// The server over real loopback sockets: pages, the upgrade, frames, and the bounds a
/// slow or hostile browser meets. No node is needed: nothing here logs in for real.
@Suite(.serialized) struct WebServerTests {
    static func server(_ adjust: (inout WebLimits) -> Void = { _ in }, options change: (inout WebServer.Options) -> Void = { _ in },
                       sessions: WebServerLoop.SessionFactory? = nil) throws -> WebServer {
        var options = WebServer.Options(listen: "127.0.0.1:0", nodes: ["tcp://127.0.0.1:1"], themeJSON: "{}")
        adjust(&options.limits)
        change(&options)
        return try WebServer(options, logger: Logger(label: "web-test", level: .error), openSession: sessions)
    }

    /// Stands in for a `BrowserSession`: keeps each socket's link, does nothing.
    final class Probes: Sendable {
        final class Probe: WebSocketHandler {
            func received(_ text: String) {}
            func ended() {}
        }
        private let links = Mutex<[WebSocketLink]>([])
        func open(_ link: WebSocketLink) -> any WebSocketHandler { links.withLock { $0.append(link) }; return Probe() }
        var first: WebSocketLink? { links.withLock { $0.first } }
    }

    /// A join token `ClassroomConfig(token:)` reads (ann, a student of "maths"); unsigned: no node here checks it.
    static let token = "hr1.eyJhcHAiOiJob21lcm9vbSIsInJvb20iOiJtYXRocyIsInVzZXIiOiJhbm4iLCJyb2xlIjoic3R1ZGVudCIsInByaXZpbGVnZXMiOltdLCJpYXQiOjAsImV4cCI6NDAwMDAwMDAwMH0.c2ln"

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
            // Not framed by another site (clickjacking): CSP for today's browsers, the header for older ones.
            #expect(reply.contains("frame-ancestors 'none'\r\n") && reply.contains("X-Frame-Options: DENY\r\n"))
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
        socket.write(Array(("GET /ws HTTP/1.1\r\nHost: localhost:\(server.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
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

    @Test func aSocketThatDoesNotLogInIsClosedWith1008() throws {
        let server = try Self.server { $0.loginTimeoutMillis = 300 }
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        // Heard from (as a pong to the server's ping would be): closed at the login deadline all the same.
        socket.write(WebSocketFrame.encode(.ping, [], mask: Self.mask))
        #expect(Self.frame(socket)?.opcode == 0xA)
        let close = try #require(Self.frame(socket))
        #expect(close.opcode == 8 && close.payload.count >= 2
                && UInt16(close.payload[0]) << 8 | UInt16(close.payload[1]) == WebSocketCloseCode.policyViolation)
    }

    @Test func onePeerCannotTakeEverySession() throws {
        #expect(WebLimits().maxSessionsPerPeer * 2 <= WebLimits().maxSessions)
        let server = try Self.server()
        defer { server.stop() }
        var sockets: [RawConnection] = []
        defer { sockets.forEach { $0.close() } }
        for _ in 0..<WebLimits().maxSessionsPerPeer {
            let socket = try #require(Self.upgrade(server.port))
            sockets.append(socket)
            #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        }
        let extra = try #require(Self.upgrade(server.port))
        sockets.append(extra)
        #expect(Self.head(extra).hasPrefix("HTTP/1.1 503 "))
    }

    @Test func aTrickledHeadIsDroppedAtItsDeadline() throws {
        let server = try Self.server { $0.headTimeoutMillis = 600 }
        defer { server.stop() }
        let slow = try #require(RawConnection(port: server.port))
        defer { slow.close() }
        // A byte every 100 ms, never the end of the head: the deadline counts from the accept.
        let started = WallClock.monotonicMillis()
        var closed = false
        while !closed && WallClock.monotonicMillis() - started < 4_000 {
            slow.write(Array("G".utf8))
            usleep(100_000)
            var byte: UInt8 = 0
            let n = recv(slow.fd, &byte, 1, Int32(MSG_DONTWAIT))
            closed = n == 0 || (n < 0 && errno != EAGAIN)
        }
        #expect(closed)
        #expect(WallClock.monotonicMillis() - started < 2_500)
    }

    @Test func aSecondLoginOnASocketIsRefused() throws {
        // A node that takes the connection and never answers: the first login is still joining.
        let mute = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(mute) }
        let port = try #require(bindLoopback(mute))
        #expect(Glibc.listen(mute, 8) == 0)
        let server = try Self.server(options: { $0.nodes = ["tcp://127.0.0.1:\(port)"] })
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        let login = WebSocketFrame.encode(.text, Array(#"{"type":"login","token":"\#(Self.token)"}"#.utf8), mask: Self.mask)
        socket.write(login + login)
        let ended = try #require(Self.frame(socket))
        let text = String(decoding: ended.payload, as: UTF8.self)
        #expect(ended.opcode == 1 && text.contains("one login per socket"), "\(text)")
        #expect(Self.frame(socket)?.opcode == 8)
    }

    @Test func theLoopsOwnFramesAreCountedInTheQueue() throws {
        let probes = Probes()
        let server = try Self.server(sessions: { probes.open($0) })
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        for _ in 0..<5 {
            socket.write(WebSocketFrame.encode(.ping, Array("hi".utf8), mask: Self.mask))
            #expect(socket.read(4) == [0x8A, 2, 0x68, 0x69])
        }
        // The handshake and the pongs were all read: nothing is owed (not less than nothing,
        // which would hide a page that does not read from the session's backpressure).
        let link = try #require(probes.first)
        let started = WallClock.monotonicMillis()
        while link.queuedBytes != 0 && WallClock.monotonicMillis() - started < 1_000 { usleep(10_000) }
        #expect(link.queuedBytes == 0)
    }

    @Test func nothingFollowsAClose() throws {
        let server = try Self.server { $0.loginTimeoutMillis = 300 }
        defer { server.stop() }
        let socket = try #require(Self.upgrade(server.port))
        defer { socket.close() }
        #expect(Self.head(socket).hasPrefix("HTTP/1.1 101 "))
        #expect(Self.frame(socket)?.opcode == 8)
        // After the server's close: a ping, a message, the answering close. No pong; closed.
        socket.write(WebSocketFrame.encode(.ping, Array("late".utf8), mask: Self.mask)
            + WebSocketFrame.encode(.text, Array(#"{"type":"page","index":1}"#.utf8), mask: Self.mask)
            + WebSocketFrame.encode(.close, [0x03, 0xE8], mask: Self.mask))
        #expect(socket.read(64).isEmpty)
    }

    @Test func aSocketMustNameThisServerAsItsHost() throws {
        let server = try Self.server()
        defer { server.stop() }
        func upgrade(host: String?) -> String {
            guard let connection = RawConnection(port: server.port) else { return "" }
            defer { connection.close() }
            let hostLine = host.map { "Host: \($0)\r\nOrigin: http://\($0)\r\n" } ?? ""
            connection.write(Array(("GET /ws HTTP/1.1\r\n\(hostLine)Upgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
            return Self.head(connection)
        }
        // A DNS name rebound to this address (Host and Origin agree, but name another server), and no Host.
        #expect(upgrade(host: "evil.example:\(server.port)").hasPrefix("HTTP/1.1 403 "))
        #expect(upgrade(host: nil).hasPrefix("HTTP/1.1 403 "))
        #expect(upgrade(host: "localhost:\(server.port)").hasPrefix("HTTP/1.1 101 "))
    }

    @Test func aClosedMailboxTakesNoMail() throws {
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { Glibc.close(ends[0]) }
        let mailbox = Mailbox(wake: ends[1])
        mailbox.post(.close(connection: 1, code: WebSocketCloseCode.normal, reason: ""))
        #expect(mailbox.takeAll().count == 1)
        mailbox.close()
        // A session posting after the loop ended: no write to the closed (or reused) descriptor, no mail.
        mailbox.post(.close(connection: 1, code: WebSocketCloseCode.normal, reason: ""))
        mailbox.wakeUp()
        #expect(mailbox.takeAll().isEmpty)
        var wake = [UInt8](repeating: 0, count: 16)
        #expect(Glibc.read(ends[0], &wake, 16) == 8)   // the one wake before the close, then end of file
        #expect(Glibc.read(ends[0], &wake, 16) == 0)
    }
}
