/// What a browser's bytes amount to, message by message.
public enum WebSocketMessage: Equatable, Sendable {
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// The peer closes: its code, if it gave one.
    case close(code: UInt16?)
}

/// A frame stream the server will not follow: the close code to send, and why.
public struct WebSocketViolation: Error, Equatable, Sendable, CustomStringConvertible {
    public var closeCode: UInt16
    public var reason: String
    public var description: String { "\(reason) [\(closeCode)]" }
}

/// Decodes a client's frames incrementally (RFC 6455, 5): unmasks, joins fragments,
/// answers control frames between them. Bounded: a message larger than `maxMessage`
/// is refused as soon as its header says so, before its payload is buffered, and the
/// buffer never holds more than one frame's header and payload.
public struct WebSocketReader: Sendable {
    public let maxMessage: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// The fragments of the message under way, and its opcode.
    private var fragments: [UInt8] = []
    private var fragmentedOpcode: WebSocketOpcode?

    public init(maxMessage: Int = 64 << 10) { self.maxMessage = maxMessage }

    /// Bytes not yet read: what `feed` may still add before a frame completes.
    public var buffered: Int { buffer.count - start }

    public mutating func feed(_ bytes: some Collection<UInt8>) {
        if start > 0 && start * 2 >= buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, nil when more bytes are needed.
    public mutating func next() throws(WebSocketViolation) -> WebSocketMessage? {
        while true {
            guard let frame = try nextFrame() else { return nil }
            if frame.opcode.isControl { return try control(frame.opcode, frame.payload) }
            switch (frame.opcode, fragmentedOpcode) {
            case (.continuation, nil):
                throw violation(WebSocketCloseCode.protocolError, "a continuation frame with no message begun")
            case (.continuation, let opcode?):
                fragments += frame.payload
                guard frame.fin else { continue }
                fragmentedOpcode = nil
                defer { fragments = [] }
                return try message(opcode, fragments)
            case (_, .some):
                throw violation(WebSocketCloseCode.protocolError, "a new message began inside a fragmented one")
            case (let opcode, nil):
                if frame.fin { return try message(opcode, frame.payload) }
                fragmentedOpcode = opcode
                fragments = frame.payload
            }
        }
    }

    private func message(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(WebSocketViolation) -> WebSocketMessage {
        guard opcode == .text else { return .binary(payload) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw violation(WebSocketCloseCode.invalidData, "a text message that is not UTF-8")
        }
        return .text(text)
    }

    private func control(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(WebSocketViolation) -> WebSocketMessage {
        switch opcode {
        case .ping: return .ping(payload)
        case .pong: return .pong(payload)
        default:
            guard payload.count >= 2 else {
                if payload.count == 1 { throw violation(WebSocketCloseCode.protocolError, "a close frame with a one-byte body") }
                return .close(code: nil)
            }
            return .close(code: UInt16(payload[0]) << 8 | UInt16(payload[1]))
        }
    }

    private struct Frame {
        var fin: Bool
        var opcode: WebSocketOpcode
        var payload: [UInt8]
    }

    private mutating func nextFrame() throws(WebSocketViolation) -> Frame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start], second = buffer[start + 1]
        guard first & 0x70 == 0 else { throw violation(WebSocketCloseCode.protocolError, "reserved bits set (no extension was agreed)") }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw violation(WebSocketCloseCode.protocolError, "unknown opcode \(first & 0x0F)")
        }
        let fin = first & 0x80 != 0
        guard second & 0x80 != 0 else { throw violation(WebSocketCloseCode.protocolError, "a client's frame must be masked") }
        var length = UInt64(second & 0x7F)
        var header = 2
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            header = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(buffer[start + 2 + $1]) }
            header = 10
        }
        if opcode.isControl {
            guard fin, length <= 125 else { throw violation(WebSocketCloseCode.protocolError, "a control frame must be whole and at most 125 bytes") }
        } else if length > UInt64(maxMessage - (opcode == .continuation ? fragments.count : 0)) {
            // Refused on the header: the payload is never buffered.
            throw violation(WebSocketCloseCode.tooBig, "a message over \(maxMessage) bytes")
        }
        let total = header + 4 + Int(length)
        guard available >= total else { return nil }
        let mask = Array(buffer[(start + header)..<(start + header + 4)])
        let body = buffer[(start + header + 4)..<(start + total)]
        var payload = [UInt8](repeating: 0, count: body.count)
        for (offset, byte) in body.enumerated() { payload[offset] = byte ^ mask[offset & 3] }
        start += total
        return Frame(fin: fin, opcode: opcode, payload: payload)
    }

    private func violation(_ code: UInt16, _ reason: String) -> WebSocketViolation {
        WebSocketViolation(closeCode: code, reason: reason)
    }
}
