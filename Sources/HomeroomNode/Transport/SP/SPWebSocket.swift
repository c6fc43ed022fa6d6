import COpenSSL

/// SP over WebSocket as nng's `ws://` transport speaks it (RFC 6455): an HTTP/1.1
/// upgrade whose `Sec-WebSocket-Protocol` names the listener's SP protocol
/// (`pub.sp.nanomsg.org` for a PUB socket), then one binary WebSocket message per SP
/// message: no SP header, no length prefix. Pure functions only: the loop does the I/O.
///
/// The node serves it on its publish port beside SP over TCP (the first bytes tell which),
/// so the request's path can name the stream a connection follows (docs/PROTOCOL.md,
/// "Room streams").
enum SPWebSocket {
    /// The request line and headers of a handshake, at most.
    static let maxHandshakeBytes = 8 << 10
    /// Largest frame this side sends; longer messages go as continuation frames (nng's
    /// receivers take frames up to 1 MiB by default).
    static let maxSentFrame = 64 << 10
    private static let acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    enum Opcode: UInt8 {
        case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA
        var isControl: Bool { rawValue & 0x8 != 0 }
    }

    /// The subprotocol name nng gives an SP protocol.
    static func subprotocol(_ kind: SPProtocol) -> String { kind.name + ".sp.nanomsg.org" }

    // MARK: Handshake, server side

    struct Request: Equatable {
        let resource: String
        let key: String
        let subprotocols: [String]
    }

    enum RequestParse: Equatable {
        case incomplete
        case invalid(status: Int, reason: String)
        case request(Request, consumed: Int)
    }

