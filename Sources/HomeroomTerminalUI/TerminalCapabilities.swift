@preconcurrency import Glibc

/// What the output can show: colours only on a terminal and never with NO_COLOR;
/// width from COLUMNS, then the terminal, then 80. `height` is set for full-screen
/// views (from LINES, then the terminal); nil means "print everything".
public struct TerminalCapabilities: Sendable, Equatable {
    public var colors: Bool
    public var width: Int
    public var height: Int?

    public init(colors: Bool, width: Int, height: Int? = nil) {
        self.colors = colors
        self.width = width
        self.height = height
    }

    public static let plain80 = TerminalCapabilities(colors: false, width: 80)

    public static func detect(fileDescriptor: Int32 = STDOUT_FILENO, environment: [String: String]) -> TerminalCapabilities {
        let isTerminal = isatty(fileDescriptor) == 1
        let colors = isTerminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        var size = winsize()
        let hasSize = isTerminal && ioctl(fileDescriptor, UInt(TIOCGWINSZ), &size) == 0
        let lines = environment["LINES"].flatMap(Int.init).flatMap { $0 > 0 ? $0 : nil }
            ?? (hasSize && size.ws_row > 0 ? Int(size.ws_row) : nil)
        if let columns = environment["COLUMNS"].flatMap(Int.init), columns > 0 {
            return TerminalCapabilities(colors: colors, width: columns, height: lines)
        }
        if hasSize, size.ws_col > 0 {
            return TerminalCapabilities(colors: colors, width: Int(size.ws_col), height: lines)
        }
        return TerminalCapabilities(colors: colors, width: 80, height: lines)
    }

    /// Whether `fileDescriptor` is a terminal (full-screen views need one).
    public static func isTerminal(_ fileDescriptor: Int32 = STDOUT_FILENO) -> Bool { isatty(fileDescriptor) == 1 }
}
