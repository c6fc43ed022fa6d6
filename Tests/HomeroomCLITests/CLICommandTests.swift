import Foundation
import Testing

/// Help, usage errors and the offline subcommands (theme, completion): no node needed.
@Suite struct CLICommandTests {
    @Test(arguments: ["demo", "join", "roster", "rooms", "cluster", "context", "theme", "completion", "stage", "board", "camera", "mic", "mute-all", "reward", "kick",
                      "ban", "hand", "class", "schedule", "room", "prop", "name", "send", "whisper", "history", "presence",
                      "mute", "unmute"])
    func everySubcommandHasHelp(subcommand: String) throws {
        let result = try CLI.run([subcommand, "--help"])
        #expect(result.status == 0)
        for section in ["OVERVIEW:", "USAGE:", "OPTIONS:"] { #expect(result.stdout.contains(section), "\(subcommand) help lacks \(section)") }
        #expect(result.stderr.isEmpty)
    }

    @Test func topLevelHelpListsTheNewSubcommands() throws {
        let result = try CLI.run(["--help"])
        for name in ["demo", "join", "roster", "theme", "completion", "stage", "reward", "hand", "send", "whisper", "history", "presence"] {
            #expect(result.stdout.contains("\n  \(name)"), "no \(name) in the help")
        }
    }

    @Test(arguments: [
        (["stage", "add", "bob"], "missing --room"),
        (["stage", "add", "bob", "--room", "r"], "missing --node"),
        (["stage", "frob", "bob", "--room", "r", "--node", "tcp://127.0.0.1:9"], "use: stage add"),
        (["reward", "bob", "--amount", "0", "--room", "r", "--node", "tcp://127.0.0.1:9"], "'--amount' must be a whole number from 1 to 1000"),
        (["hand", "up", "--as", "king", "--room", "r", "--node", "tcp://127.0.0.1:9"], "unknown role 'king'"),
        (["kick", "--room", "r", "--node", "tcp://127.0.0.1:9"], "name a user"),
        (["stage", "add", "bob", "--room", "bad room", "--node", "tcp://127.0.0.1:9"], "may use only letters"),
        (["stage", "add", "bob", "--room", "r", "--node", "http://x"], "must start with tcp://"),
        (["room", "type", "arena", "--room", "r", "--node", "tcp://127.0.0.1:9"], "unknown room type 'arena'"),
        (["roster", "--room", "r", "--node", "tcp://127.0.0.1:9", "--duration", "3"], "--duration goes with --watch"),
        (["roster", "--room", "r", "--node", "tcp://127.0.0.1:9", "--frobnicate"], "unknown argument '--frobnicate'"),
        (["roster", "--room", "r", "--node", "tcp://127.0.0.1:9", "--wach"], "unknown argument '--wach': did you mean '--watch'?"),
        (["join", "--room", "r", "--node", "tcp://127.0.0.1:9", "--type", "stadium"], "unknown room type 'stadium'"),
        (["demo", "--students", "1"], "'--students' must be a whole number from 2 to 40"),
        (["demo", "--transport", "udp"], "unknown transport 'udp'"),
        (["theme"], "say what to do"),
        (["theme", "paint"], "unknown theme subcommand 'paint'"),
        (["completion", "tcsh"], "unknown shell 'tcsh'"),
    ])
    func badArgumentsAreUsageErrors(arguments: [String], message: String) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.hasPrefix("Error: "), "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains("USAGE:"))
        #expect(result.stdout.isEmpty)
    }