    /// Parses an upgrade request from the start of `bytes`.
    static func parseRequest(_ bytes: ArraySlice<UInt8>) -> RequestParse {
        guard let end = headerEnd(bytes) else {
            return bytes.count > maxHandshakeBytes ? .invalid(status: 431, reason: "handshake longer than \(maxHandshakeBytes) bytes") : .incomplete
        }
        guard end - bytes.startIndex <= maxHandshakeBytes else { return .invalid(status: 431, reason: "handshake longer than \(maxHandshakeBytes) bytes") }
        let lines = String(decoding: bytes[bytes.startIndex..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let requestLine = lines.first.map { $0.split(separator: " ") } ?? []
        guard requestLine.count == 3, requestLine[0] == "GET", requestLine[2].hasPrefix("HTTP/1.") else {
            return .invalid(status: 400, reason: "not an HTTP GET request")
        }
        let headers = parseHeaders(lines.dropFirst())
        guard headers["upgrade"]?.lowercased().contains("websocket") == true,
              headers["connection"]?.lowercased().contains("upgrade") == true else {
            return .invalid(status: 426, reason: "this port speaks SP over TCP or SP over WebSocket (Upgrade: websocket)")
        }
        guard headers["sec-websocket-version"] == "13" else { return .invalid(status: 426, reason: "WebSocket version 13 is required") }
        guard let key = headers["sec-websocket-key"], !key.isEmpty, key.utf8.count <= 64 else {
            return .invalid(status: 400, reason: "no Sec-WebSocket-Key")
        }
        let subprotocols = (headers["sec-websocket-protocol"] ?? "").split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
        let consumed = end + 4 - bytes.startIndex
        return .request(Request(resource: String(requestLine[1]), key: key, subprotocols: subprotocols), consumed: consumed)
    }

    /// The `101 Switching Protocols` answer to `key`.
    static func response(key: String, subprotocol: String) -> [UInt8] {
        Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(acceptValue(key: key))\r\nSec-WebSocket-Protocol: \(subprotocol)\r\n\r\n").utf8)
    }

    /// An HTTP error answer; the connection closes after it.
    static func refusal(status: Int, reason: String) -> [UInt8] {
        let title: String
        switch status {
        case 404: title = "Not Found"
        case 426: title = "Upgrade Required"
        case 431: title = "Request Header Fields Too Large"
        default: title = "Bad Request"
        }
        let body = reason + "\n"
        return Array(("HTTP/1.1 \(status) \(title)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n" + body).utf8)
    }

    static func acceptValue(key: String) -> String {
        let input = Array((key + acceptGUID).utf8)
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        _ = input.withUnsafeBytes { raw in EVP_Digest(raw.baseAddress, raw.count, &digest, &length, EVP_sha1(), nil) }
        return base64(digest)
    }

    // MARK: Handshake, client side

    static func newKey() -> String { base64((0..<16).map { _ in UInt8.random(in: 0...255) }) }

    static func request(host: String, resource: String, key: String, subprotocol: String) -> [UInt8] {
        Array(("GET \(resource) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: \(subprotocol)\r\n\r\n").utf8)
    }

    enum ResponseParse: Equatable {
        case incomplete
        case refused(String)
        case accepted(consumed: Int)
    }

    /// Checks the server's answer to `request(key:)`.
    static func parseResponse(_ bytes: ArraySlice<UInt8>, key: String, subprotocol: String) -> ResponseParse {
        guard let end = headerEnd(bytes) else {
            return bytes.count > maxHandshakeBytes ? .refused("handshake answer longer than \(maxHandshakeBytes) bytes") : .incomplete
        }
        let lines = String(decoding: bytes[bytes.startIndex..<end], as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let status = lines.first.map { $0.split(separator: " ", maxSplits: 2) } ?? []
        guard status.count >= 2, status[0].hasPrefix("HTTP/1."), status[1] == "101" else {
            let body = bytes.count > end + 4 ? String(decoding: bytes[(end + 4)...].prefix(200), as: UTF8.self).trimmingSpaces() : ""
            return .refused("the server answered \(lines.first.map(String.init) ?? "nothing")" + (body.isEmpty ? "" : ": \(body)"))
        }
        let headers = parseHeaders(lines.dropFirst())
        guard headers["sec-websocket-accept"] == acceptValue(key: key) else { return .refused("wrong Sec-WebSocket-Accept") }
        guard headers["sec-websocket-protocol"] == subprotocol else { return .refused("the server speaks \(headers["sec-websocket-protocol"] ?? "no SP protocol"), not \(subprotocol)") }
        return .accepted(consumed: end + 4 - bytes.startIndex)
    }

    // MARK: Frames

    /// One whole message as one queue entry: the first frame's header as the prefix, the
    /// rest (payload, with continuation headers between 64 KiB pieces) as the body, so a
    /// PUB dropping its oldest entry never drops half a message. A client masks.
    static func message(_ payload: [UInt8], opcode: Opcode = .binary, masked: Bool) -> SPOutFrame {
        if !masked && payload.count <= maxSentFrame {
            return SPOutFrame(prefix: header(opcode: opcode, fin: true, length: payload.count, mask: nil), body: payload)
        }
        var body: [UInt8] = []
        body.reserveCapacity(payload.count + (payload.count / maxSentFrame + 1) * 14)
        var prefix: [UInt8] = []
        var offset = 0
        repeat {
            let end = min(offset + maxSentFrame, payload.count)
            let mask: [UInt8]? = masked ? (0..<4).map { _ in UInt8.random(in: 0...255) } : nil
            let head = header(opcode: offset == 0 ? opcode : .continuation, fin: end == payload.count, length: end - offset, mask: mask)
            if offset == 0 { prefix = head } else { body += head }
            if let mask {
                for i in offset..<end { body.append(payload[i] ^ mask[(i - offset) & 3]) }
            } else {
                body += payload[offset..<end]
            }
            offset = end
        } while offset < payload.count
        return SPOutFrame(prefix: prefix, body: body)
    }

    static func header(opcode: Opcode, fin: Bool, length: Int, mask: [UInt8]?) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | opcode.rawValue]
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        if length < 126 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(shift))) }
        }
        if let mask { bytes += mask }
        return bytes
    }

    struct Frame: Equatable {
        let fin: Bool
        let opcode: Opcode
        let payload: [UInt8]
        let consumed: Int
    }

    enum FrameParse: Equatable {
        case incomplete
        case invalid(String)
        case frame(Frame)
    }

    /// Parses one frame from the start of `bytes`. A server requires masked frames and
    /// a client unmasked ones (RFC 6455 5.1); a frame longer than `maxPayload` is refused
    /// before its payload arrives.
    static func parseFrame(_ bytes: ArraySlice<UInt8>, fromClient: Bool, maxPayload: Int) -> FrameParse {
        let s = bytes.startIndex
        guard bytes.count >= 2 else { return .incomplete }
        let first = bytes[s], second = bytes[s + 1]
        guard first & 0x70 == 0 else { return .invalid("reserved bits set (no extension was agreed)") }
        guard let opcode = Opcode(rawValue: first & 0x0F) else { return .invalid("unknown opcode \(first & 0x0F)") }
        let fin = first & 0x80 != 0
        let masked = second & 0x80 != 0
        guard masked == fromClient else { return .invalid(fromClient ? "an unmasked frame from a client" : "a masked frame from a server") }
        var offset = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard bytes.count >= 4 else { return .incomplete }
            length = UInt64(bytes[s + 2]) << 8 | UInt64(bytes[s + 3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return .incomplete }
            length = 0
            for i in 2..<10 { length = length << 8 | UInt64(bytes[s + i]) }
            offset = 10
        }
        if opcode.isControl && (length > 125 || !fin) { return .invalid("a control frame longer than 125 bytes or fragmented") }
        guard length <= UInt64(maxPayload) else { return .invalid("a frame of \(length) bytes (limit \(maxPayload))") }
        var mask: [UInt8] = []
        if masked {
            guard bytes.count >= offset + 4 else { return .incomplete }
            mask = Array(bytes[(s + offset)..<(s + offset + 4)])
            offset += 4
        }
        let size = Int(length)
        guard bytes.count >= offset + size else { return .incomplete }
        var payload = Array(bytes[(s + offset)..<(s + offset + size)])
        if masked { for i in 0..<size { payload[i] ^= mask[i & 3] } }
        return .frame(Frame(fin: fin, opcode: opcode, payload: payload, consumed: offset + size))
    }

    // MARK: Helpers

    /// The index of the `\r\n\r\n` that ends the headers.
    private static func headerEnd(_ bytes: ArraySlice<UInt8>) -> Int? {
        let limit = min(bytes.endIndex, bytes.startIndex + maxHandshakeBytes + 4)
        guard limit - bytes.startIndex >= 4 else { return nil }
        var i = bytes.startIndex
        while i + 3 < limit {
            if bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private static func parseHeaders(_ lines: ArraySlice<Substring>) -> [String: String] {
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingSpaces()
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        return headers
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func base64(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1 = i + 1 < bytes.count ? bytes[i + 1] : 0, b2 = i + 2 < bytes.count ? bytes[i + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(i + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(i + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

private extension StringProtocol {
    func trimmingSpaces() -> String {
        let scalars = unicodeScalars.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()
        return String(String.UnicodeScalarView(scalars))
    }
}
