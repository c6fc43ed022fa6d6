@preconcurrency import Glibc
import HomeroomSupport
import HomeroomContext
import HomeroomTerminalUI

/// `homeroom join`: an interactive session in a room, one command per line.
enum JoinCommand {
    static let usage = """
        OVERVIEW: Join a room as a user and act in it with line commands; events are shown as they happen.

        USAGE: homeroom join --room <id> --node <address> --as <role> [--user <id>] [--name <name>] [options]

        OPTIONS:
        \(RoomOptions.help)
          --type <type>          As teacher or assistant: set the room type on joining
                                 (one-to-one, small-classroom, lecture-hall).
          --theme <file>         Theme (UI config) for the roster command.        (HOMEROOM_THEME)
          --quiet                Do not print room events as they happen.
          -h, --help             Show help information.

        COMMANDS (one per line; the same actions exist as one-shot subcommands):
        \(Action.grammar)
          roster [<page>]                Show the roster (the scene of the room type).
          status                         Connection state and latency.
          renew <token-or-file>          Renew the join token without leaving (a token, or a
                                         file holding one): same user, role and room. The
                                         session warns 30 s before the token expires.
          help                           This list.
          quit                           Leave the room (also Ctrl-D, Ctrl-C).

        Refused actions say why, with a code: refused [stage-full]: the stage is full (6 seats): ...
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let quiet = reader.flag("--quiet")
        let typeName = try reader.string("--type")
        let themePath = try reader.string("--theme")
        let options = try RoomOptions.read(&reader, defaultRole: .student)
        try reader.finish()
        var type: RoomType?
        if let typeName {
            guard let parsed = RoomType(name: typeName) else {
                throw .usage("unknown room type '\(typeName)': use one-to-one, small-classroom or lecture-hall", usage: usage)
            }
            type = parsed
        }
        let theme = try ThemeCommand.load(themePath)
        let environment = ProcessEnvironment.current
        let interactive = isatty(STDIN_FILENO) == 1
        let prompt = interactive ? "\(options.room) \(options.user) (\(options.role))> " : ""

        Console.catchInterrupts()
        let pool = try Console.exitingOnInterrupt { () throws(CommandLineError) in try options.join() }
        defer { pool.close() }
        let removed = Flag()
        let closed = Flag()
        let local = options.user
        let monitor = pool.monitor
        let token = pool.addEventListener { event in
            if case .localUserKickedOut = event { removed.set() }
            if case .roomClosed = event { closed.set() }
            guard !quiet || isLocalRemoval(event), var text = EventText.describe(event, local: local) else { return }
            // The link's changes say which node, since when, why and what is tried now.
            if case .connectionStateUpdated = event { text = "connection: " + monitor.link.summary(nowMillis: WallClock.nowMillis()) }
            Console.out((interactive ? "\r\u{1B}[K" : "") + "· " + text + "\n" + prompt)
        }
        defer { pool.removeEventListener(token) }
        if let type {
            do {
                try pool.room.setType(type)
            } catch {
                Console.error("Error: cannot set the room type: refused [\(error.code)]: \(error.message)")
            }
        }
        let room = pool.room.info
        Console.line("Joined \(room.displayName) (\(room.type)) as \(pool.user.localUser.displayName), \(options.role), through \(pool.monitor.link.node ?? options.nodes[0]).")
        let recent = pool.message.history(limit: 5)
        if !recent.isEmpty {
            Console.line("Latest messages:")
            for message in recent { Console.line("  " + MessageText.line(message, local: local)) }
        }
        Console.line("Type 'help' for commands, 'quit' to leave.")
        Console.out(prompt)

        var input = LineInput()
        var refusedLines = 0
        while true {
            if Console.interrupted { Console.line(""); break }
            if removed.isSet {
                throw .failure("you were removed from room \(options.room) (kicked out or banned)")
            }
            // The class is over: the end of the session, not a failure (exit status 0).
            if closed.isSet {
                Console.line("class over: room \(options.room) is closed [room-closed], nobody can rejoin it; leaving")
                return
            }
            guard let line = input.next(waitingMillis: 100) else { continue }
            guard case let .line(text) = line else { break }   // end of input
            let words = LineWords.split(text)
            if words.isEmpty { Console.out(prompt); continue }
            if words == ["quit"] || words == ["exit"] { break }
            let answer = handle(words, pool: pool, theme: theme, environment: environment)
            if answer.refused { refusedLines += 1 }
            Console.out(answer.text + "\n" + prompt)
        }
        if interactive { Console.line("left \(options.room)") }
        if Console.interrupted { throw .interrupted }
        // A script learns from the exit status that something it asked for did not happen.
        if !interactive && refusedLines > 0 {
            throw .failure("\(refusedLines) line\(refusedLines == 1 ? " was" : "s were") refused (see the answers above)")
        }
    }

    /// `renew <token-or-file>`: a token (hr1.…), or a file whose first line is one.
    static func renew(_ words: [String], pool: ContextPool) -> (text: String, refused: Bool) {
        guard words.count == 2 else { return ("usage: renew <token-or-file> (a join token, or a file holding one)", true) }
        var token = words[1]
        if !token.hasPrefix("hr1.") {
            // Not "-": standard input is this session's command lines.
            guard token != "-", let bytes = try? FileText.read(token, what: "token file", limit: 8192) else {
                return ("refused: \(token) is neither a join token (hr1.…) nor a readable file holding one", true)
            }
            let line = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).first ?? ""
            token = String(line.filter { !$0.isWhitespace })
        }
        do {
            let expiresAt = try pool.monitor.renewToken(token)
            let left = expiresAt - Int64(WallClock.nowMillis() / 1000)
            return ("ok: token renewed, valid for \(left) s more (until \(expiresAt), Unix seconds); your session stays", false)
        } catch {
            return ("refused [\(error.code)]: \(error.message)", true)
        }
    }

    static func isLocalRemoval(_ event: ContextEvent) -> Bool {
        switch event {
        case .localUserKickedOut, .roomClosed: return true
        default: return false
        }
    }

    /// One command line: its answer (never throws; refusals are answers too), and
    /// whether it was refused (or not understood).
    static func handle(_ words: [String], pool: ContextPool, theme: Theme, environment: [String: String]) -> (text: String, refused: Bool) {
        switch words[0] {
        case "help", "?":
            return ("Commands:\n" + Action.grammar + "\n  roster [<page>]\n  status\n  renew <token-or-file>\n  help\n  quit", false)
        case "status":
            let latency = pool.monitor.latencyMicros
            let link = pool.monitor.link
            return (link.summary(nowMillis: WallClock.nowMillis())
                    + (latency > 0 && link.state == .connected ? ", last sync round trip \(Format.latency(micros: latency))" : ""), false)
        case "renew":
            return renew(words, pool: pool)
        case "roster":
            guard theme.switches("roster").enabled else { return ("refused: the roster component is disabled by the theme", true) }
            var page = 0
            if words.count == 2, let number = Int(words[1]), number >= 1 { page = number - 1 }
            return (LiveView.frame(pool: pool, theme: theme, environment: environment, page: &page, status: [], fullScreen: false), false)
        default:
            let action: Action
            do {
                action = try Action.parse(words, local: pool.user.localUser.id)
            } catch {
                return ("\(error.description) (type 'help' for commands)", true)
            }
            if let component = action.component, !theme.switches(component).enabled {
                return ("refused: the \(component) component is disabled by the theme", true)
            }
            // While the link is down a write would wait for a node without a word: say why
            // it was not sent instead, and let the user send it again once connected.
            let link = pool.monitor.link
            if link.state != .connected {
                return ("not sent [unavailable]: \(link.summary(nowMillis: WallClock.nowMillis())); send it again once 'status' says connected", true)
            }
            do {
                return ("ok: " + (try action.perform(on: pool)).text, false)
            } catch {
                return ("refused [\(error.code)]: \(error.message)", true)
            }
        }
    }
}

/// Lines from stdin without blocking for long, so the session can notice a kick or Ctrl-C.
struct LineInput {
    enum Item { case line(String), end }
    private var buffer: [UInt8] = []
    private var ended = false

    mutating func next(waitingMillis millis: Int32) -> Item? {
        if let line = takeLine() { return .line(line) }
        if ended {
            if buffer.isEmpty { return .end }
            defer { buffer.removeAll() }
            return .line(String(decoding: buffer, as: UTF8.self))
        }
        var poll = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, millis) > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let count = read(STDIN_FILENO, &chunk, chunk.count)
        if count <= 0 {
            if count < 0 && errno == EINTR { return nil }
            ended = true
            return nil
        }
        buffer.append(contentsOf: chunk[0..<count])
        return takeLine().map { .line($0) }
    }

    private mutating func takeLine() -> String? {
        guard let newline = buffer.firstIndex(of: 0x0A) else { return nil }
        var bytes = Array(buffer[..<newline])
        if bytes.last == 0x0D { bytes.removeLast() }
        buffer.removeSubrange(...newline)
        return String(decoding: bytes, as: UTF8.self)
    }
}
