import Foundation
import Testing

/// One source of truth for commands and flags: every command's parser reads exactly the
/// options its help lists, every one of them completes in bash, zsh and fish, and
/// docs/CLI.md is the help of every command.
@Suite struct CommandCatalogTests {
    /// Arguments that take each command as far as reading all its options (never to a
    /// node: HOMEROOM_CHECK_USAGE stops it there). Some commands read some options
    /// only on some paths (context list reads --json); their runs are taken together.
    static let unreachable = "tcp://127.0.0.1:1"
    static let runs: [String: [[String]]] = [
        "demo": [["demo"]],
        "join": [["join", "--room", "r", "--node", unreachable]],
        "roster": [["roster", "--room", "r", "--node", unreachable]],
        "rooms": [["rooms", "--node", unreachable]],
        "cluster": [["cluster", "--node", unreachable], ["cluster", "status", "--node", unreachable]],
        "where-now": [["where-now", "--user", "u", "--node", unreachable]],
        "context": [["context", "set", "x", "--node", unreachable], ["context", "list"], ["context", "use", "x"], ["context", "delete", "x"]],
        "node": [["node", "--name", "n", "--listen", unreachable, "--publish", "tcp://127.0.0.1:2"], ["node", "drain", "--http", "http://127.0.0.1:1"]],
        "keys": [["keys", "generate"]],
        "token": [["token", "create", "--key", "k", "--room", "r", "--user", "u", "--role", "student"]],
        "simulate": [["simulate"]],
        "theme": [["theme", "print"], ["theme", "check", "t.json"]],
        "completion": [["completion", "bash"]],
    ]

    /// The commands the binary documents, from its reference (`## homeroom <name>`).
    static func commands() throws -> [String] {
        let reference = try CLI.run(["help", "--reference"])
        #expect(reference.status == 0, "\(reference.stderr)")
        return reference.stdout.split(separator: "\n").compactMap { line in
            line.hasPrefix("## homeroom ") ? String(line.dropFirst("## homeroom ".count)) : nil
        }
    }

    struct Check: Decodable {
        struct Lists: Decodable {
            var documented: [String]
            var asked: [String]
        }
        var usage_check: Lists
    }

    /// Per command: the options its help lists, checked against what its parser reads.
    static func documentedOptions() throws -> [String: [String]] {
        var documented: [String: [String]] = [:]
        for command in try commands() {
            let invocations = runs[command] ?? [[command, "--room", "r", "--node", unreachable]]
            var asked = Set<String>()
            for arguments in invocations {
                let result = try CLI.run(arguments, environment: ["HOMEROOM_CHECK_USAGE": "1"])
                let check = try? JSONDecoder().decode(Check.self, from: Data(result.stdout.utf8))
                guard result.status == 0, let check else {
                    Issue.record("homeroom \(arguments.joined(separator: " ")) did not reach its option check: exit \(result.status) \(result.stdout) \(result.stderr)")
                    continue
                }
                let undocumented = Set(check.usage_check.asked).subtracting(check.usage_check.documented)
                #expect(undocumented.isEmpty, "homeroom \(command) reads \(undocumented.sorted()) but its --help does not list them")
                asked.formUnion(check.usage_check.asked)
                documented[command] = check.usage_check.documented
            }
            let unread = Set(documented[command] ?? []).subtracting(asked)
            #expect(unread.isEmpty, "homeroom \(command) --help lists \(unread.sorted()) but the command never reads them")
        }
        return documented
    }

    @Test func everyParserReadsExactlyTheOptionsItsHelpLists() throws {
        let documented = try Self.documentedOptions()
        #expect(documented.count >= 30, "\(documented.keys.sorted())")
        #expect(documented["node"]?.contains("--sync-bytes-per-second") == true)
        #expect(documented["reward"]?.contains("--amount") == true && documented["stage"]?.contains("--amount") == false)
    }

    @Test func aCommandRefusesAnotherCommandsOption() throws {
        let result = try CLI.run(["stage", "add", "bob", "--amount", "3", "--room", "r", "--node", Self.unreachable])
        #expect(result.status == 64 && result.stderr.contains("unknown option '--amount'"), "\(result.stderr)")
    }

