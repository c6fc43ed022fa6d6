import COpenSSL
import FoundationEssentials

/// RFC 6455's opening handshake, server side: the accept key and the checks on the
/// browser's upgrade request.
public enum WebSocketHandshake {
    /// The GUID RFC 6455 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// base64(SHA-1(key + GUID)): what `Sec-WebSocket-Accept` must say.
    public static func acceptKey(for key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { bytes in
            digest.withUnsafeMutableBufferPointer { out in
                _ = SHA1(bytes.baseAddress, bytes.count, out.baseAddress)
            }
        }
        return Data(digest).base64EncodedString()
    }

    /// Why an upgrade request is refused: the HTTP status and a line for the log.
    public struct Refusal: Error, Equatable, Sendable {
        public var status: UInt16
        public var reason: String
    }

    /// Checks an upgrade request and gives the 101 reply's bytes. `Host` must name this
    /// server (one of `hosts`, e.g. `127.0.0.1:8080`, `localhost:8080`): a page whose DNS
    /// name was rebound to this address sends its own name there. `Origin`, when the
    /// browser sends one, must be this server's own page (`http://<Host>`): another
    /// site's script in the same browser may not open a classroom socket. Behind a
    /// reverse proxy the browser reaches the page at another address: `publicOrigins`
    /// (`https://class.example.org`) are accepted as well, each with its own Host.
    public static func reply(to head: HTTPHead, hosts: Set<String>, publicOrigins: Set<String> = []) throws(Refusal) -> [UInt8] {
        guard head.method == "GET" else { throw Refusal(status: 405, reason: "a WebSocket opens with GET") }
        guard head.header("upgrade")?.lowercased() == "websocket",
              head.header("connection")?.lowercased().split(separator: ",").contains(where: { $0.trimmedSpaces == "upgrade" }) == true
        else { throw Refusal(status: 400, reason: "expected Upgrade: websocket and Connection: Upgrade") }
        guard head.header("sec-websocket-version") == "13" else { throw Refusal(status: 426, reason: "only WebSocket version 13") }
        guard let key = head.header("sec-websocket-key"), Data(base64Encoded: key)?.count == 16 else {
            throw Refusal(status: 400, reason: "Sec-WebSocket-Key must be 16 bytes in base64")
        }
        let publicHosts = Set(publicOrigins.map(originHost))
        guard let host = head.header("host")?.lowercased(), hosts.contains(host) || publicHosts.contains(host) else {
            throw Refusal(status: 403, reason: "Host \(head.header("host") ?? "(none)") is not this classroom server's address")
        }
        if let origin = head.header("origin")?.lowercased(), origin != "http://" + host,
           !(publicOrigins.contains(origin) && originHost(origin) == host) {
            throw Refusal(status: 403, reason: "origin \(origin) is not this classroom's page (http://\(host))")
        }
        let reply = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(acceptKey(for: key))\r\n\r\n"
        return Array(reply.utf8)
    }

    /// `https://class.example.org:8443` -> `class.example.org:8443`: what a browser sends as Host for that page.
    static func originHost(_ origin: String) -> String {
        let parts = origin.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count == 2 ? String(parts[1]) : origin
    }

    /// A public origin as browsers send it: scheme and host (and a port if not the scheme's
    /// own), lower case, no path; nil when `text` is not one.
    public static func normalizedOrigin(_ text: String) -> String? {
        var origin = text.lowercased()
        while origin.hasSuffix("/") { origin.removeLast() }
        let parts = origin.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0] == "http" || parts[0] == "https", !parts[1].isEmpty else { return nil }
        let allowed: (Character) -> Bool = { character in
            character.isLetter || character.isNumber || character == "." || character == "-" || character == ":"
                || character == "[" || character == "]"
        }
        guard parts[1].allSatisfy(allowed) else { return nil }
        if parts[0] == "https", origin.hasSuffix(":443") { origin.removeLast(4) }
        if parts[0] == "http", origin.hasSuffix(":80") { origin.removeLast(3) }
        return origin
    }
}
