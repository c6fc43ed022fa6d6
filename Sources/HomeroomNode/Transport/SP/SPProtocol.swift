/// The scalability protocols (SP) as nng and nanomsg speak them over TCP and IPC:
/// the 8-byte connection header, message framing, and the REQ/REP backtrace.
/// Pure functions only: the event loop does the I/O.
///
/// Homeroom implements this wire format itself (see docs/NNG.md for why): any nng,
/// pynng or nanomsg REQ, REP, PUB or SUB socket talks to it unchanged.
enum SPProtocol: UInt16, Sendable {
    case pub = 0x20
    case sub = 0x21
    case req = 0x30
    case rep = 0x31

    /// The protocol a peer must speak to talk to this one.
    var peer: SPProtocol {
        switch self {
        case .pub: return .sub
        case .sub: return .pub
        case .req: return .rep
        case .rep: return .req
        }
    }

    var name: String {
        switch self {
        case .pub: return "pub"
        case .sub: return "sub"
        case .req: return "req"
        case .rep: return "rep"
        }
    }

    /// The header each side sends first: 0x00 'S' 'P' 0x00, protocol (big endian), 0, 0.
    var header: [UInt8] {
        [0x00, 0x53, 0x50, 0x00, UInt8(rawValue >> 8), UInt8(rawValue & 0xff), 0x00, 0x00]
    }

    static let headerSize = 8

    /// The protocol a received header names, or nil if it is not an SP header.
    static func peerProtocol(inHeader bytes: ArraySlice<UInt8>) -> UInt16? {
        guard bytes.count == headerSize else { return nil }
        let b = Array(bytes)
        guard b[0] == 0x00, b[1] == 0x53, b[2] == 0x50, b[3] == 0x00, b[6] == 0x00, b[7] == 0x00 else { return nil }
        return UInt16(b[4]) << 8 | UInt16(b[5])
    }
}

/// How messages are delimited on a stream: TCP prefixes each with its length
/// (8 bytes, big endian); IPC adds a one-byte message type (1) before the length;
/// WebSocket sends each as one WebSocket message (SPWebSocket).
enum SPFraming: Sendable {
    case tcp, ipc, websocket

    var prefixSize: Int { self == .ipc ? 9 : 8 }

    func prefix(length: Int) -> [UInt8] {
        var bytes: [UInt8] = self == .ipc ? [0x01] : []
        let value = UInt64(length)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        return bytes
    }

    /// The body length a complete prefix announces, or nil when the prefix is malformed
    /// (an IPC message type other than 1).
    func length(inPrefix bytes: UnsafeRawBufferPointer) -> UInt64? {
        var offset = 0
        if self == .ipc {
            guard bytes[0] == 0x01 else { return nil }
            offset = 1
        }
        var value: UInt64 = 0
        for i in 0..<8 { value = value << 8 | UInt64(bytes[offset + i]) }
        return value
    }
}

/// The REQ/REP backtrace: a request body starts with 4-byte big-endian words, the last
/// of which (the request id) has its top bit set; devices in between add one word each.
enum SPBacktrace {
    /// nng's default and maximum hop count.
    static let maxHops = 8

    /// The length of the backtrace at the start of `body`, or nil if the body has none
    /// within `maxHops` words (nng drops such a peer).
    static func length(of body: ArraySlice<UInt8>) -> Int? {
        var offset = body.startIndex
        for _ in 0..<maxHops {
            guard body.endIndex - offset >= 4 else { return nil }
            if body[offset] & 0x80 != 0 { return offset + 4 - body.startIndex }
            offset += 4
        }
        return nil
    }

    static func requestID(_ id: UInt32) -> [UInt8] {
        let value = id | 0x8000_0000
        return [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    /// The request id a reply starts with (top bit set), or nil.
    static func replyID(_ body: [UInt8]) -> UInt32? {
        guard body.count >= 4, body[0] & 0x80 != 0 else { return nil }
        return UInt32(body[0]) << 24 | UInt32(body[1]) << 16 | UInt32(body[2]) << 8 | UInt32(body[3])
    }
}
