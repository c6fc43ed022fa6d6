@preconcurrency import Glibc
import CLinuxEvents
import Dispatch
import Synchronization
import HomeroomSupport

/// The server's one poll loop: it owns and closes every descriptor (the listener,
/// page loads, sockets). Page loads are answered from `assets` and closed; `/ws`
/// upgrades to a WebSocket whose messages go to the handler `openSession` makes.
/// Its mutable state is touched by its thread only (`@unchecked`).
final class WebServerLoop: @unchecked Sendable {
    typealias SessionFactory = @Sendable (WebSocketLink) -> any WebSocketHandler

    let listener: Int32
    let mailbox: Mailbox
    /// The `Host` values a socket's upgrade may name: this server's address and port.
    let hosts: Set<String>
    /// Where a reverse proxy serves the page (`https://class.example.org`): accepted as Origin and Host.
    let publicOrigins: Set<String>
    let limits: WebLimits
    let assets: [String: PageAsset]
    let openSession: SessionFactory
    let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let sessionCount = Atomic<Int>(0)

    // Loop-confined.
    private var connections: [Int32: Connection] = [:]
    private var nextID: UInt64 = 0
    /// While accept fails for want of descriptors, the listener rests until then (else
    /// poll reports it ready at once, again and again: a spinning loop).
    private var acceptPausedUntil: UInt64 = 0

    private struct Connection {
        enum Phase { case request, reply, socket }
        var id: UInt64
        var phase = Phase.request
        var head: [UInt8] = []
        var reader: WebSocketReader
        var outbox: [UInt8] = []
        var written = 0
        var link: WebSocketLink?
        var handler: (any WebSocketHandler)?
        var peer: [UInt8]
        var heardMillis: UInt64
        /// When the phase began (the accept, the reply, the upgrade): the head, reply and
        /// login deadlines count from here, so a trickle of bytes does not extend them.
        var phaseSinceMillis: UInt64
        /// The browser's close arrived: whatever it sends after is ignored.
        var closeReceived = false
        var pingedMillis: UInt64 = 0
        /// Set once a close frame is queued: nothing more is read but the answer, then it is closed.
        var closingSinceMillis: UInt64?
        var closeWhenFlushed = false
    }

    init(listener: Int32, wake: Int32, hosts: Set<String>, publicOrigins: Set<String> = [], limits: WebLimits, assets: [String: PageAsset], logger: Logger,
         openSession: @escaping SessionFactory) {
        self.listener = listener
        self.mailbox = Mailbox(wake: wake)
        self.hosts = hosts
        self.publicOrigins = publicOrigins
        self.limits = limits
        self.assets = assets
        self.logger = logger
        self.openSession = openSession
    }

