@preconcurrency import Glibc
import HomeroomNode
import HomeroomSupport

/// `homeroom node drain`: a planned removal. Asks a node, on its --http address (where
/// operators reach it: /healthz, /metrics), to hand every room it holds to the other
/// nodes and stop; waits until it has stopped.
enum DrainCommand {
    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: NodeCommand.usage)
        if reader.wantsHelp { print(NodeCommand.usage); return }
        let http = try reader.string("--http") ?? ProcessEnvironment.current["HOMEROOM_HTTP"]
        let wait = try reader.integer("--wait-s", in: 1...86_400) ?? 300
        let tokenFile = try reader.string("--http-token-file") ?? ProcessEnvironment.current["HOMEROOM_HTTP_TOKEN_FILE"]
        try reader.finish()
        var authorization = ""
        if let tokenFile {
            do {
                authorization = "Authorization: Bearer \(KeyFiles.hex(try KeyFiles.read(tokenFile, secret: true)))\r\n"
            } catch {
                throw .failure(error.description)
            }
        }
        guard let http, http.hasPrefix("http://"), let (host, port) = hostAndPort(http) else {
            throw .usage("homeroom node drain needs the node's --http address, e.g. --http http://127.0.0.1:9100", usage: NodeCommand.usage)
        }
        guard case let .answered(status, body) = request("POST /drain", host: host, port: port, headers: authorization) else {
            throw .failure("no answer from \(http): is the node running with --http \(http)?")
        }
        guard status == 202 else {
            if status == 401 || status == 403 {
                throw .failure("\(http) answered \(status) to POST /drain: \(body.trimmed) (give this command the node's token: --http-token-file or HOMEROOM_HTTP_TOKEN_FILE)")
            }
            throw .failure("\(http) answered \(status) to POST /drain: \(body.trimmed)")
        }
        print("draining: the node hands its rooms to the other nodes, then stops")
        let deadline = WallClock.monotonicMillis() + UInt64(wait) * 1_000
        var last = "draining"
        while WallClock.monotonicMillis() < deadline {
            switch request("GET /healthz", host: host, port: port) {
            case .refused where last.contains("drained"):
                // Drained, then stopped: its HTTP port is closed.
                print("drained and stopped")
                return
            case .refused:
                throw .failure("the node stopped before it said it was drained (its health last: \(last)): check its log; what it held may be only there")
            case let .answered(_, body):
                last = body.trimmed
            case .noAnswer:
                break   // busy, or stopping: ask again
            }
            usleep(200_000)
        }
        throw .failure("still draining after \(wait) s (its health: \(last)); a room goes only once its other owners are up and hold it: check `homeroom cluster status`")
    }

    static func hostAndPort(_ url: String) -> (String, UInt16)? {
        let rest = url.dropFirst("http://".count).split(separator: "/", maxSplits: 1).first.map(String.init) ?? ""
        guard let colon = rest.lastIndex(of: ":"), let port = UInt16(rest[rest.index(after: colon)...]) else { return nil }
        return (String(rest[..<colon]), port)
    }

    enum Answer {
        case answered(status: Int, body: String)
        /// Nothing listens there (the connection was refused).
        case refused
        /// No answer in time, or a broken one.
        case noAnswer
    }

    /// One HTTP/1.0 request ("METHOD /path"), 2 s at most.
    static func request(_ line: String, host: String, port: UInt16, headers: String = "") -> Answer {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return .noAnswer }
        defer { freeaddrinfo(found) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .noAnswer }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return errno == ECONNREFUSED ? .refused : .noAnswer }
        let action = line.split(separator: "/").last.map { "X-Homeroom-Action: \($0)\r\n" } ?? ""
        let bytes = Array("\(line) HTTP/1.0\r\nHost: \(host)\r\n\(line.hasPrefix("POST") ? action : "")\(headers)Content-Length: 0\r\n\r\n".utf8)
        guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else { return .noAnswer }
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while reply.count < 1 << 20 {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            reply += buffer[..<count]
        }
        let text = String(decoding: reply, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else { return .noAnswer }
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return .answered(status: status, body: body)
    }
}
