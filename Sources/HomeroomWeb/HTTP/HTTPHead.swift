/// A request's line and headers, as the server reads them (no body: the server takes GETs only).
public struct HTTPHead: Sendable, Equatable {
    public var method: String
    /// The path without its query.
    public var path: String
    public var headers: [(name: String, value: String)]

    public static func == (a: HTTPHead, b: HTTPHead) -> Bool {
        a.method == b.method && a.path == b.path && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }

    /// The first header of that name (lowercase), trimmed.
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Parses the bytes before the blank line; nil when they are not an HTTP/1.x request.
    public init?(_ bytes: some Collection<UInt8>) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let requestLine = lines.first else { return nil }
        let parts = requestLine.split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1.") else { return nil }
        method = String(parts[0])
        path = String(parts[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (line[..<colon].lowercased(), line[line.index(after: colon)...].trimmedSpaces)
        }
    }

    /// Where the head ends: the index of "\r\n\r\n", if it arrived.
    static func end(of bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }
}

/// HTTP replies the server sends: whole, with `Connection: close`.
enum HTTPReply {
    static func make(_ status: UInt16, _ contentType: String, _ body: [UInt8], extraHeaders: String = "") -> [UInt8] {
        let reasons: [UInt16: String] = [200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                                         426: "Upgrade Required", 431: "Request Header Fields Too Large", 503: "Service Unavailable"]
        let head = "HTTP/1.1 \(status) \(reasons[status] ?? "Status")\r\nContent-Type: \(contentType)\r\n"
            + "Content-Length: \(body.count)\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\(extraHeaders)Connection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    static func text(_ status: UInt16, _ message: String) -> [UInt8] {
        make(status, "text/plain; charset=utf-8", Array((message + "\n").utf8))
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmedSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