    /// Your own hand, camera, microphone, name or presence without --user (or a token):
    /// refused before anything is sent, rather than joining a made-up user "student".
    /// The error is the exact fix: the same command with --user (issue 42, item 3).
    @Test func aSelfActionWithoutAUserIsAUsageError() throws {
        for words in [["camera", "on"], ["mic", "off"], ["hand", "up"], ["presence", "set", "mood", "ready"]] {
            let result = try CLI.run(words + ["--room", "r", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"])
            #expect(result.status == 64 && result.stderr.contains("--user"), "\(words): \(result.status) \(result.stderr)")
        }
        let camera = try CLI.run(["camera", "on", "--room", "r", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"])
        #expect(camera.stderr.hasPrefix("Error: camera on acts as a user, and no one was named: add --user <id>, as in: "
            + "homeroom camera on --user bob (or --token <token>, or HOMEROOM_TOKEN); without either, a one-shot acts as "
            + "@operator, who has no camera\n"), "\(camera.stderr)")
        let name = try CLI.run(["name", "Mr Lee", "--room", "r", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"])
        #expect(name.status == 64 && name.stderr.contains("as in: homeroom name 'Mr Lee' --user bob "), "\(name.stderr)")
        // "me" is a user too: without one it was a made-up "teacher" joining and acting on itself.
        for words in [["stage", "add", "me"], ["reward", "me"], ["prop", "me", "set", "seat", "3"]] {
            let result = try CLI.run(words + ["--room", "r", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"])
            #expect(result.status == 64, "\(words): \(result.status) \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: 'me' names a user, and no one was named: add --user <id>, as in: homeroom "
                + words.joined(separator: " ") + " --user bob "), "\(words): \(result.stderr)")
        }
        // --hold goes with presence set only.
        let hold = try CLI.run(["presence", "unset", "mood", "--hold", "5", "--user", "bob", "--room", "r", "--node", "tcp://127.0.0.1:9"])
        #expect(hold.status == 64 && hold.stderr.contains("--hold goes with presence set"), "\(hold.stderr)")
    }

    @Test func noNodeAnsweringIsAFailureNotAUsageError() throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let result = try CLI.run(["hand", "up", "--user", "bob", "--room", "r", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot join room r as bob (student)"), "\(result.stderr)")
        #expect(result.stderr.contains("[unavailable]"))
        #expect(!result.stderr.contains("USAGE:"))
    }

    @Test func aPublishAddressGivenAsTheNodeIsNamedForWhatItIs() throws {
        let node = try NodeChild(name: "cli-wrong-port")
        defer { node.stop() }
        let result = try CLI.run(["roster", "--room", "r", "--node", node.publish, "--timeout-ms", "500"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("\(node.publish)") && result.stderr.contains("a PUB socket (a node's --publish address?)"), "\(result.stderr)")
        // The listen address itself works.
        #expect(try CLI.run(["roster", "--room", "r", "--node", node.listen]).status == 0)
    }

    @Test func clusterAndRoomsListWhatANodeKnows() throws {
        let first = try NodeChild(name: "cli-list-1", extra: ["--http", "http://127.0.0.1:0"])
        let second = try NodeChild(name: "cli-list-2", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        #expect(try CLI.run(["hand", "up", "--user", "carol", "--room", "list-me", "--node", first.listen]).status == 0)
        #expect(try CLI.run(["stage", "add", "carol", "--room", "list-me", "--node", first.listen]).status == 0)
        // dave stays joined (a piped join whose input stays open) while the rooms are listed.
        let dave = Process()
        dave.executableURL = URL(fileURLWithPath: try #require(CLI.binary))
        dave.arguments = ["join", "--user", "dave", "--as", "student", "--room", "list-me", "--node", first.listen, "--timeout-ms", "5000"]
        var environment = ProcessInfo.processInfo.environment
        environment["HOMEROOM_CONFIG_DIR"] = CLI.noContexts
        dave.environment = environment
        let input = Pipe()
        dave.standardInput = input
        dave.standardOutput = FileHandle.nullDevice
        dave.standardError = FileHandle.nullDevice
        try dave.run()
        defer { if dave.isRunning { kill(dave.processIdentifier, SIGKILL) }; dave.waitUntilExit() }
        // The second node learns the first and the room within a few heartbeats, and
        // catches up with its writes (nothing behind).
        var members: [[String: Any]] = []
        var listing: [String: Any] = [:]
        for _ in 0..<100 {
            let listed = try CLI.run(["cluster", "status", "--json", "--node", first.listen])
            #expect(listed.status == 0, "\(listed.stderr)")
            listing = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [String: Any] ?? [:]
            members = listing["members"] as? [[String: Any]] ?? []
            let peer = members.first { $0["address"] as? String == second.listen }
            if members.count == 2, members.allSatisfy({ ($0["state"] as? String ?? "").hasPrefix("alive") }),
               peer?["behind"] as? Int == 0, peer?["rooms"] as? Int == 1 { break }
            usleep(100_000)
        }
        #expect(Set(members.compactMap { $0["address"] as? String }) == [first.listen, second.listen], "\(members)")
        let peer = try #require(members.first { $0["address"] as? String == second.listen })
        #expect(peer["behind"] as? Int == 0 && peer["rooms"] as? Int == 1, "\(peer)")
        #expect((peer["heard_ms_ago"] as? Int).map { $0 < 10_000 } == true, "\(peer)")
        #expect(listing["health"] as? String == "ok", "\(listing)")
        let table = try CLI.run(["cluster", "--node", second.listen])
        #expect(table.stdout.contains("alive (answered)") && table.stdout.contains(first.listen) && table.stdout.contains("health ok"), "\(table.stdout)")
        #expect(table.stdout.contains("Behind") && table.stdout.contains(" s ago"), "\(table.stdout)")
        #expect(try CLI.run(["cluster", "members", "--node", second.listen]).status == 64)
        // Both nodes list the room with who is online (dave) and on stage (carol).
        var rooms: [[String: Any]] = []
        for _ in 0..<100 {
            let listed = try CLI.run(["rooms", "--json", "--node", second.listen]).stdout
            rooms = try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]] ?? []
            if rooms.first?["online"] as? Int == 1 { break }
            usleep(100_000)
        }
        let room = try #require(rooms.first { $0["room"] as? String == "list-me" }, "\(rooms)")
        #expect(room["online"] as? Int == 1 && room["stage"] as? [String] == ["carol"], "\(room)")
        let text = try CLI.run(["rooms", "--node", first.listen]).stdout
        #expect(text.contains("Online") && text.contains("list-me") && text.contains("carol"), "\(text)")
        // Operators read the same on the HTTP address.
        // (A listing is up to a second old: read until it shows dave.)
        var http = ""
        for _ in 0..<100 {
            http = first.get("/rooms")?.body ?? ""
            if http.contains("\"online\":1") { break }
            usleep(100_000)
        }
        #expect(http.contains("\"room\":\"list-me\"") && http.contains("\"online\":1") && http.contains("\"stage\":[\"carol\"]"), "\(http)")
        #expect(first.get("/cluster")?.body.contains("\"state\":\"self\"") == true)
        #expect(first.get("/cluster")?.body.contains("\"behind\":") == true)
    }

    @Test func aNodeThatRequiresTokensListsItsRoomsToNoClient() throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-list-keys-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: keys) }
        #expect(try CLI.run(["keys", "generate", "--out", keys]).status == 0)
        let node = try NodeChild(name: "cli-list-closed", extra: ["--token-key", keys + "/token-signing.pub", "--cluster-key", keys + "/cluster.key"])
        defer { node.stop() }
        let rooms = try CLI.run(["rooms", "--node", node.listen])
        #expect(rooms.status == 1 && rooms.stderr.contains("lists its rooms to no client"), "\(rooms.stderr)")
        let cluster = try CLI.run(["cluster", "--node", node.listen])
        #expect(cluster.status == 0 && cluster.stdout.contains("add --token"), "\(cluster.stdout)")
    }

    @Test func aSavedContextGivesTheNodeRoomAndTokenSoCommandsNeedNoFlags() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-contexts-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let here = ["HOMEROOM_CONFIG_DIR": directory + "/config"]
        let node = try NodeChild(name: "cli-context")
        defer { node.stop() }
        let set = try CLI.run(["context", "set", "class", "--node", node.listen, "--room", "ctx-1"], environment: here)
        #expect(set.status == 0 && set.stdout.contains("context class saved (current)"), "\(set.stdout)\(set.stderr)")
        // The file holds tokens: private.
        var info = stat()
        #expect(stat(directory + "/config/contexts.json", &info) == 0 && info.st_mode & 0o777 == 0o600)
        // No --node, no --room: both from the context.
        #expect(try CLI.run(["hand", "up", "--user", "carol"], environment: here).status == 0)
        let roster = try CLI.run(["roster", "--json"], environment: here)
        #expect(roster.status == 0 && roster.stdout.contains("ctx-1") && roster.stdout.contains("carol"), "\(roster.stdout)\(roster.stderr)")
        // Flags still win over the context.
        #expect(try CLI.run(["roster", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "200"], environment: here).status == 1)
        // Several contexts; `use` picks one, unknown names are refused with the saved ones.
        #expect(try CLI.run(["context", "set", "elsewhere", "--node", "tcp://127.0.0.1:9", "--room", "ctx-1"], environment: here).status == 0)
        let list = try CLI.run(["context", "list"], environment: here)
        #expect(list.stdout.contains("* class") && list.stdout.contains("  elsewhere"), "\(list.stdout)")
        let unknown = try CLI.run(["context", "use", "nope"], environment: here)
        #expect(unknown.status == 1 && unknown.stderr.contains("saved ones are class, elsewhere"), "\(unknown.stderr)")
        #expect(try CLI.run(["context", "use", "elsewhere"], environment: here).status == 0)
        #expect(try CLI.run(["roster", "--timeout-ms", "200"], environment: here).status == 1, "the current context points at nothing")
        // HOMEROOM_CONTEXT picks one for a single command.
        #expect(try CLI.run(["roster"], environment: here.merging(["HOMEROOM_CONTEXT": "class"]) { $1 }).status == 0)
    }

    @Test func themePrintIsValidJSONThatCheckAccepts() throws {
        let printed = try CLI.run(["theme", "print"])
        #expect(printed.status == 0)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(printed.stdout.utf8)) as? [String: Any])
        #expect(Set(json.keys) == ["stateBar", "roster", "stage", "hands", "parties", "counts", "status"])
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("theme-\(UInt32.random(in: 0...UInt32.max)).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(printed.stdout.utf8).write(to: file)
        let checked = try CLI.run(["theme", "check", file.path])
        #expect(checked.status == 0)
        #expect(checked.stdout == printed.stdout)
    }

    @Test func aBadThemeFileSaysWhere() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("theme-\(UInt32.random(in: 0...UInt32.max)).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"roster": {"camera": {"live": {"color": "plaid"}}}}"#.utf8).write(to: file)
        let result = try CLI.run(["theme", "check", file.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("roster.camera.live.color"))
        let missing = try CLI.run(["theme", "check", "/nonexistent/theme.json"])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot read theme file /nonexistent/theme.json"))
    }

    /// The checked-in completion scripts are what the binary prints.
    @Test(arguments: [("bash", "homeroom.bash"), ("zsh", "_homeroom"), ("fish", "homeroom.fish")])
    func completionScriptsMatchDeploy(shell: String, file: String) throws {
        let result = try CLI.run(["completion", shell])
        #expect(result.status == 0)
        #expect(result.stdout.contains("homeroom"))
        let path = FileManager.default.currentDirectoryPath + "/Deploy/completions/" + file
        let checkedIn = try String(contentsOfFile: path, encoding: .utf8)
        #expect(checkedIn == result.stdout, "Deploy/completions/\(file) is stale: regenerate with `homeroom completion \(shell) > \(path)`")
    }

    @Test func bashCompletionParsesAndCompletes() throws {
        guard FileManager.default.isExecutableFile(atPath: "/bin/bash") else { return }
        let script = try CLI.run(["completion", "bash"]).stdout
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hr-completion-\(UInt32.random(in: 0...UInt32.max)).bash")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(script.utf8).write(to: file)
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/bin/bash")
        probe.arguments = ["-c", "source \(file.path); COMP_WORDS=(homeroom sta); COMP_CWORD=1; _homeroom; echo \"${COMPREPLY[*]}\"; "
                           + "COMP_WORDS=(homeroom stage ''); COMP_CWORD=2; _homeroom; echo \"${COMPREPLY[*]}\""]
        let out = Pipe()
        probe.standardOutput = out
        try probe.run()
        probe.waitUntilExit()
        let lines = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        #expect(lines.first == "stage")
        #expect(lines.last == "add remove clear invite")
        // Each subcommand's options complete (a second case: bash runs only the first matching branch).
        let options = Process()
        options.executableURL = URL(fileURLWithPath: "/bin/bash")
        options.arguments = ["-c", "source \(file.path); COMP_WORDS=(homeroom history --l); COMP_CWORD=2; _homeroom; echo \"${COMPREPLY[*]}\""]
        let optionsOut = Pipe()
        options.standardOutput = optionsOut
        try options.run()
        options.waitUntilExit()
        let historyOptions = String(decoding: optionsOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(historyOptions.contains("--limit"), "history's own option: \(historyOptions)")
    }

    /// fish (installed by Deploy/bootstrap.sh) parses the script and completes from it.
    @Test func fishCompletionParsesAndCompletes() throws {
        let fish = ["/usr/bin/fish", "/bin/fish"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(fish, "fish is missing: run Deploy/bootstrap.sh")
        let script = try CLI.run(["completion", "fish"]).stdout
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hr-completion-\(UInt32.random(in: 0...UInt32.max)).fish")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(script.utf8).write(to: file)
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: path)
        probe.arguments = ["--no-config", "-c", "source \(file.path); complete -C 'homeroom sta'; complete -C 'homeroom context '; complete -C 'homeroom roster --as '"]
        let out = Pipe(), errors = Pipe()
        probe.standardOutput = out
        probe.standardError = errors
        try probe.run()
        probe.waitUntilExit()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let complaints = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(probe.terminationStatus == 0 && complaints.isEmpty, "\(complaints)")
        let words = text.split(separator: "\n").map { $0.split(separator: "\t").first.map(String.init) ?? "" }
        #expect(words.contains("stage") && words.contains("use") && words.contains("teacher"), "\(text)")
    }
}
