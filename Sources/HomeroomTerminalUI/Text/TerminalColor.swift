/// A colour a theme names: "default", one of the 16 ANSI names ("blue", "bright-red",
/// "gray"), a 256-colour index ("208"), or 24-bit "#RRGGBB".
public enum TerminalColor: Hashable, Sendable, CustomStringConvertible {
    case `default`
    case ansi(Int)
    case palette(Int)
    case rgb(UInt8, UInt8, UInt8)

    static let names = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"]

    public init?(name text: String) {
        let name = text.lowercased()
        if name.isEmpty || name == "default" || name == "none" { self = .default; return }
        if let index = Self.names.firstIndex(of: name) { self = .ansi(index); return }
        if name == "gray" || name == "grey" { self = .ansi(8); return }
        if name.hasPrefix("bright-"), let index = Self.names.firstIndex(of: String(name.dropFirst(7))) { self = .ansi(8 + index); return }
        if let index = Int(name), (0...255).contains(index) { self = .palette(index); return }
        if name.hasPrefix("#"), name.count == 7, let value = UInt32(name.dropFirst(), radix: 16) {
            self = .rgb(UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
            return
        }
        return nil
    }

    public var description: String {
        switch self {
        case .default: return "default"
        case let .ansi(index): return index == 8 ? "gray" : (index < 8 ? Self.names[index] : "bright-" + Self.names[index - 8])
        case let .palette(index): return String(index)
        case let .rgb(r, g, b):
            return "#" + [r, g, b].map { let hex = String($0, radix: 16, uppercase: true); return hex.count == 1 ? "0" + hex : hex }.joined()
        }
    }

    /// SGR parameters for this colour as foreground or background.
    func sgr(background: Bool) -> String? {
        switch self {
        case .default: return nil
        case let .ansi(index):
            let base = index < 8 ? (background ? 40 : 30) : (background ? 100 : 90)
            return String(base + index % 8)
        case let .palette(index): return "\(background ? 48 : 38);5;\(index)"
        case let .rgb(r, g, b): return "\(background ? 48 : 38);2;\(r);\(g);\(b)"
        }
    }

    /// The error a theme gets for a colour it cannot use.
    static func explain(_ text: String, at path: String) -> String {
        "\(path): '\(text)' is not a colour: use default, black, red, green, yellow, blue, magenta, cyan, white, gray, "
            + "bright-<name>, 0-255, or #RRGGBB"
    }
}

/// How a span of text looks. Applied only when the terminal shows colours.
public struct TextStyle: Hashable, Sendable {
    public var foreground: TerminalColor
    public var background: TerminalColor
    public var bold: Bool
    public var dim: Bool

    public init(foreground: TerminalColor = .default, background: TerminalColor = .default, bold: Bool = false, dim: Bool = false) {
        self.foreground = foreground
        self.background = background
        self.bold = bold
        self.dim = dim
    }

    public static let plain = TextStyle()

    public var isPlain: Bool { self == .plain }

    /// The escape sequence that starts this style (empty when plain).
    var escape: String {
        var parameters: [String] = []
        if bold { parameters.append("1") }
        if dim { parameters.append("2") }
        if let fg = foreground.sgr(background: false) { parameters.append(fg) }
        if let bg = background.sgr(background: true) { parameters.append(bg) }
        return parameters.isEmpty ? "" : "\u{1B}[" + parameters.joined(separator: ";") + "m"
    }

    static let reset = "\u{1B}[0m"

    /// This style laid over `base`: set fields win.
    func over(_ base: TextStyle) -> TextStyle {
        TextStyle(foreground: foreground == .default ? base.foreground : foreground,
                  background: background == .default ? base.background : background,
                  bold: bold || base.bold, dim: dim || base.dim)
    }
}
