import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// One measured case, printed as one JSON object per line.
struct BenchRow {
    var suite: String
    var name: String
    var n: Int
    var opsPerSecond: Double?
    var bytesPerOp: Double?
    var p50Micros: Double?
    var p99Micros: Double?
    var seconds: Double?
    var ratioVsRaw: Double?
    var target: String?
    var note: String?

    var json: String {
        var fields = ["\"suite\":\(quote(suite))", "\"case\":\(quote(name))", "\"n\":\(n)"]
        func add(_ key: String, _ value: Double?) {
            if let value { fields.append("\"\(key)\":\(format(value))") }
        }
        add("ops_per_s", opsPerSecond)
        add("bytes_per_op", bytesPerOp)
        add("p50_us", p50Micros)
        add("p99_us", p99Micros)
        add("seconds", seconds)
        add("ratio_vs_raw", ratioVsRaw)
        if let target { fields.append("\"target\":\(quote(target))") }
        if let note { fields.append("\"note\":\(quote(note))") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    var markdown: String {
        func cell(_ value: Double?) -> String { value.map(format) ?? "" }
        return "| \(suite) | \(name) | \(n) | \(cell(opsPerSecond)) | \(cell(bytesPerOp)) | \(cell(p50Micros)) | \(cell(p99Micros)) | \(cell(seconds)) | \(cell(ratioVsRaw)) | \(target ?? "") |"
    }

    static let markdownHeader = """
        | suite | case | n | ops/s | bytes/op | p50 µs | p99 µs | seconds | vs raw | target |
        |---|---|---|---|---|---|---|---|---|---|
        """
}

/// JSON string escaping shared with the node's logs and the CLI.
private func quote(_ text: String) -> String { jsonString(text) }

private func format(_ value: Double) -> String {
    if value >= 100 { return String(Int64(value.rounded())) }
    let scaled = (value * 1000).rounded() / 1000
    return String(scaled)
}

/// Seconds taken by `body`, on the monotonic clock.
func measure(_ body: () -> Void) -> Double {
    let clock = ContinuousClock()
    let elapsed = clock.measure(body)
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