    var sessions: Int { sessionCount.load(ordering: .relaxed) }

    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        mailbox.wakeUp()
    }

    func run() {
        defer {
            for fd in Array(connections.keys) { drop(fd, why: "server stopping") }
            Glibc.close(listener)
            mailbox.close()
        }
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while !stopping.load(ordering: .acquiring) {
            let accepting = WallClock.monotonicMillis() >= acceptPausedUntil
            var fds = [pollfd(fd: mailbox.wake, events: Int16(POLLIN), revents: 0)]
            if accepting { fds.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0)) }
            for (fd, connection) in connections {
                let wantsWrite = connection.written < connection.outbox.count
                fds.append(pollfd(fd: fd, events: Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0), revents: 0))
            }
            _ = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), accepting ? 500 : 100) }
            let now = WallClock.monotonicMillis()
            for entry in fds where entry.revents != 0 {
                switch entry.fd {
                case mailbox.wake:
                    var count: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &count) { Glibc.read(mailbox.wake, $0.baseAddress, 8) }
                case listener:
                    accept(now)
                default:
                    if entry.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { readFrom(entry.fd, now, &buffer) }
                    if entry.revents & Int16(POLLOUT) != 0 { flush(entry.fd) }
                }
            }
            deliverMail(now)
            expire(now)
        }
    }

    // MARK: - Accepting

    private func accept(_ now: UInt64) {
        // A bounded number per round, so a flood of connects cannot starve the others.
        for _ in 0..<64 {
            let fd = clinux_accept_nonblocking(listener)
            guard fd >= 0 else {
                if errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM {
                    acceptPausedUntil = now + 100
                    logger.warning("out of descriptors: not accepting for 100 ms", ["open": "\(connections.count)"])
                }
                return
            }
            let peer = Listener.peerAddress(fd)
            if connections.count >= limits.maxConnections || connections.values.filter({ $0.peer == peer }).count >= limits.maxConnectionsPerPeer {
                // Refused at once, not queued: a page load retries, a flood gets nothing.
                let reply = HTTPReply.text(503, "too many connections: close other classroom tabs and reload")
                _ = reply.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                Glibc.close(fd)
                continue
            }
            nextID += 1
            connections[fd] = Connection(id: nextID, reader: WebSocketReader(maxMessage: limits.maxMessage), peer: peer, heardMillis: now, phaseSinceMillis: now)
        }
    }

    // MARK: - Reading

    private func readFrom(_ fd: Int32, _ now: UInt64, _ buffer: inout [UInt8]) {
        guard var connection = connections[fd] else { return }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
        guard n > 0 else { drop(fd, why: "peer closed"); return }
        connection.heardMillis = now
        switch connection.phase {
        case .reply:
            break   // a page load's reply is on its way; nothing more is read
        case .request:
            connection.head += buffer[0..<n]
            if let end = HTTPHead.end(of: connection.head) {
                let head = HTTPHead(connection.head[..<end])
                // Bytes after the head are a socket's first frames, if it upgrades.
                connection.reader.feed(connection.head[(end + 4)...])
                connection.head = []
                connections[fd] = connection
                answer(fd, head)
                if connections[fd]?.phase == .socket { readMessages(fd, now) }
                return
            }
            if connection.head.count > limits.maxHead {
                connections[fd] = connection
                reply(fd, HTTPReply.text(431, "request head over \(limits.maxHead) bytes"))
                return
            }
        case .socket:
            // After the browser's close nothing it sends is read: only our close is left to write.
            guard !connection.closeReceived else { break }
            connection.reader.feed(buffer[0..<n])
            connections[fd] = connection
            readMessages(fd, now)
            return
        }
        connections[fd] = connection
    }

    private func readMessages(_ fd: Int32, _ now: UInt64) {
        while var connection = connections[fd], !connection.closeReceived {
            let message: WebSocketMessage?
            do {
                message = try connection.reader.next()
            } catch {
                logger.info("closing a socket", ["connection": "\(connection.id)", "why": error.reason])
                connections[fd] = connection
                closeSocket(fd, code: error.closeCode, reason: error.reason, now)
                return
            }
            connections[fd] = connection
            guard let message else { return }
            switch message {
            case .text(let text):
                if connection.closingSinceMillis == nil { connection.handler?.received(text) }
            case .binary:
                closeSocket(fd, code: WebSocketCloseCode.invalidData, reason: "the page sends text (JSON) only", now)
                return
            case .ping(let payload):
                // No frame follows our close.
                if connection.closingSinceMillis == nil { enqueue(fd, WebSocketFrame.encode(.pong, payload)) }
            case .pong:
                break
            case .close:
                if connection.closingSinceMillis == nil {
                    // Answered with a close of our own, then closed once it is written.
                    connections[fd]?.closingSinceMillis = now
                    enqueue(fd, WebSocketFrame.close(WebSocketCloseCode.normal))
                }
                connections[fd]?.closeReceived = true
                connections[fd]?.closeWhenFlushed = true
                flush(fd)
                return
            }
        }
    }

    private func answer(_ fd: Int32, _ head: HTTPHead?) {
        guard let head else { reply(fd, HTTPReply.text(400, "not an HTTP/1.1 request")); return }
        if head.path == "/ws" {
            upgrade(fd, head)
            return
        }
        guard head.method == "GET" || head.method == "HEAD" else { reply(fd, HTTPReply.text(405, "only GET")); return }
        guard let asset = assets[head.path] else { reply(fd, HTTPReply.text(404, "not found: the classroom is at /")); return }
        var bytes = HTTPReply.make(200, asset.contentType, asset.body,
                                   extraHeaders: "Content-Security-Policy: default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'\r\n"
                                       + "X-Frame-Options: DENY\r\n")
        if head.method == "HEAD", let end = HTTPHead.end(of: bytes) { bytes = Array(bytes[..<(end + 4)]) }
        reply(fd, bytes)
    }

    private func upgrade(_ fd: Int32, _ head: HTTPHead) {
        let accepted: [UInt8]
        do {
            accepted = try WebSocketHandshake.reply(to: head, hosts: hosts, publicOrigins: publicOrigins)
        } catch {
            reply(fd, HTTPReply.text(error.status, error.reason))
            return
        }
        guard sessionCount.load(ordering: .relaxed) < limits.maxSessions else {
            reply(fd, HTTPReply.text(503, "this classroom server holds \(limits.maxSessions) sessions already: try again later"))
            return
        }
        guard var connection = connections[fd] else { return }
        let peer = connection.peer
        guard connections.values.filter({ $0.peer == peer && $0.handler != nil }).count < limits.maxSessionsPerPeer else {
            reply(fd, HTTPReply.text(503, "this address holds \(limits.maxSessionsPerPeer) sessions already: close other classroom tabs"))
            return
        }
        sessionCount.add(1, ordering: .relaxed)
        let link = WebSocketLink(connection: connection.id, mailbox: mailbox)
        connection.phase = .socket
        connection.phaseSinceMillis = WallClock.monotonicMillis()
        connection.link = link
        connection.handler = openSession(link)
        connections[fd] = connection
        enqueue(fd, accepted)
        flush(fd)
    }

    // MARK: - Writing

    private func reply(_ fd: Int32, _ bytes: [UInt8]) {
        connections[fd]?.phase = .reply
        connections[fd]?.phaseSinceMillis = WallClock.monotonicMillis()
        connections[fd]?.closeWhenFlushed = true
        enqueue(fd, bytes)
        flush(fd)
    }

    /// `counted`: the link counted these bytes already (a session's frame); the loop's own
    /// (handshake, pongs, pings, closes) are counted here, as flush subtracts every byte sent.
    private func enqueue(_ fd: Int32, _ bytes: [UInt8], counted: Bool = false) {
        guard var connection = connections[fd] else { return }
        if !counted { connection.link?.queued.add(bytes.count, ordering: .relaxed) }
        if connection.written > 0 && connection.written * 2 >= connection.outbox.count {
            connection.outbox.removeFirst(connection.written)
            connection.written = 0
        }
        connection.outbox += bytes
        connections[fd] = connection
        // Pongs and replies count too: a page that pings and never reads is dropped.
        if connection.outbox.count - connection.written > limits.maxQueued { drop(fd, why: "the page does not read what it is sent") }
    }

    private func flush(_ fd: Int32) {
        guard var connection = connections[fd] else { return }
        while connection.written < connection.outbox.count {
            let remaining = connection.outbox.count - connection.written
            let sent = connection.outbox.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + connection.written, remaining, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { break }
                drop(fd, why: "send failed")
                return
            }
            connection.written += sent
            connection.link?.queued.subtract(sent, ordering: .relaxed)
        }
        if connection.written == connection.outbox.count {
            connection.outbox = []
            connection.written = 0
            if connection.closeWhenFlushed { connections[fd] = connection; drop(fd, why: nil); return }
        }
        connections[fd] = connection
    }

    private func closeSocket(_ fd: Int32, code: UInt16, reason: String, _ now: UInt64) {
        guard connections[fd]?.closingSinceMillis == nil else { return }
        connections[fd]?.closingSinceMillis = now
        enqueue(fd, WebSocketFrame.close(code, reason))
        flush(fd)
    }

    private func deliverMail(_ now: UInt64) {
        let mails = mailbox.takeAll()
        guard !mails.isEmpty else { return }
        let byID = Dictionary(connections.map { ($0.value.id, $0.key) }, uniquingKeysWith: { a, _ in a })
        for mail in mails {
            switch mail {
            case let .send(id, frame):
                guard let fd = byID[id], let connection = connections[fd], connection.closingSinceMillis == nil else { continue }
                // Counted already by the link: a page that does not read passes the bound and goes.
                if (connection.link?.queuedBytes ?? 0) > limits.maxQueued { drop(fd, why: "the page does not read what it is sent"); continue }
                enqueue(fd, frame, counted: true)
                flush(fd)
            case let .close(id, code, reason):
                guard let fd = byID[id] else { continue }
                closeSocket(fd, code: code, reason: reason, now)
            }
        }
    }

    // MARK: - Deadlines

    private func expire(_ now: UInt64) {
        for (fd, connection) in connections {
            let silent = now &- connection.heardMillis
            // A phase begun in this round is stamped after `now`: not a wrapped, huge age.
            let phaseAge = now > connection.phaseSinceMillis ? now - connection.phaseSinceMillis : 0
            switch connection.phase {
            case .request, .reply:
                if phaseAge > limits.headTimeoutMillis { drop(fd, why: "request or reply took over \(limits.headTimeoutMillis) ms") }
            case .socket:
                if let since = connection.closingSinceMillis {
                    if now &- since > limits.closeTimeoutMillis { drop(fd, why: "close not answered") }
                } else if phaseAge > limits.loginTimeoutMillis && connection.link?.loggedIn.load(ordering: .relaxed) == false {
                    // Pongs keep a socket heard, so silence alone would never free its session slot.
                    closeSocket(fd, code: WebSocketCloseCode.policyViolation, reason: "no login within \(limits.loginTimeoutMillis) ms", now)
                } else if silent > limits.idleTimeoutMillis {
                    drop(fd, why: "silent for \(limits.idleTimeoutMillis) ms")
                } else if silent > limits.pingAfterMillis && now &- connection.pingedMillis > limits.pingAfterMillis {
                    connections[fd]?.pingedMillis = now
                    enqueue(fd, WebSocketFrame.encode(.ping, []))
                    flush(fd)
                }
            }
        }
    }

    private func drop(_ fd: Int32, why: String?) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        Glibc.close(fd)
        if let why { logger.debug("connection dropped", ["connection": "\(connection.id)", "why": why]) }
        if let handler = connection.handler {
            sessionCount.subtract(1, ordering: .relaxed)
            handler.ended()
        }
    }
}
