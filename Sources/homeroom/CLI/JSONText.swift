import HomeroomSupport

/// A tiny JSON writer for `--json` output (keys keep the order they are given in).
enum JSONText {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSONText])
    /// Keys and values side by side (an array of tuples here trips the compiler's cycle check).
    case fields([String], [JSONText])

    static func object(_ pairs: [(String, JSONText)]) -> JSONText { .fields(pairs.map(\.0), pairs.map(\.1)) }

    var rendered: String {
        switch self {
        case let .string(text): return Self.quote(text)
        case let .int(value): return String(value)
        case let .double(value): return value.isFinite ? String(value) : "null"
        case let .bool(value): return value ? "true" : "false"
        case .null: return "null"
        case let .array(items): return "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case let .fields(keys, values): return "{" + zip(keys, values).map { Self.quote($0) + ":" + $1.rendered }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String { jsonString(text) }
}
