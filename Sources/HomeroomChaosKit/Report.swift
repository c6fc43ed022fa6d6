import HomeroomNode
import HomeroomSupport
import HomeroomHarness

/// A small JSON value, written with keys in the order given (reports diff well).
indirect enum JSON {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    static func int<T: BinaryInteger>(_ value: T) -> JSON { .integer(Int64(value)) }

    func render(indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case let .string(text): return quote(text)
        case let .number(value):
            if value.isNaN || value.isInfinite { return "null" }
            return value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
        case let .integer(value): return String(value)
        case let .bool(value): return value ? "true" : "false"
        case .null: return "null"
        case let .array(items):
            if items.isEmpty { return "[]" }
            if items.allSatisfy({ $0.isScalar }) && items.count <= 12 {
                return "[" + items.map { $0.render() }.joined(separator: ", ") + "]"
            }
            return "[\n" + items.map { inner + $0.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case let .object(fields):
            if fields.isEmpty { return "{}" }
            return "{\n" + fields.map { inner + quote($0.0) + ": " + $0.1.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
        }
    }

    private var isScalar: Bool {
        switch self {
        case .array, .object: return false
        default: return true
        }
    }

    private func quote(_ text: String) -> String { jsonString(text) }
}

/// Nearest-rank percentiles of millisecond samples.
struct Percentiles {
    var count: Int
    var p50: UInt64
    var p90: UInt64
    var p99: UInt64
    var max: UInt64

    init(_ samples: [UInt64]) {
        let sorted = samples.sorted()
        count = sorted.count
        func rank(_ q: Double) -> UInt64 {
            guard !sorted.isEmpty else { return 0 }
            let index = Int((q * Double(sorted.count)).rounded(.up)) - 1
            return sorted[Swift.max(0, Swift.min(sorted.count - 1, index))]
        }
        p50 = rank(0.50)
        p90 = rank(0.90)
        p99 = rank(0.99)
        max = sorted.last ?? 0
    }

    var json: JSON {
        .object([("count", .int(count)), ("p50_ms", .int(p50)), ("p90_ms", .int(p90)), ("p99_ms", .int(p99)), ("max_ms", .int(max))])
    }

    var text: String { count == 0 ? "no samples" : "p50 \(p50) ms, p90 \(p90) ms, p99 \(p99) ms, max \(max) ms (\(count))" }
}

/// The parts of the report and the summary that `homeroom-chaos` and `homeroom verify` share.
extension Checker.Result {
    var attempted: Int { byOperation.values.reduce(0) { $0 + $1.attempted } }

    var writesJSON: JSON {
        let refusedJSON: [(String, JSON)] = refused.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) }
        let byOperationJSON: [(String, JSON)] = byOperation.sorted { $0.key < $1.key }.map {
            ($0.key, .object([("attempted", .int($0.value.attempted)), ("acknowledged", .int($0.value.acknowledged))]))
        }
        return .object([
            ("attempted", .int(attempted)),
            ("acknowledged", .int(acknowledged)),
            ("refused", .object(refusedJSON)),
            ("indeterminate", .int(indeterminate)),
            ("lost", .int(lostCount)),
            ("stable", .int(acknowledged - lostCount)),
            ("lost_examples", .array(lost.map { .string($0) })),
            ("by_operation", .object(byOperationJSON)),
        ])
    }

    var checksJSON: JSON {
        .array(checks.map { check in
            .object([("name", .string(check.name)), ("passed", .bool(check.passed)), ("target_only", .bool(check.isTarget)),
                     ("detail", .string(check.detail))])
        })
    }

    /// The writes and set-full lines of the summary.
    var writeLines: [String] {
        let refusedText = refused.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return ["  writes:      \(attempted) attempted, \(acknowledged) acknowledged, \(refused.values.reduce(0, +)) refused\(refusedText.isEmpty ? "" : " (\(refusedText))"), \(indeterminate) indeterminate",
                "  set-full:    \(acknowledged - lostCount) stable, \(lostCount) lost; stable latency \(stableLatency.text)"]
    }

    /// One line per check, then the first lost writes, differences and offline users.
    var checkLines: [String] {
        var lines: [String] = []
        for check in checks {
            let mark = check.passed ? "ok  " : (check.isTarget ? "MISS" : "FAIL")
            lines.append("  [\(mark)] \(check.name): \(check.detail)")
        }
        for example in lost.prefix(5) { lines.append("  lost: \(example)") }
        for difference in differences.prefix(5) { lines.append("  differs: \(difference)") }
        for detail in presenceDetails.prefix(8) { lines.append("  offline: \(detail)") }
        return lines
    }
}
