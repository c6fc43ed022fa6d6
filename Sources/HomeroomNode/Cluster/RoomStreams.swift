/// Room streams (docs/PROTOCOL.md, "Room streams"): an SP SUB socket that dials the node's
/// publish address over WebSocket names what it follows in the request path, and the
/// node sends that connection those topics and nothing else:
///
/// - `/v1/rooms/<room>`: the room's client stream (topic `<room> 00`);
/// - `/v1/rooms/<room>/users/<user>`: the same, plus that user's private stream in the
///   room (topic `@ <room> 00 <user> 00`).
///
/// Path segments are percent-encoded (room ids never need it). Messages keep their topic
/// in front, exactly as on the SP/TCP publish socket, so a client reads both the same way.
public enum RoomStreams {
    public static let prefix = "/v1/rooms/"
    /// A node's stream of a peer (`/v1/nodes/<its name>`): the peer's heartbeats, and
    /// the deltas of the rooms this node owns or holds (the peer's placement decides).
    public static let nodePrefix = "/v1/nodes/"
    /// As long as a user id may be (HomeroomWire's limit).
    static let maxUserBytes = 1_024

    /// The path of the stream for `room` (and `user`'s private stream, when given).
    public static func path(room: String, user: String? = nil) -> String {
        prefix + percentEncoded(room) + (user.map { "/users/" + percentEncoded($0) } ?? "")
    }

    /// The URL of that stream on a node whose publish address is `publishAddress`
    /// (`tcp://` becomes `ws://`, `tls+tcp://` becomes `wss://`), or nil for an address
    /// that has no WebSocket form (ipc, inproc).
    public static func url(publishAddress: String, room: String, user: String? = nil) -> String? {
        let schemes = [("tcp://", "ws://"), ("tcp4://", "ws://"), ("tls+tcp://", "wss://")]
        guard let (from, to) = schemes.first(where: { publishAddress.hasPrefix($0.0) }) else { return nil }
        return to + publishAddress.dropFirst(from.count) + path(room: room, user: user)
    }

    /// The URL a node named `name` dials for its stream of the peer publishing at
    /// `publishAddress`, or nil when the address has no WebSocket form.
    public static func nodeURL(publishAddress: String, name: String) -> String? {
        url(publishAddress: publishAddress, room: "-").map { String($0.dropLast(path(room: "-").count)) + nodePrefix + percentEncoded(name) }
    }

    /// What a request path follows.
    public static func follow(resource: String) -> Result<SPStreamFollow, SPStreamRefusal> {
        let pathOnly = resource.prefix { $0 != "?" && $0 != "#" }
        if pathOnly.hasPrefix(nodePrefix) {
            guard let name = percentDecoded(pathOnly.dropFirst(nodePrefix.count)), !name.isEmpty, name.utf8.count <= maxUserBytes,
                  !name.utf8.contains(0), !name.contains("/") else {
                return .failure(SPStreamRefusal("a node stream path is \(nodePrefix)<node name>"))
            }
            return .success(.node(name: name))
        }
        return topics(forResource: resource).map { .topics($0) }
    }

    /// The topics a room stream's path follows.
    public static func topics(forResource resource: String) -> Result<[[UInt8]], SPStreamRefusal> {
        let pathOnly = resource.prefix { $0 != "?" && $0 != "#" }
        guard pathOnly.hasPrefix(prefix) else {
            return .failure(SPStreamRefusal("no stream at \(pathOnly.prefix(200)): the paths are \(prefix)<room> and \(prefix)<room>/users/<user>"))
        }
        let segments = pathOnly.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 1 || (segments.count == 3 && segments[1] == "users") else {
            return .failure(SPStreamRefusal("a stream path is \(prefix)<room> or \(prefix)<room>/users/<user>"))
        }
        guard let room = percentDecoded(segments[0]) else { return .failure(SPStreamRefusal("the room id is not valid percent-encoded UTF-8")) }
        if let why = RoomID.validate(room) { return .failure(SPStreamRefusal(why)) }
        guard segments.count == 3 else { return .success([Topics.clientRoom(room)]) }
        guard let user = percentDecoded(segments[2]), !user.isEmpty, user.utf8.count <= maxUserBytes, !user.utf8.contains(0) else {
            return .failure(SPStreamRefusal("the user id must be 1 to \(maxUserBytes) bytes of percent-encoded UTF-8"))
        }
        return .success([Topics.clientRoom(room), Topics.clientUser(room, user)])
    }

    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let unreserved = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == 0x2D || byte == 0x2E || byte == 0x5F || byte == 0x7E || byte == 0x3A
            if unreserved {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }

    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            guard byte == 0x25 else { bytes.append(byte); continue }
            guard utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) else { return nil }
            bytes.append(value)
            utf8 = utf8.dropFirst(2)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
