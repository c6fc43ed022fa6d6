import Foundation
#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// A raw TCP connection to a loopback port, for speaking (or mangling) the SP protocols
/// by hand. Every read waits at most 3 s.
/// Binds `fd` (an AF_INET socket) to 127.0.0.1 on a port the kernel picks; returns
/// that port, or nil (errno says why).
public func bindLoopback(_ fd: Int32) -> UInt16? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var size = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) == 0 && getsockname(fd, $0, &size) == 0 }
    }
    return bound ? UInt16(bigEndian: address.sin_port) : nil
}

public struct RawConnection {
    public let fd: Int32

    public init?(port: UInt16) {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rv = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        if rv != 0 { Glibc.close(fd); return nil }
    }

    /// How long each read waits from now on (a test that makes the peer work hard, on a
    /// loaded machine, waits longer than the default 3 s).
    public func setReadTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    public func write(_ data: [UInt8]) { _ = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    /// Reads until `count` bytes came, the peer closed, or 3 s passed.
    public func read(_ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while out.count < count {
            let n = recv(fd, &buffer, min(buffer.count, count - out.count), 0)
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return out
    }

    /// True when the peer closed the connection (EOF or reset) within 3 s.
    public func peerClosed() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    public func close() { Glibc.close(fd) }

    /// One SP/TCP message: an 8-byte big-endian length, then the body.
    public static func frame(_ body: [UInt8]) -> [UInt8] {
        var prefix: [UInt8] = []
        for shift in stride(from: 56, through: 0, by: -8) { prefix.append(UInt8(truncatingIfNeeded: UInt64(body.count) >> UInt64(shift))) }
        return prefix + body
    }

    /// The SP header a socket of `protocolID` sends (0x20 PUB, 0x21 SUB, 0x30 REQ, 0x31 REP).
    public static func header(_ protocolID: UInt16) -> [UInt8] {
        [0x00, 0x53, 0x50, 0x00, UInt8(protocolID >> 8), UInt8(protocolID & 0xff), 0x00, 0x00]
    }

    /// A request id as REQ sockets send it (top bit set).
    public static func requestID(_ id: UInt32) -> [UInt8] {
        let value = id | 0x8000_0000
        return [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}

/// What hostile or careless peers do to a node's sockets, by raw TCP.
public enum Attack: CaseIterable, Sendable {
    case connectClose, halfHandshake, badMagic, wrongProtocol, pipelinedThenClose, oversizedLength, frameWithoutRequestID

    /// One connection of this kind to `port`, posing as a peer of protocol `peerID`
    /// (0x30 REQ for a REP socket, 0x21 SUB for a PUB socket).
    public func run(port: UInt16, peerID: UInt16) {
        guard let c = RawConnection(port: port) else { return }
        defer { c.close() }
        let header = RawConnection.header(peerID)
        switch self {
        case .connectClose: break
        case .halfHandshake: c.write(Array(header.prefix(5)))
        case .badMagic: c.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        case .wrongProtocol: c.write(RawConnection.header(0x10))
        case .pipelinedThenClose:
            var burst = header
            for i in 0..<200 { burst += RawConnection.frame(RawConnection.requestID(UInt32(i)) + [0x0a, 0x00]) }
            c.write(burst)
        case .oversizedLength: c.write(header + [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
        case .frameWithoutRequestID: c.write(header + RawConnection.frame([0, 0, 0, 1, 2, 3]))
        }
    }
}

/// Descriptors and threads of a process, from /proc (Linux).
public enum ProcessCounts {
    public static func descriptors(of pid: Int32 = getpid()) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? -1
    }

    public static func threads(of pid: Int32 = getpid()) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").count) ?? -1
    }
}
