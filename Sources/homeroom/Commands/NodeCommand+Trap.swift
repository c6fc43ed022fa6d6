@preconcurrency import Glibc

extension NodeCommand {
    /// A node that traps (a bug) must end at once, so its peers see it down and its
    /// supervisor restarts it. Swift's crash backtracer asks "press space to interact"
    /// and waits about 20 s when stdin and stderr are terminals: a node started by hand
    /// then sat half-dead (issue 39 saw a 17 s hang). The backtracer reads its settings
    /// at process start, so the node runs itself again once with them set (a backtrace
    /// is still printed). An operator's own SWIFT_BACKTRACE is left as it is.
    static func neverWaitOnATrap() {
        guard getenv("SWIFT_BACKTRACE") == nil, isatty(STDIN_FILENO) == 1 || isatty(STDERR_FILENO) == 1 else { return }
        setenv("SWIFT_BACKTRACE", "interactive=no", 1)
        let arguments = CommandLine.arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", arguments)
        // exec failed: run on as we are (the wait on a trap is a nuisance, not a fault).
        for argument in arguments { free(argument) }
    }
}
