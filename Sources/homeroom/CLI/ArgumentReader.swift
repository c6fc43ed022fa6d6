@preconcurrency import Glibc

/// Reads `--name value` options and flags from a list of arguments, in the
/// manner of swift-argument-parser (which cannot be fetched here).
struct ArgumentReader {
    private var remaining: [String]
    let usage: String
    /// Every option the command asked for, given or not (`checkUsage`).
    private var asked: Set<String> = []

    init(_ arguments: ArraySlice<String>, usage: String) {
        self.remaining = Array(arguments)
        self.usage = usage
    }

    var wantsHelp: Bool { remaining.contains("-h") || remaining.contains("--help") }

    /// Takes the first argument when it is a word, not an option (a sub-subcommand).
    mutating func leadingWord() -> String? {
        guard let first = remaining.first, !first.hasPrefix("-") else { return nil }
        remaining.removeFirst()
        return first
    }

    mutating func flag(_ name: String) -> Bool {
        asked.insert(name)
        guard let index = remaining.firstIndex(of: name) else { return false }
        remaining.remove(at: index)
        return true
    }

    /// The value of an option; when it is given more than once, the last one wins.
    mutating func string(_ name: String) throws(CommandLineError) -> String? {
        try strings(name).last
    }

    /// Every value of a repeatable option, in order.
    mutating func strings(_ name: String) throws(CommandLineError) -> [String] {
        asked.insert(name)
        var values: [String] = []
        while let index = remaining.firstIndex(of: name) {
            guard index + 1 < remaining.count, !remaining[index + 1].hasPrefix("--") else {
                throw .usage("missing value for '\(name)'", usage: usage)
            }
            values.append(remaining[index + 1])
            remaining.removeSubrange(index...(index + 1))
        }
        return values
    }

    mutating func integer<T: FixedWidthInteger>(_ name: String, in range: ClosedRange<T>) throws(CommandLineError) -> T? {
        guard let text = try string(name) else { return nil }
        guard let value = T(text), range.contains(value) else {
            throw .usage("'\(name)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'", usage: usage)
        }
        return value
    }

    /// Takes every argument left that is not an option (call after reading the options).
    mutating func positionals() throws(CommandLineError) -> [String] {
        checkUsage()
        if let option = remaining.first(where: { $0.hasPrefix("--") && $0.count > 2 }) {
            throw .usage("unknown option '\(option)'" + suggestion(for: option), usage: usage)
        }
        defer { remaining.removeAll() }
        return remaining
    }

    /// Fails on anything not consumed, so a typo never passes silently.
    func finish() throws(CommandLineError) {
        checkUsage()
        if let first = remaining.first {
            throw .usage("unknown argument '\(first)'" + suggestion(for: first), usage: usage)
        }
    }

    /// "did you mean '--watch'?" for a mistyped option: the nearest one the usage names.
    func suggestion(for word: String) -> String {
        guard word.hasPrefix("--") else { return "" }
        var options: Set<String> = []
        for token in usage.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "-") }) where token.hasPrefix("--") && token.count > 2 {
            options.insert(String(token))
        }
        return Suggestion.nearest(word, among: options.sorted()).map { ": did you mean '\($0)'?" } ?? ""
    }

    /// With HOMEROOM_CHECK_USAGE=1, once every option is read: print the options the
    /// help documents and those the command asked for, as one JSON line, and exit 0
    /// before doing anything (the test that keeps help, completion and parsers in step).
    func checkUsage() {
        guard ProcessEnvironment.current["HOMEROOM_CHECK_USAGE"] == "1" else { return }
        let documented = CommandCatalog.options(in: usage).map(\.name).filter { $0 != "--help" }
        func list(_ names: [String]) -> String { "[" + names.sorted().map { "\"\($0)\"" }.joined(separator: ",") + "]" }
        print("{\"usage_check\":{\"documented\":\(list(documented)),\"asked\":\(list(Array(asked)))}}")
        exit(0)
    }
}
