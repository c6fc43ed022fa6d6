import HomeroomContext

/// Messages, presence and properties as text lines and JSON, for join, the one-shot
/// actions and the live roster. Text from other users is made printable first: a
/// message must never move the cursor or recolour someone's terminal.
enum MessageText {
    static func line(_ message: MessageInfo, local: UserID) -> String {
        let sender = message.sender.id == local ? "you" : printable(message.sender.displayName)
        var head = "\(clock(message.sentAtMillis)) \(sender)"
        if let recipient = message.recipient { head += " → " + (recipient == local ? "you" : printable(recipient)) + " (whisper)" }
        if message.type != "chat" { head += " [\(printable(message.type))]" }
        var marks: [String] = []
        if message.late { marks.append("late") }
        if message.gap { marks.append("an earlier message is missing") }
        return head + ": " + shortened(body(message)) + (marks.isEmpty ? "" : " (" + marks.joined(separator: "; ") + ")")
    }

    /// A line shows at most this many characters of a message; `history --json` has all.
    static let lineLimit = 500

    static func shortened(_ text: String) -> String {
        guard text.count > lineLimit else { return text }
        return String(text.prefix(lineLimit)) + "… (+\(text.count - lineLimit) characters: `history --json` shows the whole message)"
    }

    static func body(_ message: MessageInfo) -> String {
        message.text.map(printable) ?? "<\(message.payload.count) bytes of binary payload>"
    }

    static func json(_ message: MessageInfo) -> JSONText {
        var fields: [(String, JSONText)] = [
            ("id", .string(message.key.description)), ("sender", .string(message.key.sender)), ("counter", .int(Int64(message.key.counter))),
            ("recipient", message.recipient.map { .string($0) } ?? .null), ("type", .string(message.type)),
            ("sent_ms", .int(Int64(message.sentAtMillis))),
        ]
        if let text = message.text {
            fields.append(("text", .string(text)))
        } else {
            fields.append(("payload_hex", .string(message.payload.map { byte in
                let hex = String(byte, radix: 16)
                return byte < 16 ? "0" + hex : hex
            }.joined())))
        }
        if message.late { fields.append(("late", .bool(true))) }
        if message.gap { fields.append(("gap", .bool(true))) }
        return .object(fields)
    }

    static func presence(_ info: PresenceInfo, local: UserID) -> String {
        let name = info.user.id == local ? "you" : printable(info.user.displayName)
        let state = info.state.keys.sorted().map { "\(printable($0))=\(info.text($0).map(printable) ?? "<\(info.state[$0]!.count) bytes>")" }
        return "\(name) (\(info.user.role))" + (state.isEmpty ? "" : ": " + state.joined(separator: ", "))
    }

    static func presenceJSON(_ info: PresenceInfo) -> JSONText {
        .object([("user", .string(info.user.id)), ("name", .string(info.user.displayName)), ("role", .string(info.user.role.description)),
                 ("state", .object(info.state.keys.sorted().map { ($0, .string(info.text($0) ?? "")) }))])
    }

    static func presenceEvent(_ event: PresenceEvent, local: UserID) -> String? {
        func who(_ user: UserInfo) -> String { user.id == local ? "you" : printable(user.displayName) }
        switch event {
        case .joined, .left: return nil   // already told as "joined" / "left"
        case let .timedOut(user): return "\(who(user)) timed out (their node went down)"
        case let .stateChanged(user, state):
            let pairs = state.keys.sorted().map { "\(printable($0))=\(printable(String(decoding: state[$0]!, as: UTF8.self)))" }
            return "\(who(user)) presence: " + (pairs.isEmpty ? "cleared" : pairs.joined(separator: ", "))
        case let .interval(joined, left, timedOut, states):
            return "presence: +\(joined.count) joined, -\(left.count) left, \(timedOut.count) timed out, \(states.count) states changed"
        }
    }

    /// Control characters (ESC, CR, ...) shown as U+FFFD, so text cannot drive the terminal.
    static func printable(_ text: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            let value = scalar.value
            out.unicodeScalars.append(value < 0x20 || (0x7F...0x9F).contains(value) ? "\u{FFFD}" : scalar)
        }
        return out
    }

    static func clock(_ millis: UInt64) -> String {
        let seconds = millis / 1000
        let (h, m, s) = (seconds / 3600 % 24, seconds / 60 % 60, seconds % 60)
        func pad(_ v: UInt64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(pad(h)):\(pad(m)):\(pad(s))"
    }
}
