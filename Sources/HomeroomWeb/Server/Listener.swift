@preconcurrency import Glibc

/// A listening TCP socket on exactly the address given (never a wildcard it was not asked for).
enum Listener {
    /// `host:port` (`127.0.0.1:8080`, `[::1]:8080`, port 0 for any free one): the descriptor and the port bound.
    static func open(_ address: String) throws(WebServerError) -> (fd: Int32, port: UInt16) {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw WebServerError("listen address '\(address)' must be HOST:PORT, e.g. 127.0.0.1:8080")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw WebServerError("listen address '\(address)' names no host: give one, e.g. 127.0.0.1:\(port)") }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw WebServerError("cannot resolve '\(host)': \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var lastError = "no address"
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let entry = candidate {
            candidate = entry.pointee.ai_next
            let fd = socket(entry.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { continue }
            var on: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            guard bind(fd, entry.pointee.ai_addr, entry.pointee.ai_addrlen) == 0, listen(fd, 128) == 0 else {
                lastError = String(cString: strerror(errno))
                close(fd)
                continue
            }
            return (fd, localPort(fd))
        }
        throw WebServerError("cannot listen on \(address): \(lastError) (is another process on that port?)")
    }

    static func localPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard rv == 0 else { return 0 }
        return withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
    }

    /// The peer's address bytes (its port left out), for the per-peer bound.
    static func peerAddress(_ fd: Int32) -> [UInt8] {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard rv == 0 else { return [] }
        let family = Int32(storage.ss_family)
        return withUnsafeBytes(of: &storage) { raw in
            family == AF_INET ? Array(raw[4..<8]) : family == AF_INET6 ? Array(raw[8..<24]) : []
        }
    }
}
