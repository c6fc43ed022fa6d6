import FoundationEssentials
import HomeroomSupport

/// The page's messages other than actions, and the server's replies other than the read model.
enum PageRequest {
    struct Envelope: Decodable { var type: String }

    /// The first message on a socket: who logs in, with which token.
    struct Login: Decodable {
        var token: String
        var room: String?
        var name: String?
    }

    /// Which page of the students to show (lecture hall).
    struct Page: Decodable { var index: Int }
}

enum PageReply {
    struct Welcome: Encodable {
        var type = "welcome"
        var user: String
        var role: String
        var room: String
        /// The server's wall clock: the page counts the class timer and the carousel's
        /// next turn from the server's times, whatever the browser's clock says.
        var nowMillis: UInt64
    }

    struct Result: Encodable {
        var type = "result"
        var id: Int
        var ok: Bool
        var code: String?
        var message: String?
    }

    /// The session cannot go on (login refused, kicked out): the page shows why.
    struct Ended: Encodable {
        var type = "ended"
        var code: String
        var message: String
    }

    static func json(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
