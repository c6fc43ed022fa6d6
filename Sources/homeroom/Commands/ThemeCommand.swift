@preconcurrency import Glibc
import HomeroomTerminalUI

/// `homeroom theme print|check`: the UI config as JSON.
enum ThemeCommand {
    static let usage = """
        OVERVIEW: Print the default theme (the UI config) to start from, or check a theme file.

        USAGE: homeroom theme print
               homeroom theme check <file>

        SUBCOMMANDS:
          print         Write the default theme as JSON to stdout.
          check <file>  Read a theme; say what is wrong with it, or print the effective theme.

        OPTIONS:
          -h, --help    Show help information.

        A theme sets, per component (stateBar, roster, stage, hands, parties, counts, status):
        visible, enabled, colours (names, 0-255 or #RRGGBB), glyphs and the roster's column order.
        Keys left out keep their default. Use one with --theme <file> or HOMEROOM_THEME.
        See docs/CUSTOMIZE.md.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let words = try reader.positionals()
        switch words.first {
        case "print":
            guard words.count == 1 else { throw .usage("theme print takes no arguments", usage: usage) }
            print(Theme.default.json())
        case "check":
            guard words.count == 2 else { throw .usage("name the theme file: homeroom theme check <file>", usage: usage) }
            print(try load(words[1]).json())
        case nil:
            throw .usage("say what to do: print or check", usage: usage)
        case let other?:
            throw .usage("unknown theme subcommand '\(other)'", usage: usage)
        }
    }

    /// The theme from `path`, or from HOMEROOM_THEME, or the default.
    static func load(_ path: String?) throws(CommandLineError) -> Theme {
        guard let path = path ?? ProcessEnvironment.current["HOMEROOM_THEME"] else { return .default }
        let bytes = try FileText.read(path, what: "theme file")
        do {
            return try Theme.load(json: bytes)
        } catch {
            throw .failure("theme file \(path): \(error.description); see `homeroom theme print` and docs/CUSTOMIZE.md")
        }
    }
}

/// Reads a small file whole, with errors that say what to check.
enum FileText {
    /// Reads a file, or standard input for "-".
    static func read(_ path: String, what: String, limit: Int = 1 << 20) throws(CommandLineError) -> [UInt8] {
        guard let handle = path == "-" ? stdin : fopen(path, "r") else {
            throw .failure("cannot read \(what) \(path): \(String(cString: strerror(errno))); check the path and its permissions")
        }
        defer { if path != "-" { fclose(handle) } }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, handle)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
            if bytes.count > limit { throw .failure("\(what) \(path) is larger than \(limit >> 10) KiB") }
        }
        return bytes
    }
}
