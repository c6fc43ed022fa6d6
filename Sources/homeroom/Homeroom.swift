@preconcurrency import Glibc

/// The `homeroom` command: subcommands, help, and exit codes (0, 1, 64 for usage).
@main
enum Homeroom {
    static let usage = """
        OVERVIEW: Homeroom, a distributed classroom state-sync engine.

        USAGE: homeroom <subcommand> [options]

        SUBCOMMANDS:
          demo        The main job: a scripted lesson, with its summary and roster.
          node        Run a node of a Homeroom cluster.
          simulate    Seeded simulations of a replicated room, checked for convergence.

        OPTIONS:
          -h, --help  Show help information.

        See 'homeroom <subcommand> --help' for a subcommand's options.
        """

    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let subcommand = arguments.first else {
            fail(.usage("no subcommand given", usage: usage))
        }
        let rest = arguments.dropFirst()
        do {
            switch subcommand {
            case "-h", "--help", "help": print(usage)
            case "simulate": try SimulateCommand.run(rest)
            case "demo": try DemoCommand.run(rest)
            case "node": try NodeCommand.run(rest)
            default: throw CommandLineError.usage("unknown subcommand '\(subcommand)'", usage: usage)
            }
        } catch let error as CommandLineError {
            fail(error)
        } catch {
            fail(.failure("\(error)"))
        }
    }

    static func fail(_ error: CommandLineError) -> Never {
        fputs("Error: \(error.description)\n", stderr)
        if case let .usage(_, usage) = error { fputs("\n\(usage)\n", stderr) }
        exit(error.exitCode)
    }
}
