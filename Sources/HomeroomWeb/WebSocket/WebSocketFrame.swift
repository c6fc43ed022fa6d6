/// One WebSocket frame's opcode (RFC 6455, 5.2).
public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA

    var isControl: Bool { rawValue & 0x8 != 0 }
}

/// Close codes the server sends (RFC 6455, 7.4.1).
public enum WebSocketCloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let protocolError: UInt16 = 1002
    public static let invalidData: UInt16 = 1007
    public static let policyViolation: UInt16 = 1008
    public static let tooBig: UInt16 = 1009
    public static let tryAgainLater: UInt16 = 1013
}

/// Encodes frames. The server's frames are never masked; a mask is for clients (and tests).
public enum WebSocketFrame {
    public static func encode(_ opcode: WebSocketOpcode, _ payload: [UInt8], fin: Bool = true, mask: [UInt8]? = nil) -> [UInt8] {
        var frame: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        switch payload.count {
        case 0...125:
            frame.append(maskBit | UInt8(payload.count))
        case 126...0xFFFF:
            frame.append(maskBit | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        default:
            frame.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((UInt64(payload.count) >> UInt64(shift)) & 0xFF)) }
        }
        guard let mask, mask.count == 4 else { return frame + payload }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset & 3] }
        return frame
    }

    /// A close frame: the code, then a reason cut to fit a control frame (125 bytes).
    public static func close(_ code: UInt16, _ reason: String = "") -> [UInt8] {
        encode(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(123)))
    }
}
