@preconcurrency import Glibc
import Synchronization

/// A small structured logger in the manner of swift-log: a level, metadata and an
/// autoclosure message. Libraries take one and never make their own; logs go to
/// stderr (or to a capture in tests), data to stdout.
public struct Logger: Sendable {
    public enum Level: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        public var description: String { ["trace", "debug", "info", "notice", "warning", "error"][rawValue] }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
            self = level
        }
    }

    public enum Format: String, Sendable { case text, json }

    public var label: String
    public var level: Level
    public var format: Format
    public var metadata: [String: String]
    private let sink: @Sendable (String) -> Void

    public init(label: String, level: Level = .info, format: Format = .text, metadata: [String: String] = [:],
                sink: (@Sendable (String) -> Void)? = nil) {
        self.label = label
        self.level = level
        self.format = format
        self.metadata = metadata
        self.sink = sink ?? { line in fputs(line + "\n", stderr) }
    }

    /// A logger that keeps every line in memory, for tests.
    public static func capturing(label: String, level: Level = .debug) -> (Logger, LogCapture) {
        let capture = LogCapture()
        return (Logger(label: label, level: level, sink: { capture.append($0) }), capture)
    }

    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: [String: String] = [:]) {
        guard level >= self.level else { return }
        let fields = metadata.merging(extra) { _, new in new }
        switch format {
        case .text:
            let meta = fields.keys.sorted().map { "\($0)=\(fields[$0]!)" }.joined(separator: " ")
            sink("\(level) [\(label)] \(message())\(meta.isEmpty ? "" : " " + meta)")
        case .json:
            var parts = ["\"level\":\(jsonString(level.description))", "\"label\":\(jsonString(label))",
                         "\"message\":\(jsonString(message()))"]
            for key in fields.keys.sorted() { parts.append("\(jsonString(key)):\(jsonString(fields[key]!))") }
            sink("{" + parts.joined(separator: ",") + "}")
        }
    }

    public func trace(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.trace, message(), extra) }
    public func debug(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.debug, message(), extra) }
    public func info(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.info, message(), extra) }
    public func notice(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.notice, message(), extra) }
    public func warning(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.warning, message(), extra) }
    public func error(_ message: @autoclosure () -> String, _ extra: [String: String] = [:]) { log(.error, message(), extra) }
}

public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])
    public init() {}
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    public var all: [String] { lines.withLock { $0 } }
}

/// A JSON string literal for `text` (quotes, backslashes and control characters
/// escaped): the one escaping routine for every JSON line Homeroom writes (logs,
/// health, the CLI, the bench and chaos reports).
public func jsonString(_ text: String) -> String {
    var out = "\""
    out.unicodeScalars.reserveCapacity(text.unicodeScalars.count + 2)
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}
