/// Small formatting helpers shared by the components.
public enum Format {
    /// 1234567 -> "1,234,567".
    public static func count<T: BinaryInteger>(_ value: T) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// Milliseconds as m:ss or h:mm:ss.
    public static func duration(millis: Int64) -> String {
        let total = abs(millis) / 1000
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        let pad = { (v: Int64) in v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(pad(m)):\(pad(s))" : "\(m):\(pad(s))"
    }

    /// Microseconds as "0.42 ms" / "12 ms".
    public static func latency(micros: Double) -> String {
        let ms = micros / 1000
        if ms < 10 {
            let hundredths = Int((ms * 100).rounded())
            return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) ms"
        }
        return "\(Int(ms.rounded())) ms"
    }
}

extension StyledLine {
    /// Cut to `width` columns (with "…") and padded with spaces to exactly `width`.
    func fitted(to width: Int) -> StyledLine {
        var out = StyledLine(fill: fill)
        var used = 0
        for span in spans {
            let spanWidth = DisplayWidth.of(span.text)
            if used + spanWidth > width {
                let cut = DisplayWidth.truncate(span.text, to: width - used)
                out.append(cut, span.style)
                used += DisplayWidth.of(cut)
                break
            }
            out.append(span.text, span.style)
            used += spanWidth
        }
        if used < width { out.append(String(repeating: " ", count: width - used)) }
        return out
    }
}
