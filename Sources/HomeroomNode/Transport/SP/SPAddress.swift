@preconcurrency import Glibc
import CLinuxEvents

/// A parsed transport URL: `tcp://host:port` (IPv4, `[IPv6]`, a name, or `*` to listen
/// on every address), `tls+tcp://host:port` (the same under TLS, as nng names it),
/// `ipc:///path/to/socket`, `inproc://name` (within one process, over a socket pair),
/// or `ws://host:port/path` and `wss://host:port/path` (SP over WebSocket, as nng names
/// it; the path names the resource a dial asks for).
struct SPAddress: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case tcp(host: String, port: UInt16)
        case ipc(path: String)
        case inproc(name: String)
    }

    let kind: Kind
    let url: String
    /// `tls+tcp://` or `wss://`: the stream runs TLS, with SP's framing inside it.
    let secure: Bool
    /// `ws://` or `wss://`: the path (with any query) a dial asks for, "/" if none.
    let resource: String?

    var framing: SPFraming {
        if resource != nil { return .websocket }
        if case .ipc = kind { return .ipc }
        return .tcp
    }

    var description: String { url }

    init(_ url: String) throws(TransportError) {
        self.url = url
        secure = url.hasPrefix("tls+tcp://") || url.hasPrefix("wss://")
        var hostPart = Substring(url)
        if url.hasPrefix("ws://") || url.hasPrefix("wss://") {
            let afterScheme = url.drop(while: { $0 != "/" }).dropFirst(2)
            let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? afterScheme.endIndex
            hostPart = url[url.startIndex..<slash]
            let path = String(afterScheme[slash...])
            resource = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : path)
        } else {
            resource = nil
        }
        if url.hasPrefix("inproc://") {
            let name = String(url.dropFirst("inproc://".count))
            guard !name.isEmpty else { throw TransportError(.addressInvalid, "parse \(url)", reason: "an inproc address needs a name") }
            kind = .inproc(name: name)
            return
        }
        if url.hasPrefix("ipc://") {
            let path = String(url.dropFirst("ipc://".count))
            guard !path.isEmpty, path.utf8.count < 108 else {
                throw TransportError(.addressInvalid, "parse \(url)", reason: "an ipc path must be 1 to 107 bytes")
            }
            kind = .ipc(path: path)
            return
        }
        guard url.hasPrefix("tcp://") || url.hasPrefix("tcp4://") || secure || resource != nil else {
            throw TransportError(.addressInvalid, "parse \(url)", reason: "unknown scheme (this transport speaks tcp://, tls+tcp://, ws://, wss://, ipc:// and inproc://)")
        }
        let rest = hostPart.drop(while: { $0 != "/" }).dropFirst(2)
        guard let colon = rest.lastIndex(of: ":") else {
            throw TransportError(.addressInvalid, "parse \(url)", reason: "no port")
        }
        var host = String(rest[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = UInt16(rest[rest.index(after: colon)...]) else {
            throw TransportError(.addressInvalid, "parse \(url)", reason: "the port must be a number from 0 to 65535")
        }
        kind = .tcp(host: host, port: port)
    }

    /// The URL with another port (the one the system picked for port 0).
    func withPort(_ port: UInt16) -> String {
        guard case .tcp(let host, _) = kind else { return url }
        let scheme = url.prefix(while: { $0 != ":" })
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost):\(port)" + (resource.map { $0 == "/" ? "" : $0 } ?? "")
    }

    /// `Host` header value for a WebSocket dial.
    var hostHeader: String {
        guard case .tcp(let host, let port) = kind else { return "localhost" }
        return (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// A tcp host given by name (not a numeric address): looking it up may block.
    var needsNameLookup: Bool {
        guard case .tcp(let host, _) = kind, !host.isEmpty, host != "*" else { return false }
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) != 1 && inet_pton(AF_INET6, host, &v6) != 1
    }

    /// The socket addresses to try, in order. Resolves names (may block: a dial looks
    /// names up through `SPResolver`, off the loop thread).
    func resolve(passive: Bool) throws(TransportError) -> [SPSocketAddress] {
        switch kind {
        case .inproc:
            throw TransportError(.addressInvalid, "resolve \(url)", reason: "inproc addresses have no socket address")
        case .ipc(let path):
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
            }
            return [SPSocketAddress(family: AF_UNIX, storage: address)]
        case .tcp(let host, let port):
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            hints.ai_family = AF_UNSPEC
            hints.ai_flags = passive ? AI_PASSIVE : 0
            let name: String? = (host.isEmpty || host == "*") ? nil : host
            if name == nil && !passive {
                throw TransportError(.addressInvalid, "dial \(url)", reason: "a dial needs a host")
            }
            var list: UnsafeMutablePointer<addrinfo>?
            let rv = getaddrinfo(name, String(port), &hints, &list)
            guard rv == 0, let list else {
                throw TransportError(.addressInvalid, "resolve \(url)", reason: String(cString: gai_strerror(rv)))
            }
            defer { freeaddrinfo(list) }
            var found: [SPSocketAddress] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = list
            while let entry = cursor {
                if let raw = entry.pointee.ai_addr {
                    let family = entry.pointee.ai_family
                    if family == AF_INET {
                        found.append(SPSocketAddress(family: AF_INET, storage: raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }))
                    } else if family == AF_INET6 {
                        found.append(SPSocketAddress(family: AF_INET6, storage: raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }))
                    }
                }
                cursor = entry.pointee.ai_next
            }
            // Listening on "*" should take IPv4 first, as nng does.
            found.sort { $0.family == AF_INET && $1.family != AF_INET }
            guard !found.isEmpty else { throw TransportError(.addressInvalid, "resolve \(url)", reason: "no address") }
            return found
        }
    }
}

/// One concrete socket address, stored by value so it can cross threads.
struct SPSocketAddress: @unchecked Sendable {
    let family: Int32
    private let bytes: [UInt8]

    init<T>(family: Int32, storage: T) {
        self.family = family
        var copy = storage
        bytes = withUnsafeBytes(of: &copy) { Array($0) }
    }

    func withPointer<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        bytes.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }
}
