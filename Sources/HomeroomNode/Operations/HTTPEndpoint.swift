@preconcurrency import Glibc
import CLinuxEvents
import Synchronization
import HomeroomSupport

/// A tiny HTTP/1.x server for /healthz and /metrics: GET routes answered by Swift
/// closures (and POST routes, named "POST /path": /drain), one `poll` thread, every descriptor closed by that thread. Bounded: at most
/// 256 connections (64 per peer address), a request head of 8 KiB sent within 2 s, one request per connection.
/// Slow or idle clients cannot starve a probe: the listener is always drained, and a
/// new connection over a bound pushes out the oldest one of its peer (or, over the
/// total, the oldest of all), so a probe that sends its request at once is answered.
/// (It replaced nng's HTTP server so a node runs no nng code at all; docs/NNG.md.)
final class HTTPEndpoint: Sendable {
    struct Response: Sendable {
        var status: UInt16
        var contentType: String
        var body: String
    }

    typealias Route = @Sendable () -> Response

    /// Who may use the operator routes (what changes the node, and the listings of rooms
    /// and members): with a token, a request that carries it (`Authorization: Bearer
    /// <hex>`, compared in constant time); without one, a peer on loopback only.
    /// /healthz and /metrics stay open to probes and scrapers.
    struct OperatorAccess: Sendable {
        var routes: Set<String> = []
        var token: [UInt8]?

        enum Verdict: Equatable {
            case allowed
            case refused(status: UInt16, why: String)
        }

        func check(route: String, headers: [(name: String, value: String)], loopback: Bool) -> Verdict {
            guard routes.contains(route) else { return .allowed }
            guard let token else {
                return loopback ? .allowed
                    : .refused(status: 403, why: "\(route) is served to loopback only: give the node --http-token-file to reach it from elsewhere\n")
            }
            let given = headers.first { $0.name == "authorization" }.flatMap { header -> [UInt8]? in
                let parts = header.value.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
                return KeyFiles.unhex(parts[1].trimmingSpaces)
            }
            guard let given, Self.constantTimeEqual(given, token) else {
                return .refused(status: 401, why: "\(route) needs Authorization: Bearer <the hex token of the node's --http-token-file>\n")
            }
            return .allowed
        }

