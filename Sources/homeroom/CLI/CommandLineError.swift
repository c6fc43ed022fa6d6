/// What goes wrong on the command line, with the exit code it maps to.
enum CommandLineError: Error, CustomStringConvertible {
    /// Bad arguments: exit 64 and print usage.
    case usage(String, usage: String)
    /// The command ran and failed: exit 1.
    case failure(String)
    /// Ctrl-C (or SIGTERM) ended it, after it cleaned up: exit 130, as shells expect.
    case interrupted

    var description: String {
        switch self {
        case let .usage(message, _), let .failure(message): return message
        case .interrupted: return "interrupted"
        }
    }

    var exitCode: Int32 {
        switch self {
        case .usage: return 64
        case .failure: return 1
        case .interrupted: return 130
        }
    }
}
