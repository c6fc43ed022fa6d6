import HomeroomTestSupport
import Foundation
import Testing

/// Executable documentation (issue #18, item 6): every command line of README.md's
/// "Using the CLI" section and of the code blocks of docs/MESSAGING.md and
/// docs/CUSTOMIZE.md, read from the Markdown when the test runs, runs verbatim, in
/// document order (README, MESSAGING, CUSTOMIZE), in one room on a real `homeroom node`,
/// and succeeds, or fails exactly as its comment says (`[code]`: exit 1 with that code).
///
/// What a line may say, and how it runs:
/// - `a | b` runs a, then b; a `b` without `homeroom` replaces what follows a's verb
///   (`homeroom history limit 500 | clear` is also `homeroom history clear`).
/// - `[x]` runs without x, then with it; `x|y` inside a word runs each (every combination).
/// - `# comment` and a description column (after two spaces) are notes: a `[code]` in a
///   note means the line must be refused with that code.
/// - `export A=x` and `A=x homeroom ...` set the environment; `$NAME` comes from it (and
///   `$TOK`, a real join token the test makes); `> file` writes stdout to that file, in
///   a temporary working directory.
/// - `NAME=$(homeroom ... --json | jq .key)` (or `jq -r .key`) runs the command and sets
///   `$NAME` to that key of the JSON object it printed, as the shell would.
/// - `#> text` lines right under a command are what it prints (stdout, then stderr; on a
///   terminal, what the screen showed): each must be a line of it, in that order. Runs
///   of spaces match any run of spaces, `<name>` any word (an id, a time, a count that
///   differs from run to run), `…` any text. Addresses of the doc stand for the test
///   nodes' own. Every README command shows its output this way (`outputOptional` lists
///   the exceptions), so a wrong number, field or word in the README fails the test.
///
/// Lines that cannot run as written in a test are adapted by kind, below (`Kind`), or one
/// by one in `adaptations`, or not run, with the reason, in `notRun`. A command line that
/// none of that covers (a `<placeholder>`, an unknown `$NAME`, an address off loopback, a
/// redirect outside the working directory, another background command) fails the test,
/// and so does an entry of those lists that no longer matches a line: the docs cannot
/// drift away from what runs.
@Suite(.serialized) struct ExecutableDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The files whose command lines run, in this order; README only in its section.
    static let sources: [(file: String, section: String?)] = [
        ("README.md", "## Using the CLI"), ("docs/MESSAGING.md", nil), ("docs/CUSTOMIZE.md", nil),
    ]

    /// Lines run differently from the doc, one by one (keyed by the command as written).
    struct Adaptation: Sendable {
        var reason: String
        /// Addresses of the doc that stand for the test node's listen address.
        var nodeAddresses: [String] = []
        /// Appended to the command line.
        var appended: [String] = []
        /// A `> /absolute/path` is written into the working directory instead.
        var redirectIntoWorkDirectory = false
        /// The redirected output is a bash script: `bash -n` must accept it.
        var bashSyntax = false
        var timeout: Double = 30
    }

    static let adaptations: [String: Adaptation] = [
        "homeroom context set school --node tcp://10.0.0.5:7100 --token $TOK": Adaptation(
            reason: "10.0.0.5 stands for a school's node, which a test may never contact: the test node's address is saved instead "
                + "(like every context line, it runs with HOMEROOM_CONFIG_DIR in a temporary directory; $TOK is a real token)",
            nodeAddresses: ["tcp://10.0.0.5:7100"]),
        "homeroom completion bash > /etc/bash_completion.d/homeroom": Adaptation(
            reason: "a test may not write to /etc: the script goes to a file in the working directory, and bash -n must accept it",
            redirectIntoWorkDirectory: true, bashSyntax: true),
        "HOMEROOM_THEME=my-theme.json homeroom demo": Adaptation(
            reason: "the demo's default lesson is 25 s: run with the DemoRunTests length (4 students, 10 s), still with the printed theme",
            appended: ["--students", "4", "--seconds", "10"], timeout: 90),
    ]

    /// Lines that are not run at all, with the reason (keyed by the command as written).
    static let notRun: [String: String] = [:]

    /// README command lines that may go without `#>` lines (checked when they have them).
    /// Every other README command shows what it prints, except an `export`, a line whose
    /// stdout goes to a file (it must print nothing else), and a `$(...)` capture (the
    /// shell shows nothing; a later read shows the value).
    static let outputOptional: [(command: String, prefix: Bool, reason: String)] = [
        ("homeroom presence set ", true, "another change of issue 42 rewrites this line (a --hold-style command or a note); it documents its output"),
        ("homeroom presence", false, "its `#>` line would sit next to the presence set line another change rewrites; add it (\"#> no one is online\") with that change"),
    ]

    static func outputIsOptional(_ text: String) -> Bool {
        outputOptional.contains { $0.prefix ? text.hasPrefix($0.command) : text == $0.command }
    }

    // MARK: - Reading the docs

    struct DocCommand: CustomStringConvertible {
        var file: String
        var line: Int
        /// The command as written (one column, one `|` alternative group, no comment).
        var text: String
        /// Its comment and description column.
        var note: String
        /// Every expansion, as raw shell words (quotes kept).
        var variants: [[String]]
        /// Its `#>` lines: what it prints.
        var expected: [String] = []
        /// `NAME=$(homeroom ... --json | jq .key)`: the variable and the key (raw: `jq -r`).
        var capture: (name: String, key: String, raw: Bool)?
        var description: String { "\(file):\(line): \(text)" }

        /// `[code]` in the note, or an `Error: refused [code]` line it shows: the line must
        /// be refused with it.
        var expectedCode: String? {
            let regex = try! NSRegularExpression(pattern: #"\[([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\]"#)
            for text in [note] + expected.filter({ $0.hasPrefix("Error: refused [") }) {
                if let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                   let range = Range(match.range(at: 1), in: text) { return String(text[range]) }
            }
            return nil
        }

        /// Its stdout goes to a file.
        var redirects: Bool { variants.contains { $0.contains(">") } }
    }

    struct Extraction {
        var commands: [DocCommand] = []
        /// Code lines that mention a homeroom command but are not command lines the test understands.
        var unrecognized: [String] = []
        /// `#>` lines that follow no command line.
        var strayOutput: [String] = []
    }

    /// The lines of fenced and indented code blocks (1-based line numbers).
    static func codeLines(_ markdown: String, section: String?) throws -> [(number: Int, text: String)] {
        let lines = markdown.components(separatedBy: "\n")
        var range = 0..<lines.count
        if let section {
            guard let start = lines.firstIndex(of: section) else { throw CLIError("no '\(section)' section") }
            let end = lines[(start + 1)...].firstIndex { $0.hasPrefix("## ") } ?? lines.count
            range = start..<end
        }
        var result: [(Int, String)] = []
        var fenced = false, indented = false
        var previousBlank = true
        for index in range {
            let line = lines[index]
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                fenced.toggle()
                indented = false
                previousBlank = false
                continue
            }
            let blank = line.trimmingCharacters(in: .whitespaces).isEmpty
            if fenced {
                result.append((index + 1, line))
            } else if (line.hasPrefix("    ") || line.hasPrefix("\t")) && (previousBlank || indented) && !blank {
                indented = true
                result.append((index + 1, line))
            } else if !blank {
                indented = false
            }
            previousBlank = blank
        }
        return result
    }

    static func extract() throws -> Extraction {
        var extraction = Extraction()
        for (file, section) in sources {
            let markdown = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            var previous: (number: Int, command: Int?) = (0, nil)
            for (number, line) in try codeLines(markdown, section: section) {
                defer { previous.number = number }
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("#>") {
                    // Output of the command on the line above (or above its other #> lines).
                    if number == previous.number + 1, let index = previous.command {
                        extraction.commands[index].expected.append(String(trimmed.dropFirst(2)).trimmingCharacters(in: .whitespaces))
                    } else {
                        extraction.strayOutput.append("\(file):\(number): \(trimmed)")
                    }
                    continue
                }
                previous.command = nil
                let (code, comment) = splitComment(line)
                var found: [(text: String, note: String)] = []
                var other = false
                for column in columns(code) {
                    if isCommandStart(column) {
                        found.append((column, ""))
                    } else if !found.isEmpty {
                        found[found.count - 1].note += column + " "
                    } else {
                        other = true
                    }
                }
                if !found.isEmpty { found[found.count - 1].note += comment }
                if found.isEmpty || other {
                    if mentionsCommand(code) { extraction.unrecognized.append("\(file):\(number): \(line.trimmingCharacters(in: .whitespaces))") }
                    if found.isEmpty { continue }
                }
                for (text, note) in found {
                    if let capture = capture(text) {
                        extraction.commands.append(DocCommand(file: file, line: number, text: text, note: note,
                                                              variants: expand(rawWords(capture.command)[...]),
                                                              capture: (capture.name, capture.key, capture.raw)))
                    } else {
                        let variants = alternatives(text).flatMap { expand(rawWords($0)[...]) }
                        extraction.commands.append(DocCommand(file: file, line: number, text: text, note: note, variants: variants))
                    }
                    previous.command = extraction.commands.count - 1
                }
            }
        }
        return extraction
    }

    /// The code and the comment (`#` at the start or after a space, outside quotes).
    static func splitComment(_ line: String) -> (code: String, comment: String) {
        var quote: Character?
        var previous: Character = " "
        for index in line.indices {
            let character = line[index]
            if let open = quote {
                if character == open { quote = nil }
            } else if character == "\"" || character == "'" {
                quote = character
            } else if character == "#" && previous.isWhitespace {
                return (String(line[..<index]).trimmingCharacters(in: .whitespaces),
                        String(line[line.index(after: index)...]).trimmingCharacters(in: .whitespaces))
            }
            previous = character
        }
        return (line.trimmingCharacters(in: .whitespaces), "")
    }

    /// Columns: text separated by two spaces or more, outside quotes.
    static func columns(_ code: String) -> [String] {
        var result: [String] = []
        var current = ""
        var quote: Character?
        var spaces = 0
        for character in code {
            if quote == nil && character == " " {
                spaces += 1
                continue
            }
            if spaces >= 2 && !current.isEmpty { result.append(current); current = "" } else if spaces == 1 { current += " " }
            spaces = 0
            if let open = quote { if character == open { quote = nil } } else if character == "\"" || character == "'" { quote = character }
            current.append(character)
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    static let assignment = try! NSRegularExpression(pattern: #"^[A-Za-z_][A-Za-z0-9_]*="#)

    static func isAssignment(_ word: String) -> Bool {
        assignment.firstMatch(in: word, range: NSRange(word.startIndex..., in: word)) != nil
    }

    static let captureForm = try! NSRegularExpression(
        pattern: #"^([A-Za-z_][A-Za-z0-9_]*)=\$\((homeroom [^()|]+) \| jq (-r )?\.([A-Za-z_][A-Za-z0-9_]*)\)$"#)

    /// `NAME=$(homeroom ... | jq .key)`: its parts.
    static func capture(_ column: String) -> (name: String, command: String, key: String, raw: Bool)? {
        let range = NSRange(column.startIndex..., in: column)
        guard let match = captureForm.firstMatch(in: column, range: range) else { return nil }
        func group(_ number: Int) -> String? { Range(match.range(at: number), in: column).map { String(column[$0]) } }
        guard let name = group(1), let command = group(2), let key = group(4) else { return nil }
        return (name, command, key, group(3) != nil)
    }

    /// `export ...`, `NAME=$(homeroom ... | jq .key)`, or `[A=x ...] homeroom <verb> ...`.
    static func isCommandStart(_ column: String) -> Bool {
        if capture(column) != nil { return true }
        let words = rawWords(column)
        if words.first == "export" { return true }
        let rest = words.drop(while: isAssignment)
        guard rest.first == "homeroom", rest.count >= 2 else { return false }
        let verb = rest[rest.startIndex + 1]
        return verb.range(of: #"^[a-z][a-z-]*$"#, options: .regularExpression) != nil
    }

    static func mentionsCommand(_ code: String) -> Bool {
        code.range(of: #"(^|[\s$>;&(`])homeroom [a-z][a-z-]+"#, options: .regularExpression) != nil
    }

    /// Shell words with their quotes kept.
    static func rawWords(_ text: String) -> [String] {
        var words: [String] = []
        var current = ""
        var quote: Character?
        for character in text {
            if let open = quote {
                if character == open { quote = nil }
                current.append(character)
            } else if character == "\"" || character == "'" {
                quote = character
                current.append(character)
            } else if character.isWhitespace {
                if !current.isEmpty { words.append(current); current = "" }
            } else {
                current.append(character)
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    static func isQuoted(_ word: String) -> Bool { word.contains("\"") || word.contains("'") }

    /// `a | b`: each alternative as a full command; a `b` without `homeroom` keeps a's
    /// `homeroom <verb>` and replaces the rest.
    static func alternatives(_ text: String) -> [String] {
        let words = rawWords(text)
        var groups: [[String]] = [[]]
        for word in words {
            if word == "|" { groups.append([]) } else { groups[groups.count - 1].append(word) }
        }
        guard groups.count > 1 else { return [text] }
        let first = groups[0]
        let prefix = Array(first.prefix { $0 != "homeroom" }) + Array(first.drop { $0 != "homeroom" }.prefix(2))
        return groups.map { group in
            (group.contains("homeroom") || group.first == "export" ? group : prefix + group).joined(separator: " ")
        }
    }

    /// `[x]` (without x, then with it; nested) and `x|y` in one word (each), every combination.
    static func expand(_ words: ArraySlice<String>) -> [[String]] {
        var slots: [[[String]]] = []
        var index = words.startIndex
        while index < words.endIndex {
            let word = words[index]
            if word.hasPrefix("[") && !isQuoted(word) {
                var depth = 0
                var end = index
                while end < words.endIndex {
                    depth += words[end].prefix { $0 == "[" }.count
                    depth -= String(words[end].reversed()).prefix { $0 == "]" }.count
                    if depth <= 0 { break }
                    end += 1
                }
                end = min(end, words.endIndex - 1)
                var inner = Array(words[index...end])
                inner[0].removeFirst()
                if inner[inner.count - 1].hasSuffix("]") { inner[inner.count - 1].removeLast() }
                inner = inner.filter { !$0.isEmpty }
                slots.append([[]] + expand(inner[...]))
                index = end + 1
            } else if word.contains("|") && !isQuoted(word) {
                slots.append(word.split(separator: "|").map { [String($0)] })
                index += 1
            } else {
                slots.append([[word]])
                index += 1
            }
        }
        return slots.reduce([[]]) { partial, slot in partial.flatMap { prefix in slot.map { prefix + $0 } } }
    }

    /// One shell word: quotes removed, `$NAME` and `${NAME}` expanded (not in single quotes).
    static func word(_ raw: String, _ variables: [String: String]) throws -> String {
        if raw.range(of: #"<[A-Za-z][^>]*>"#, options: .regularExpression) != nil && !isQuoted(raw) {
            throw CLIError("'\(raw)' is a placeholder: not runnable as written (write a concrete example, or list the line in notRun)")
        }
        var result = ""
        var quote: Character?
        var characters = Array(raw)[...]
        while let character = characters.popFirst() {
            if quote == "'" {
                if character == "'" { quote = nil } else { result.append(character) }
            } else if character == "'" && quote == nil {
                quote = "'"
            } else if character == "\"" {
                quote = quote == nil ? "\"" : nil
            } else if character == "$" {
                var name = ""
                let braced = characters.first == "{"
                if braced { characters.removeFirst() }
                while let next = characters.first, next.isLetter || next.isNumber || next == "_" { name.append(next); characters.removeFirst() }
                if braced, characters.first == "}" { characters.removeFirst() }
                guard let value = variables[name] else { throw CLIError("$\(name) is not set by the docs (nor by the test)") }
                result += value
            } else {
                result.append(character)
            }
        }
        return result
    }

    // MARK: - What one expansion does

    struct Step {
        var exports: [(String, String)]? = nil
        var environment: [String: String] = [:]
        var arguments: [String] = []
        var redirect: String?
        var background = false
        /// As a shell line (words with spaces or quotes quoted).
        var shown: String {
            func quoted(_ word: String) -> String {
                word.isEmpty || word.contains(where: { " \"'$\\|&;<>".contains($0) }) ? "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'" : word
            }
            return environment.sorted { $0.key < $1.key }.map { "\($0.key)=\(quoted($0.value)) " }.joined() + "homeroom "
                + arguments.map(quoted).joined(separator: " ") + (redirect.map { " > \(quoted($0))" } ?? "") + (background ? " &" : "")
        }
    }

    static func step(_ raw: [String], _ variables: [String: String]) throws -> Step {
        var step = Step()
        if raw.first == "export" {
            step.exports = try raw.dropFirst().map { item in
                guard isAssignment(item), let equals = item.firstIndex(of: "=") else { throw CLIError("export of '\(item)': only NAME=value") }
                return (String(item[..<equals]), try word(String(item[item.index(after: equals)...]), variables))
            }
            return step
        }
        var words = raw[...]
        while let first = words.first, isAssignment(first), let equals = first.firstIndex(of: "=") {
            step.environment[String(first[..<equals])] = try word(String(first[first.index(after: equals)...]), variables)
            words.removeFirst()
        }
        guard words.popFirst() == "homeroom" else { throw CLIError("not a homeroom command") }
        if words.last == "&" { step.background = true; words.removeLast() }
        if let arrow = words.firstIndex(of: ">") {
            guard arrow == words.endIndex - 2 else { throw CLIError("a redirect must end the line") }
            step.redirect = try word(words[arrow + 1], variables)
            words = words[..<arrow]
        }
        for item in words {
            if ["|", "&", "&&", ";", "<", ">>", "2>"].contains(item) { throw CLIError("'\(item)': shell syntax the test does not run") }
            step.arguments.append(try word(item, variables))
        }
        return step
    }

    /// How a command line runs, by kind.
    enum Kind {
        /// `homeroom node ... &`: the test starts the node itself (NodeProcess) with the doc's
        /// name, on free loopback ports; the doc's addresses then stand for the real ones.
        case node
        /// `homeroom join` is interactive: on a pseudo-terminal, type `help`, then `quit`.
        case join
        /// `homeroom roster --watch` is full-screen: on a pseudo-terminal, wait for the
        /// roster, then `q` (the doc: "q leaves").
        case watch
        /// `homeroom context ...` saves contexts: HOMEROOM_CONFIG_DIR is a temporary
        /// directory (never the developer's), and the saved file must be mode 600.
        case context
        case plain
    }

    static func kind(_ step: Step) throws -> Kind {
        let verb = step.arguments.first ?? ""
        if step.background {
            guard verb == "node" else { throw CLIError("only `homeroom node ... &` may run in the background") }
            return .node
        }
        switch verb {
        case "node": throw CLIError("a node in the foreground never ends: end the line with &")
        case "join": return .join
        case "roster" where step.arguments.contains("--watch") && !step.arguments.contains("--duration"): return .watch
        case "context": return .context
        default: return .plain
        }
    }

    /// Variables the docs may use that the test provides (the rest come from `export`).
    static let testVariables: Set<String> = ["TOK"]

    /// Every problem a line has before it runs (shared by both tests).
    static func problems(of command: DocCommand, exported: Set<String>) -> [String] {
        if notRun[command.text] != nil { return [] }
        let variables = Dictionary(uniqueKeysWithValues: (testVariables.union(exported)).map { ($0, "x") })
        var problems: [String] = []
        if command.variants.isEmpty { problems.append("no command to run") }
        if command.capture != nil, command.variants.contains(where: { !$0.contains("--json") }) {
            problems.append("a $(...) capture reads the JSON object of --json: add --json")
        }
        for raw in command.variants {
            do {
                let step = try step(raw, variables)
                if step.exports != nil { continue }
                _ = try kind(step)
                let adaptation = adaptations[command.text]
                if let target = step.redirect, target.hasPrefix("/") || target.contains(".."), adaptation?.redirectIntoWorkDirectory != true {
                    problems.append("writes to \(target), outside the working directory: adapt it (adaptations) or list it in notRun")
                }
                for value in step.arguments + Array(step.environment.values) {
                    for address in tcpAddresses(value) where !isLoopback(address) && adaptation?.nodeAddresses.contains(address) != true {
                        problems.append("names \(address), not loopback: a test may never contact it (adapt it or list it in notRun)")
                    }
                }
            } catch {
                problems.append("\(error)")
            }
        }
        return problems
    }

    static func tcpAddresses(_ text: String) -> [String] {
        let regex = try! NSRegularExpression(pattern: #"tcp://[^\s,]+"#)
        return regex.matches(in: text, range: NSRange(text.startIndex..., in: text)).compactMap { Range($0.range, in: text).map { String(text[$0]) } }
    }

    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("tcp://127.") || address.hasPrefix("tcp://localhost:") || address.hasPrefix("tcp://[::1]:")
    }

    static func exportedNames(_ commands: [DocCommand]) -> Set<String> {
        var names = Set<String>(commands.compactMap { $0.capture?.name })
        for command in commands { for raw in command.variants where raw.first == "export" {
            for item in raw.dropFirst() { if let equals = item.firstIndex(of: "=") { names.insert(String(item[..<equals])) } }
        } }
        return names
    }

    // MARK: - The tests

    /// Without running anything: every command line of the docs is one the test runs (or
    /// lists), and every entry of the lists still matches a line.
    @Test func everyCommandLineOfTheDocsIsRunOrListed() throws {
        let extraction = try Self.extract()
        for line in extraction.unrecognized {
            Issue.record("\(line)\n  mentions a homeroom command, but is not a command line the test can run (`homeroom ...`, `A=x homeroom ...`, `export ...`)")
        }
        for line in extraction.strayOutput {
            Issue.record("\(line)\n  a `#>` line (what a command prints) must follow its command line or that command's other `#>` lines")
        }
        let readme = extraction.commands.filter { $0.file == "README.md" }
        #expect(readme.count >= 20, "README.md's 'Using the CLI' has \(readme.count) command lines: was the section renamed?")
        #expect(readme.contains { $0.variants.contains { $0.contains("node") && $0.last == "&" } }, "the README no longer starts a node")
        #expect(extraction.commands.contains { $0.file == "docs/MESSAGING.md" } && extraction.commands.contains { $0.file == "docs/CUSTOMIZE.md" })
        let exported = Self.exportedNames(extraction.commands)
        for command in extraction.commands {
            for problem in Self.problems(of: command, exported: exported) { Issue.record("\(command)\n  \(problem)") }
        }
        let texts = Set(extraction.commands.map(\.text))
        for key in Array(Self.adaptations.keys) + Array(Self.notRun.keys) where !texts.contains(key) {
            Issue.record("'\(key)' is listed in ExecutableDocsTests but is no longer a command line of the docs: update the list")
        }
        // Every README command shows what it prints.
        for command in readme where command.expected.isEmpty && command.capture == nil && !command.redirects
            && !command.variants.allSatisfy({ $0.first == "export" }) && !Self.outputIsOptional(command.text) {
            Issue.record("\(command)\n  shows no output: add `#> ...` lines under it with what it prints (`<name>` for an id or a time)")
        }
        for entry in Self.outputOptional where !readme.contains(where: { entry.prefix ? $0.text.hasPrefix(entry.command) : $0.text == entry.command }) {
            Issue.record("'\(entry.command)' is in outputOptional but is no longer a README command line: update the list")
        }
        for command in extraction.commands {
            for line in command.expected where Self.outputPattern(line, [:]) == nil {
                Issue.record("\(command)\n  its `#> \(line)` line is not a pattern the test can read")
            }
        }
    }

    /// Every command line, verbatim and in order, against a real node: exit 0, or refused
    /// with the code its comment names.
    @Test func everyCommandLineOfTheDocsRunsAsDocumented() throws {
        guard CLI.binary != nil else { throw CLIError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)") }
        let started = Date()
        let extraction = try Self.extract()
        let fileManager = FileManager.default
        let work = fileManager.temporaryDirectory.appendingPathComponent("homeroom-docs-\(UInt32.random(in: 0...UInt32.max))")
        let configDirectory = work.appendingPathComponent(".config-homeroom")
        try fileManager.createDirectory(at: work, withIntermediateDirectories: true)
        var nodes: [NodeProcess] = []
        defer {
            for node in nodes { node.stop() }
            try? fileManager.removeItem(at: work)
        }

        // $TOK: a real join token (README: `homeroom token create`).
        let keys = work.appendingPathComponent(".keys").path
        _ = try CLI.run(["keys", "generate", "--out", keys], timeout: 30, directory: work)
        let token = try CLI.run(["token", "create", "--key", keys + "/token-signing.key", "--room", "*", "--user", "ada", "--role", "teacher"], timeout: 30, directory: work)
        try #require(token.status == 0, "token create: \(token.stderr)")
        var variables = ["TOK": token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)]
        var exported: [String: String] = [:]
        var addresses: [String: String] = [:]   // the doc's node addresses -> the real ones
        var captured = Set<String>()            // NAME=$(...) variables (not in the environment)
        var ran = 0
        let verbose = ProcessInfo.processInfo.environment["HOMEROOM_DOCS_VERBOSE"] != nil

        for command in extraction.commands {
            if Self.notRun[command.text] != nil { continue }
            let adaptation = Self.adaptations[command.text]
            // What the first test refuses is not run here either (an address off loopback, a redirect outside).
            var problems = Self.problems(of: command, exported: Set(exported.keys).union(captured).union(Self.exportedNames([command])))
                .map { "\(command.file):\(command.line): \(command.text)\n  not run: \($0)" }
            let runnable = problems.isEmpty
            for raw in command.variants where runnable {
                func fail(_ shown: String, _ what: String) {
                    problems.append("\(command.file):\(command.line): \(command.text)\n  ran: \(shown)\n  \(what)")
                }
                var step: Step
                let kind: Kind
                do {
                    step = try Self.step(raw, variables)
                    kind = step.exports == nil ? try Self.kind(step) : .plain
                } catch {
                    fail(raw.joined(separator: " "), "\(error)")
                    continue
                }
                if let exports = step.exports {
                    for (name, value) in exports {
                        let real = Self.substitute(value, addresses)
                        exported[name] = real
                        variables[name] = real
                    }
                    continue
                }
                if case .node = kind {
                    do {
                        let node = try Self.startNode(step, addresses: &addresses)
                        nodes.append(node)
                        // What it prints: the ready line on stdout, then its log on stderr.
                        let printed = [node.readyLine] + node.log.components(separatedBy: "\n")
                        if let problem = Self.mismatch(command.expected, printed, addresses) { fail(step.shown, problem) }
                    } catch {
                        fail(step.shown, "\(error)")
                    }
                    continue
                }
                guard let node = nodes.first else {
                    fail(step.shown, "no node: the docs must start one (`homeroom node ... &`) before this line")
                    continue
                }
                var map = addresses
                for address in adaptation?.nodeAddresses ?? [] { map[address] = node.listen }
                step.arguments = step.arguments.map { Self.substitute($0, map) } + (adaptation?.appended ?? [])
                var environment = exported
                for (name, value) in step.environment { environment[name] = Self.substitute(value, map) }
                let allowed = Set(nodes.flatMap { [$0.listen, $0.publish] })
                let contacted = (step.arguments + Array(environment.values)).flatMap(Self.tcpAddresses).filter { !allowed.contains($0) }
                if !contacted.isEmpty {
                    fail(step.shown, "names \(contacted.joined(separator: ", ")), not the test node: not run (a test contacts only its own loopback node)")
                    continue
                }
                if case .context = kind { environment["HOMEROOM_CONFIG_DIR"] = configDirectory.path }
                ran += 1
                let shown = step.shown
                let lineStarted = Date()
                defer {
                    if verbose { print("\(command.file):\(command.line): \(shown)  (\(String(format: "%.2f", Date().timeIntervalSince(lineStarted))) s)") }
                }
                let timeout = adaptation?.timeout ?? 30

                switch kind {
                case .join, .watch:
                    let terminal: TerminalSession
                    do {
                        terminal = try TerminalSession(step.arguments, environment: environment, directory: work)
                    } catch {
                        fail(shown, "\(error)")
                        continue
                    }
                    var stuck: String?
                    if case .join = kind {
                        if !terminal.waitFor("Type 'help'", timeout: timeout) { stuck = "no 'Type 'help'' greeting" } else {
                            terminal.send("help\n")
                            if !terminal.waitFor("Commands:", timeout: timeout) { stuck = "'help' listed no commands" } else { terminal.send("quit\n") }
                        }
                    } else {
                        if !terminal.waitFor("q quit", timeout: timeout) { stuck = "no live roster (its 'q quit' status line)" } else { terminal.send("q") }
                    }
                    let status = terminal.waitForExit(timeout: stuck == nil ? timeout : 1)
                    if let stuck {
                        fail(shown, "on a terminal: \(stuck), exit \(status.map(String.init) ?? "none (killed)"); it showed:\n\(terminal.plainTail)")
                    } else if status != 0 {
                        fail(shown, "on a terminal: exit \(status.map(String.init) ?? "none (killed after \(Int(timeout)) s)"); it showed:\n\(terminal.plainTail)")
                    } else if let problem = Self.mismatch(command.expected, Self.screenLines(terminal.shown), map, terminal: true) {
                        fail(shown, problem)
                    }
                case .plain, .context, .node:
                    let result: CLI.Result
                    do {
                        result = try CLI.run(step.arguments, environment: environment, timeout: timeout, directory: work)
                    } catch {
                        fail(shown, "\(error)")
                        continue
                    }
                    let outcome = "exit \(result.timedOut ? "none (killed after \(Int(timeout)) s)" : String(result.status))\n  stderr: \(result.stderr.isEmpty ? "(empty)" : result.stderr)"
                    // What a user sees: stdout (unless it goes to a file or into a variable), then stderr.
                    let printed = (step.redirect == nil && command.capture == nil ? Self.lines(result.stdout) : []) + Self.lines(result.stderr)
                    if let code = command.expectedCode {
                        if result.timedOut || result.status != 1 || !result.stderr.contains("[\(code)]") {
                            fail(shown, "the doc says it is refused [\(code)] (exit 1), but: \(outcome)")
                        } else if let problem = Self.mismatch(command.expected, printed, map) {
                            fail(shown, problem)
                        }
                        continue
                    }
                    guard !result.timedOut && result.status == 0 else {
                        fail(shown, outcome)
                        continue
                    }
                    if let problem = Self.mismatch(command.expected, printed, map) { fail(shown, problem) }
                    if command.file == "README.md" && step.redirect != nil && !result.stderr.isEmpty {
                        fail(shown, "its output goes to a file, so it must print nothing else, but it printed: \(result.stderr)")
                    }
                    if let capture = command.capture {
                        // As `jq .key` (`jq -r .key`) would print the key of the one object.
                        let object = (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any]
                        guard let value = object?[capture.key] else {
                            fail(shown, "$(... | jq .\(capture.key)): the output has no key '\(capture.key)': \(result.stdout)")
                            continue
                        }
                        let text: String
                        if let string = value as? String {
                            text = capture.raw ? string : String(decoding: try JSONSerialization.data(withJSONObject: string, options: .fragmentsAllowed), as: UTF8.self)
                        } else {
                            text = String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]), as: UTF8.self)
                        }
                        variables[capture.name] = text
                        captured.insert(capture.name)
                    }
                    if step.arguments.contains("--json") {
                        for line in result.stdout.split(separator: "\n") where (try? JSONSerialization.jsonObject(with: Data(line.utf8))) == nil {
                            fail(shown, "--json printed a line that is not JSON: \(line)")
                        }
                    }
                    if var target = step.redirect {
                        if adaptation?.redirectIntoWorkDirectory == true { target = (target as NSString).lastPathComponent }
                        let file = work.appendingPathComponent(target)
                        try? fileManager.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                        try Data(result.stdout.utf8).write(to: file)
                        if result.stdout.isEmpty { fail(shown, "printed nothing into \(target)") }
                        if adaptation?.bashSyntax == true, let bash = ["/bin/bash", "/usr/bin/bash"].first(where: fileManager.isExecutableFile) {
                            let check = try CLI.run(["-n", file.path], timeout: 30, directory: work, executable: bash)
                            if check.status != 0 { fail(shown, "bash -n refuses the script: \(check.stderr)") }
                        }
                    }
                    if case .context = kind {
                        let saved = configDirectory.appendingPathComponent("contexts.json")
                        let mode = (try? fileManager.attributesOfItem(atPath: saved.path))?[.posixPermissions] as? Int
                        if mode != 0o600 { fail(shown, "\(saved.lastPathComponent) is mode \(mode.map { String($0, radix: 8) } ?? "missing"), not 600 as documented") }
                        if step.arguments.dropFirst().first == "set", let name = step.arguments.dropFirst(2).first {
                            let json = (try? Data(contentsOf: saved)).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
                            let nodes = ((json?["contexts"] as? [String: Any])?[name] as? [String: Any])?["nodes"] as? [String]
                            if nodes != step.arguments.filter({ $0.hasPrefix("tcp://") }) {
                                fail(shown, "context \(name) was saved with nodes \(nodes ?? []), not the test node's address")
                            }
                        }
                    }
                }
            }
            for problem in problems { Issue.record("\(problem)") }
        }
        let seconds = Date().timeIntervalSince(started)
        print("ExecutableDocsTests: ran \(ran) command lines from \(Set(extraction.commands.map(\.file)).count) docs in \(String(format: "%.1f", seconds)) s")
        #expect(ran >= 40, "only \(ran) command lines ran")
    }

    // MARK: - What a command prints

    static func lines(_ text: String) -> [String] {
        text.isEmpty ? [] : text.replacingOccurrences(of: "\r\n", with: "\n").components(separatedBy: "\n")
    }

    /// A terminal's output as lines: a cursor move home or a clear starts a line, other
    /// escape sequences are dropped.
    static func screenLines(_ shown: String) -> [String] {
        var text = shown.replacingOccurrences(of: "\u{1B}\\[[0-9;]*[HJf]", with: "\n", options: .regularExpression)
        text = text.replacingOccurrences(of: "\u{1B}\\[[0-9;?]*[A-Za-z]", with: "", options: .regularExpression)
        return text.replacingOccurrences(of: "\r", with: "\n").components(separatedBy: "\n")
    }

    /// A `#>` line as a regular expression for a whole line (trimmed): runs of spaces match
    /// any run of spaces, `<name>` a word, `…` any text; the doc's addresses are the test's.
    static func outputPattern(_ line: String, _ addresses: [String: String]) -> NSRegularExpression? {
        let text = substitute(line, addresses).trimmingCharacters(in: .whitespaces)
        let token = try! NSRegularExpression(pattern: #"…|<[A-Za-z][A-Za-z0-9-]*>|\s+"#)
        var pattern = "^"
        var last = text.startIndex
        for match in token.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let range = Range(match.range, in: text) else { return nil }
            pattern += NSRegularExpression.escapedPattern(for: String(text[last..<range.lowerBound]))
            let found = text[range]
            pattern += found == "…" ? ".*" : found.hasPrefix("<") ? #"\S+"# : #"\s+"#
            last = range.upperBound
        }
        pattern += NSRegularExpression.escapedPattern(for: String(text[last...])) + "$"
        return try? NSRegularExpression(pattern: pattern)
    }

    /// nil when every `#>` line is a line of `printed`, in order; else what is wrong. On a
    /// terminal a line may also follow a prompt (`maths ada (teacher)> `).
    static func mismatch(_ expected: [String], _ printed: [String], _ addresses: [String: String], terminal: Bool = false) -> String? {
        var remaining = printed.map { $0.trimmingCharacters(in: .whitespaces) }[...]
        for line in expected {
            guard let regex = outputPattern(line, addresses) else { return "its `#> \(line)` line is not a pattern the test can read" }
            func matches(_ candidate: String) -> Bool {
                var candidates = [candidate]
                if terminal {
                    var rest = candidate[...]
                    while let prompt = rest.range(of: "> ") { rest = rest[prompt.upperBound...]; candidates.append(String(rest)) }
                }
                return candidates.contains { regex.firstMatch(in: $0, range: NSRange($0.startIndex..., in: $0)) != nil }
            }
            guard let index = remaining.firstIndex(where: matches) else {
                let shown = printed.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.suffix(40).joined(separator: "\n    ")
                return "the doc shows `#> \(line)`, but no line \(expected.count > 1 ? "after the ones before it " : "")printed that; it printed:\n    \(shown)"
            }
            remaining = remaining[(index + 1)...]
        }
        return nil
    }

    static func substitute(_ text: String, _ addresses: [String: String]) -> String {
        var text = text
        // Longest first, so tcp://h:7100 never rewrites part of tcp://h:71000.
        for (doc, real) in addresses.sorted(by: { $0.key.count > $1.key.count }) { text = text.replacingOccurrences(of: doc, with: real) }
        return text
    }

    /// The doc's `homeroom node --name n --listen a --publish b [--seed s] &`, on free loopback ports.
    static func startNode(_ step: Step, addresses: inout [String: String]) throws -> NodeProcess {
        var options: [String: String] = [:]
        var seeds: [String] = []
        var words = step.arguments.dropFirst()[...]
        while let flag = words.popFirst() {
            guard ["--name", "--listen", "--publish", "--seed"].contains(flag), let value = words.popFirst() else {
                throw CLIError("'\(flag)': the test starts the doc's node with --name, --listen, --publish and --seed only; teach startNode this option")
            }
            if flag == "--seed" {
                // A seed is an earlier node of the doc: its real address.
                guard let real = addresses[value] else { throw CLIError("--seed \(value) is no node the doc started before this line") }
                seeds.append(real)
            } else {
                options[flag] = value
            }
        }
        guard let name = options["--name"], let listen = options["--listen"], let publish = options["--publish"] else {
            throw CLIError("a node line needs --name, --listen and --publish")
        }
        for address in [listen, publish] where !isLoopback(address) { throw CLIError("\(address) is not a loopback address") }
        let node = try NodeProcess(name: name, seeds: seeds)
        addresses[listen] = node.listen
        addresses[publish] = node.publish
        return node
    }
}