    @Test func docsCLIIsTheHelpOfEveryCommand() throws {
        let reference = try CLI.run(["help", "--reference"]).stdout
        let path = FileManager.default.currentDirectoryPath + "/docs/CLI.md"
        let checkedIn = try String(contentsOfFile: path, encoding: .utf8)
        #expect(checkedIn == reference, "docs/CLI.md is stale: regenerate with `homeroom help --reference > docs/CLI.md`")
        for command in try Self.commands() {
            let help = try CLI.run([command, "--help"])
            #expect(help.status == 0 && reference.contains("## homeroom \(command)\n\n```\n\(help.stdout)```"), "homeroom \(command) --help is not in docs/CLI.md")
        }
    }

    /// Runs a shell with `arguments` (killed after 60 s) and returns what it printed.
    static func shell(_ path: String, _ arguments: [String]) throws -> String {
        let result = try CLI.run(arguments, timeout: 60, executable: path)
        #expect(!result.timedOut && result.status == 0 && result.stderr.isEmpty, "\(path) \(arguments): \(result.stderr)")
        return result.stdout
    }

    @Test func everyOptionOfEveryCommandCompletesInBashZshAndFish() throws {
        let documented = try Self.documentedOptions()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hr-catalog-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for shell in ["bash", "zsh", "fish"] {
            try Data(try CLI.run(["completion", shell]).stdout.utf8).write(to: directory.appendingPathComponent("homeroom.\(shell)"))
        }
        // bash: what `homeroom <command> --<Tab>` offers, for every command in one shell.
        var bashScript = "source \(directory.path)/homeroom.bash\n"
        for command in documented.keys.sorted() {
            bashScript += "COMP_WORDS=(homeroom \(command) --); COMP_CWORD=2; COMPREPLY=(); _homeroom; echo \"\(command): ${COMPREPLY[*]}\"\n"
        }
        let bash = try Self.shell("/bin/bash", ["-c", bashScript])
        // fish: the same through its own completion engine.
        let fishPath = try #require(["/usr/bin/fish", "/bin/fish"].first { FileManager.default.isExecutableFile(atPath: $0) }, "fish is missing: run Deploy/bootstrap.sh")
        var fishScript = "source \(directory.path)/homeroom.fish\n"
        for command in documented.keys.sorted() { fishScript += "echo '== \(command)'; complete -C 'homeroom \(command) --'\n" }
        let fish = try Self.shell(fishPath, ["--no-config", "-c", fishScript])
        var fishOffers: [String: Set<String>] = [:]
        var current = ""
        for line in fish.split(separator: "\n") {
            if line.hasPrefix("== ") { current = String(line.dropFirst(3)); continue }
            if let word = line.split(separator: "\t").first { fishOffers[current, default: []].insert(String(word)) }
        }
        // zsh: the script parses, and each command's _arguments names each option.
        let zshPath = try #require(["/usr/bin/zsh", "/bin/zsh"].first { FileManager.default.isExecutableFile(atPath: $0) }, "zsh is missing: run Deploy/bootstrap.sh")
        _ = try Self.shell(zshPath, ["-n", directory.path + "/homeroom.zsh"])
        let zsh = try String(contentsOf: directory.appendingPathComponent("homeroom.zsh"), encoding: .utf8)
        let zshCases = Dictionary(zsh.split(separator: "\n").compactMap { line -> (String, String)? in
            let text = line.drop { $0 == " " }
            guard let close = text.firstIndex(of: ")"), text[close...].hasPrefix(") _arguments") else { return nil }
            return (String(text[..<close]), String(text))
        }, uniquingKeysWith: { first, _ in first })
        for (command, options) in documented {
            let bashLine = bash.split(separator: "\n").first { $0.hasPrefix("\(command): ") }.map { Set($0.split(separator: " ").dropFirst().map(String.init)) } ?? []
            for option in options {
                #expect(bashLine.contains(option), "bash does not complete homeroom \(command) \(option)")
                #expect(fishOffers[command]?.contains(option) == true, "fish does not complete homeroom \(command) \(option)")
                #expect(zshCases[command]?.contains("\(option)[") == true, "zsh does not complete homeroom \(command) \(option)")
            }
            // Nothing from another command: bash offers this command's options and --help only.
            #expect(bashLine.subtracting(options + ["--help"]).isEmpty, "bash offers \(bashLine.subtracting(options + ["--help"]).sorted()) to \(command)")
        }
    }
}
