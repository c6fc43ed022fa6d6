/// A run of text in one style.
public struct Span: Hashable, Sendable {
    public var text: String
    public var style: TextStyle

    public init(_ text: String, _ style: TextStyle = .plain) {
        self.text = text
        self.style = style
    }
}

/// One line of output: spans, and an optional style that fills the rest of the line
/// (a state bar's background, for example). Components build these; the scene fits
/// them to the width and adds escape codes only when the terminal shows colours.
public struct StyledLine: Hashable, Sendable {
    public var spans: [Span]
    public var fill: TextStyle?

    public init(_ spans: [Span] = [], fill: TextStyle? = nil) {
        self.spans = spans
        self.fill = fill
    }

    public init(_ text: String, _ style: TextStyle = .plain) {
        self.init([Span(text, style)])
    }

    public static let blank = StyledLine()

    public var width: Int { spans.reduce(0) { $0 + DisplayWidth.of($1.text) } }

    public var plainText: String { spans.map(\.text).joined() }

    public mutating func append(_ text: String, _ style: TextStyle = .plain) { spans.append(Span(text, style)) }

    /// Every span also dimmed (a disabled component).
    func dimmed() -> StyledLine {
        StyledLine(spans.map { Span($0.text, TextStyle(foreground: $0.style.foreground, background: $0.style.background, bold: $0.style.bold, dim: true)) },
                   fill: fill.map { TextStyle(foreground: $0.foreground, background: $0.background, bold: $0.bold, dim: true) })
    }

    /// The line cut to `width` columns (with "…"), filled when it has a fill style, and
    /// with escape codes only when `colors`. Trailing spaces are trimmed in plain output.
    public func render(width: Int, colors: Bool) -> String {
        var out = ""
        var used = 0
        var cut = false
        for span in spans where !cut {
            var text = span.text
            let spanWidth = DisplayWidth.of(text)
            if used + spanWidth > width {
                text = DisplayWidth.truncate(text, to: width - used)
                cut = true
            }
            if text.isEmpty { continue }
            used += DisplayWidth.of(text)
            let style = fill.map { span.style.over($0) } ?? span.style
            if colors && !style.isPlain {
                out += style.escape + text + TextStyle.reset
            } else {
                out += text
            }
        }
        if let fill, used < width {
            let pad = String(repeating: " ", count: width - used)
            out += colors && !fill.isPlain ? fill.escape + pad + TextStyle.reset : pad
        }
        if !colors {
            while out.last == " " { out.removeLast() }
        }
        return out
    }
}