        /// Equal bytes, in a time that depends on the lengths only.
        static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
            for i in 0..<max(a.count, b.count) {
                difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
            }
            return difference == 0 && a.count == b.count
        }
    }

    let port: UInt16
    private let server: Server
    private let thread: OSThread

    init(address: String, routes: [String: Route], access: OperatorAccess = OperatorAccess()) throws(TransportError) {
        guard address.hasPrefix("http://") else {
            throw TransportError(.addressInvalid, "serve HTTP on \(address)", reason: "use http://HOST:PORT, e.g. http://127.0.0.1:9100")
        }
        let tcp = try SPAddress("tcp://" + address.dropFirst("http://".count))
        let candidates = try tcp.resolve(passive: true)
        var lastError = TransportError(.addressInvalid, "serve HTTP on \(address)")
        var bound: (Int32, UInt16)?
        for candidate in candidates where bound == nil {
            let fd = socket(candidate.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            if candidate.withPointer({ Glibc.bind(fd, $0, $1) }) != 0 || Glibc.listen(fd, 1_024) != 0 {
                lastError = .system("serve HTTP on \(address)", errno: Glibc.errno)
                Glibc.close(fd)
                continue
            }
            bound = (fd, Self.localPort(fd))
        }
        guard let (listener, port) = bound else { throw lastError }
        let wake = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wake >= 0 else {
            Glibc.close(listener)
            throw .system("serve HTTP on \(address)", errno: Glibc.errno)
        }
        let server = Server(listener: listener, wake: wake, routes: routes, access: access)
        do {
            thread = try OSThread(name: "hr-http") { server.run() }
        } catch {
            Glibc.close(listener)
            Glibc.close(wake)
            throw TransportError(.other, "start the HTTP thread", reason: error.reason)
        }
        self.server = server
        self.port = port
    }

    func stop() {
        server.stop()
        thread.join()
    }

    deinit { stop() }

    /// The peer of an accepted connection: its address bytes (port left out), and
    /// whether it is on loopback.
    static func peerAddress(_ fd: Int32) -> (address: [UInt8], loopback: Bool) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard rv == 0 else { return ([], false) }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw in
            let address: [UInt8] = family == AF_INET ? Array(raw[4..<8]) : family == AF_INET6 ? Array(raw[8..<24]) : []
            return (address, isLoopback(family: family, address: raw))
        }
    }

    /// `address`: a sockaddr_in or sockaddr_in6, as bytes.
    static func isLoopback(family: Int32, address raw: UnsafeRawBufferPointer) -> Bool {
        switch family {
        case AF_INET:
            return raw[4] == 127   // sin_addr, network order
        case AF_INET6:
            let bytes = Array(raw[8..<24])   // sin6_addr
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        default:
            return false
        }
    }

    private static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard rv == 0 else { return 0 }
        return withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
    }

    /// The poll loop; its mutable state is touched by its thread only (`@unchecked`).
    private final class Server: @unchecked Sendable {
        let listener: Int32
        let wake: Int32
        let routes: [String: Route]
        let access: OperatorAccess
        private let stopping = Atomic<Bool>(false)
        // Loop-confined.
        private var clients: [Int32: Client] = [:]

        struct Client {
            var request: [UInt8] = []
            var reply: [UInt8] = []
            var written = 0
            var deadlineMillis: UInt64
            /// The peer is on loopback (127.0.0.0/8, ::1, or ::ffff:127.x).
            var loopback = false
            /// The peer's address bytes (per-peer bound).
            var peer: [UInt8] = []
            /// Accept order: the smallest is the oldest.
            var serial: UInt64 = 0
        }

        static let maxClients = 256
        static let maxClientsPerPeer = 64
        static let maxHead = 8 << 10
        static let timeoutMillis: UInt64 = 2_000
        /// Connections taken from the listener per poll round (the backlog is drained a
        /// round at a time, so a flood of connects cannot keep the loop from serving).
        static let acceptsPerRound = 512
        private var nextSerial: UInt64 = 0

        init(listener: Int32, wake: Int32, routes: [String: Route], access: OperatorAccess) {
            self.listener = listener
            self.wake = wake
            self.routes = routes
            self.access = access
        }

        func stop() {
            guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
            var one: UInt64 = 1
            _ = withUnsafeBytes(of: &one) { Glibc.write(wake, $0.baseAddress, 8) }
        }

        func run() {
            defer {
                for fd in clients.keys { Glibc.close(fd) }
                clients.removeAll()
                Glibc.close(listener)
                Glibc.close(wake)
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !stopping.load(ordering: .acquiring) {
                var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
                for (fd, client) in clients {
                    fds.append(pollfd(fd: fd, events: Int16(client.reply.isEmpty ? POLLIN : POLLOUT), revents: 0))
                }
                _ = fds.withUnsafeMutableBufferPointer { Glibc.poll($0.baseAddress, nfds_t($0.count), 1_000) }
                let now = WallClock.monotonicMillis()
                for entry in fds where entry.revents != 0 {
                    if entry.fd == wake { continue }
                    if entry.fd == listener { accept(now, buffer: &buffer); continue }
                    serve(entry.fd, revents: entry.revents, buffer: &buffer)
                }
                for (fd, client) in clients where client.deadlineMillis <= now { drop(fd) }
            }
        }

        private func accept(_ now: UInt64, buffer: inout [UInt8]) {
            let roundStart = nextSerial
            for _ in 0..<Self.acceptsPerRound {
                // Room for a newcomer: the oldest of its own peer first, so one host's
                // connections never push out another's; then the oldest of all. Never one
                // accepted this round (its request may be on its way): when that is all
                // there is, the rest of the backlog waits for the next round.
                let oldest = clients.count >= Self.maxClients ? clients.min { $0.value.serial < $1.value.serial } : nil
                if let oldest, oldest.value.serial > roundStart { return }
                let fd = clinux_accept_nonblocking(listener)
                guard fd >= 0 else { return }
                let (peer, loopback) = HTTPEndpoint.peerAddress(fd)
                let samePeer = clients.filter { $0.value.peer == peer }
                if samePeer.count >= Self.maxClientsPerPeer, let own = samePeer.min(by: { $0.value.serial < $1.value.serial }), own.value.serial <= roundStart {
                    drop(own.key)
                } else if let oldest {
                    drop(oldest.key)
                }
                nextSerial += 1
                clients[fd] = Client(deadlineMillis: now + Self.timeoutMillis, loopback: loopback, peer: peer, serial: nextSerial)
                // A probe sends its request with the handshake: answered now, before anything can push it out.
                serve(fd, revents: Int16(POLLIN), buffer: &buffer)
            }
        }

        private func drop(_ fd: Int32) {
            clients.removeValue(forKey: fd)
            Glibc.close(fd)
        }

        private func serve(_ fd: Int32, revents: Int16, buffer: inout [UInt8]) {
            guard var client = clients[fd] else { return }
            if client.reply.isEmpty {
                let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if n <= 0 {
                    if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
                    drop(fd)
                    return
                }
                client.request += buffer[0..<n]
                if let end = headEnd(client.request) {
                    client.reply = respond(to: Array(client.request[..<end]), loopback: client.loopback)
                } else if client.request.count > Self.maxHead {
                    client.reply = Self.reply(431, "text/plain", "request header fields too large\n")
                }
                clients[fd] = client
                if client.reply.isEmpty { return }
            }
            let remaining = client.reply.count - client.written
            let sent = client.reply.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + client.written, remaining, Int32(MSG_NOSIGNAL)) }
            if sent < 0 {
                if errno == EAGAIN || errno == EINTR { return }
                drop(fd)
                return
            }
            client.written += sent
            if client.written == client.reply.count { drop(fd) } else { clients[fd] = client }
        }

        private func headEnd(_ bytes: [UInt8]) -> Int? {
            guard bytes.count >= 4 else { return nil }
            for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return i
            }
            return nil
        }

        private func respond(to head: [UInt8], loopback: Bool) -> [UInt8] {
            let line = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self)
            let parts = line.split(separator: " ")
            guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return Self.reply(400, "text/plain", "bad request\n") }
            let path = String(parts[1].split(separator: "?", maxSplits: 1).first ?? "")
            let headers = String(decoding: head, as: UTF8.self).split(separator: "\r\n").dropFirst().compactMap { line -> (name: String, value: String)? in
                let field = line.split(separator: ":", maxSplits: 1)
                guard field.count == 2 else { return nil }
                return (field[0].lowercased(), field[1].trimmingSpaces)
            }
            let routeKey = parts[0] == "POST" ? "POST " + path : path
            if routes[routeKey] != nil, case .refused(let status, let why) = access.check(route: routeKey, headers: headers, loopback: loopback) {
                return Self.reply(status, "text/plain", why)
            }
            // A route named "POST /path" takes a POST; every other route GET and HEAD. A POST
            // must carry `X-Homeroom-Action: <path without the slash>`: a web page cannot
            // send that header without a CORS preflight this server never grants, so a page
            // in an operator's browser cannot drain a node on its loopback.
            if parts[0] == "POST", let route = routes["POST " + path] {
                let action = String(path.dropFirst())
                let asked = String(decoding: head, as: UTF8.self).split(separator: "\r\n").dropFirst().contains { line in
                    let field = line.split(separator: ":", maxSplits: 1)
                    return field.count == 2 && field[0].lowercased() == "x-homeroom-action" && field[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).joined() == action
                }
                guard asked else { return Self.reply(403, "text/plain", "POST \(path) needs the header X-Homeroom-Action: \(action)\n") }
                let response = route()
                return Self.reply(response.status, response.contentType, response.body)
            }
            guard let route = routes[path] else {
                if routes["POST " + path] != nil { return Self.reply(405, "text/plain", "only POST\n") }
                return Self.reply(404, "text/plain", "not found: try /healthz or /metrics\n")
            }
            guard parts[0] == "GET" || parts[0] == "HEAD" else { return Self.reply(405, "text/plain", "only GET\n") }
            let response = route()
            var reply = Self.reply(response.status, response.contentType, response.body)
            if parts[0] == "HEAD", let end = headEnd(reply) { reply = Array(reply[..<(end + 4)]) }
            return reply
        }

        static func reply(_ status: UInt16, _ type: String, _ body: String) -> [UInt8] {
            let reason: String
            switch status {
            case 200: reason = "OK"
            case 202: reason = "Accepted"
            case 400: reason = "Bad Request"
            case 401: reason = "Unauthorized"
            case 403: reason = "Forbidden"
            case 409: reason = "Conflict"
            case 404: reason = "Not Found"
            case 405: reason = "Method Not Allowed"
            case 431: reason = "Request Header Fields Too Large"
            case 503: reason = "Service Unavailable"
            default: reason = "Status"
            }
            let bytes = Array(body.utf8)
            return Array("HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(type)\r\nContent-Length: \(bytes.count)\r\nConnection: close\r\n\r\n".utf8) + bytes
        }
    }
}

private extension Substring {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
