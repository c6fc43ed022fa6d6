@preconcurrency import Glibc
import HomeroomWire

/// The `homeroom` command: subcommands, help, and exit codes (0, 1, 64 for usage).
@main
enum Homeroom {
    static let usage = """
        OVERVIEW: Homeroom, a distributed classroom state-sync engine.

        USAGE: homeroom <subcommand> [options]

        SUBCOMMANDS:
          demo        The main job: a three-node cluster, a teacher and students in a scripted lesson.
          join        Join a room as a user and act in it with line commands.
          roster      Show a room's roster: once, as JSON, or live (--watch).
          web         Serve the classroom page for browsers (each logs in with a join token).
          rooms       List the rooms a node holds.
          cluster     List the cluster's members as a node sees them.
          where-now   Which rooms a user is in now, across the cluster.
          context     Save node addresses, a token and a room under a name (kubectl's contexts).
          node        Run a node of a Homeroom cluster.
          keys        Generate token-signing and cluster keys.
          token       Create a signed join token.
          simulate    Seeded simulations of a replicated room, checked for convergence.
          verify      Is my cluster losing writes? A checked workload against a running cluster.
          theme       Print the default theme (UI config), or check a theme file.
          completion  Print a bash, zsh or fish completion script.

        ONE-SHOT ACTIONS (join, act once, print the result, leave; for scripts):
          stage       Put users on stage or take them off, or invite one.
          invitation  Show, accept or decline your invitation to the stage.
          board       Grant or revoke the whiteboard.
          camera, mic Your own device on or off, allow or deny a user's, or mute every student's.
          mute-all    Turn off every microphone privilege.
          reward      Reward users.
          kick, ban   Kick a user out once, or for good.
          hand        Raise or lower a hand, or switch hand raising on or off.
          class       Start or end the class.
          schedule    Set the class length and start.
          room        Rename the room, set its type or limits.
          prop        List, set or delete properties.
          name        Change your display name.

        MESSAGING (one-shot too):
          send        Send a room message.
          whisper     Send a peer message to one user, wherever it is connected.
          history     Read the message history (--json, --limit), set its limit, or clear it.
          presence    List online users and their temporary state, or set yours.
          mute, unmute  Mute or unmute a user's chat, or every student's (--all).

        OPTIONS:
          -h, --help  Show help information.
          --version   Show the version and the wire protocol version.

        See 'homeroom <subcommand> --help' for a subcommand's options, and docs/CLI.md
        for all of them ('homeroom help --reference' prints it).
        """

    /// This build's version (`homeroom --version`).
    static let version = "0.5.0"
    static var subcommands: [String] { CommandCatalog.commands.map(\.name).filter { !Action.verbs.contains($0) } + ["help"] }

    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let subcommand = arguments.first else {
            fail(.usage("no subcommand given", usage: usage))
        }
        let rest = arguments.dropFirst()
        do {
            switch subcommand {
            case "-h", "--help", "help":
                // docs/CLI.md is this, checked by a test.
                if rest.first == "--reference" { print(CommandCatalog.reference, terminator: "") } else { print(usage) }
            case "--version", "version": print("homeroom \(Self.version) (wire protocol \(WireProtocol.version))")
            case "simulate": try SimulateCommand.run(rest)
            case "verify": try VerifyCommand.run(rest)
            case "demo": try DemoCommand.run(rest)
            case "node":
                NodeCommand.neverWaitOnATrap()
                try NodeCommand.run(rest)
            case "keys": try KeysCommand.run(rest)
            case "token": try TokenCommand.run(rest)
            case "join": try JoinCommand.run(rest)
            case "roster": try RosterCommand.run(rest)
            case "rooms": try ClusterCommand.runRooms(rest)
            case "cluster": try ClusterCommand.runCluster(rest)
            case "where-now": try WhereNowCommand.run(rest)
            case "context": try ContextCommand.run(rest)
            case "theme": try ThemeCommand.run(rest)
            case "web": try WebCommand.run(rest)
            case "completion": try CompletionCommand.run(rest)
            case let verb where Action.verbs.contains(verb): try ActionCommand.run(verb, rest)
            default:
                let hint = Suggestion.nearest(subcommand, among: Self.subcommands + Array(Action.verbs)).map { ": did you mean '\($0)'?" } ?? ""
                throw CommandLineError.usage("unknown subcommand '\(subcommand)'\(hint)", usage: usage)
            }
        } catch let error as CommandLineError {
            fail(error)
        } catch {
            fail(.failure("\(error)"))
        }
    }

    static func fail(_ error: CommandLineError) -> Never {
        if case .interrupted = error { exit(error.exitCode) }
        fputs("Error: \(error.description)\n", stderr)
        if case let .usage(_, usage) = error { fputs("\n\(usageLines(usage))\n", stderr) }
        exit(error.exitCode)
    }

    /// A usage error shows the command's USAGE lines and where the rest is, not the
    /// whole 30-line help (it buried the one line that said what was wrong).
    static func usageLines(_ usage: String) -> String {
        let lines = usage.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.drop { $0 == " " }.hasPrefix("USAGE:") }) else { return usage }
        var block = [String(lines[start])]
        for line in lines[(start + 1)...] {
            guard line.contains(where: { $0 != " " }) else { break }
            block.append(String(line))
        }
        let arguments = CommandLine.arguments.dropFirst()
        let subcommand = arguments.first.map { Self.subcommands.contains($0) || Action.verbs.contains($0) ? " \($0)" : "" } ?? ""
        return block.joined(separator: "\n") + "\n\nSee 'homeroom\(subcommand) --help' for every option."
    }
}
