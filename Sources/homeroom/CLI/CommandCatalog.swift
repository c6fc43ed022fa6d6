/// Every command of the CLI with its help text: the one source from which `--help`,
/// the completion scripts (bash, zsh, fish) and docs/CLI.md are made. A command's
/// options are the lines of its help's option sections; its parser is checked
/// against them (`ArgumentReader`, `HOMEROOM_CHECK_USAGE`), so help, completion and
/// docs cannot name a flag the command does not take, or miss one it does.
enum CommandCatalog {
    struct Command {
        /// The subcommand, e.g. "roster" or "stage".
        var name: String
        /// Its whole `--help` text.
        var usage: String
        /// Words that may follow it (its actions), for completion.
        var words: [String]

        /// The OVERVIEW paragraph, on one line.
        var summary: String {
            let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
            guard let start = lines.firstIndex(where: { $0.hasPrefix("OVERVIEW: ") }) else { return "" }
            let paragraph = [lines[start].dropFirst("OVERVIEW: ".count)] + lines[(start + 1)...].prefix { !$0.isEmpty }
            return paragraph.joined(separator: " ")
        }

        /// Its options, --help aside (every command has it; the scripts add it once).
        var options: [Option] { CommandCatalog.options(in: usage).filter { $0.name != "--help" } }
    }

    /// One option as a help text documents it.
    struct Option: Hashable {
        enum Kind: Hashable {
            case flag
            case value
            case file
            case directory
            case choice([String])
        }

        var name: String
        var placeholder: String?
        var help: String
        /// The section it is listed in ("OPTIONS", or "FAULT HOOKS" for the node's test hooks).
        var section: String

        var kind: Kind {
            guard let placeholder else { return .flag }
            if let choices = CommandCatalog.choices[name] ?? CommandCatalog.choices["<\(placeholder)>"] { return .choice(choices) }
            switch placeholder {
            case "file", "path": return .file
            case "dir": return .directory
            default: return .value
            }
        }
    }

    static let roles = ["teacher", "assistant", "student", "observer"]

    /// Values an option takes, by option name or by placeholder.
    static let choices: [String: [String]] = [
        "<role>": roles,
        "<level>": ["trace", "debug", "info", "notice", "warning", "error"],
        "--log-format": ["text", "json"],
        "--sync": ["normal", "full"],
        "--transport": ["tcp", "ipc"],
        "--test-fault": ["lose-acknowledged-writes"],
    ]

    static var commands: [Command] {
        [
            Command(name: "demo", usage: DemoCommand.usage, words: []),
            Command(name: "join", usage: JoinCommand.usage, words: []),
            Command(name: "roster", usage: RosterCommand.usage, words: []),
            Command(name: "web", usage: WebCommand.usage, words: []),
            Command(name: "rooms", usage: ClusterCommand.roomsUsage, words: []),
            Command(name: "cluster", usage: ClusterCommand.clusterUsage, words: ["status", "check"]),
            Command(name: "where-now", usage: WhereNowCommand.usage, words: []),
            Command(name: "context", usage: ContextCommand.usage, words: ["set", "use", "list", "delete"]),
            Command(name: "node", usage: NodeCommand.usage, words: ["drain"]),
            Command(name: "keys", usage: KeysCommand.usage, words: ["generate"]),
            Command(name: "token", usage: TokenCommand.usage, words: ["create"]),
            Command(name: "simulate", usage: SimulateCommand.usage, words: []),
            Command(name: "verify", usage: VerifyCommand.usage, words: []),
            Command(name: "theme", usage: ThemeCommand.usage, words: ["print", "check"]),
            Command(name: "completion", usage: CompletionCommand.usage, words: ["bash", "zsh", "fish"]),
        ] + Action.verbs.map { Command(name: $0, usage: ActionCommand.usage($0), words: actionWords[$0] ?? []) }
    }

    static let actionWords: [String: [String]] = [
        "stage": ["add", "remove", "clear", "invite"], "invitation": ["accept", "decline"], "board": ["grant", "revoke"], "camera": ["on", "off", "allow", "deny", "mute", "unmute"],
        "mic": ["on", "off", "allow", "deny", "mute", "unmute"], "hand": ["up", "down", "on", "off"], "class": ["start", "end"],
        "room": ["name", "type", "stage-limit", "hand-limit"], "prop": ["room", "me", "get", "set", "unset"],
        "history": ["limit", "clear"], "presence": ["set", "unset"], "mute": ["all"], "unmute": ["all"],
    ]

    static func command(_ name: String) -> Command? { commands.first { $0.name == name } }

    /// The options a help text lists: lines of its option sections that start with
    /// `--name` (or `-h, --help`), a `<placeholder>` for a value, then the help.
    static func options(in usage: String) -> [Option] {
        var section = ""
        var found: [Option] = []
        for line in usage.split(separator: "\n", omittingEmptySubsequences: false) {
            if let first = line.first, first != " ", line.hasSuffix(":") {
                section = String(line.dropLast())
                continue
            }
            guard section.hasSuffix("OPTIONS") || section.hasPrefix("FAULT HOOKS"), line.hasPrefix("  ") else { continue }
            var text = Substring(line.drop { $0 == " " })
            if text.hasPrefix("-h, ") { text = text.dropFirst(4) }
            guard text.hasPrefix("--") else { continue }
            let name = String(text.prefix { !$0.isWhitespace })
            var rest = text.dropFirst(name.count).drop { $0 == " " }
            var placeholder: String?
            if rest.hasPrefix("<"), let close = rest.firstIndex(of: ">") {
                placeholder = String(rest[rest.index(after: rest.startIndex)..<close])
                rest = rest[rest.index(after: close)...].drop { $0 == " " }
            }
            // The help without the environment variable column.
            var help = String(rest)
            if let open = help.firstRange(of: "  (HOMEROOM_") { help = String(help[..<open.lowerBound]) }
            while help.last == " " { help.removeLast() }
            found.append(Option(name: name, placeholder: placeholder, help: help, section: section.hasPrefix("FAULT HOOKS") ? "FAULT HOOKS" : section))
        }
        return found
    }

    /// docs/CLI.md: every command's help, as `homeroom <command> --help` prints it.
    static var reference: String {
        var text = """
            # Command reference

            Generated by `homeroom help --reference` from the commands' own help texts
            (the same texts give `--help` and the completion scripts); do not edit by hand.
            A test checks that this file, the scripts in Deploy/completions and every
            command's parser agree.

            | Command | What it does |
            |---|---|

            """
        for command in commands { text += "| [`\(command.name)`](#homeroom-\(command.name)) | \(command.summary) |\n" }
        text += "\n## homeroom\n\n```\n\(Homeroom.usage)\n```\n"
        for command in commands {
            text += "\n## homeroom \(command.name)\n\n```\n\(command.usage)\n```\n"
        }
        return text
    }
}
