@preconcurrency import Glibc

/// What the output can show: colours only on a terminal and never with NO_COLOR;
/// width from COLUMNS, then the terminal, then 80.
public struct TerminalCapabilities: Sendable, Equatable {
    public var colors: Bool
    public var width: Int

    public init(colors: Bool, width: Int) {
        self.colors = colors
        self.width = width
    }

    public static func detect(fileDescriptor: Int32 = STDOUT_FILENO, environment: [String: String]) -> TerminalCapabilities {
        let isTerminal = isatty(fileDescriptor) == 1
        let colors = isTerminal && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        if let columns = environment["COLUMNS"].flatMap(Int.init), columns > 0 {
            return TerminalCapabilities(colors: colors, width: columns)
        }
        var size = winsize()
        if isTerminal, ioctl(fileDescriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return TerminalCapabilities(colors: colors, width: Int(size.ws_col))
        }
        return TerminalCapabilities(colors: colors, width: 80)
    }
}
