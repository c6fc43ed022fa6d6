import HomeroomContext
import HomeroomTerminalUI
import HomeroomSupport

/// `homeroom roster`: the roster once (text or JSON), or live and full-screen (--watch).
enum RosterCommand {
    static let usage = """
        OVERVIEW: Show a room's roster: once, as JSON, or live and full-screen like top (--watch).

        USAGE: homeroom roster --room <id> --node <address> [--watch [--duration <s>]] [--json] [--page <n>] [options]

        OPTIONS:
        \(RoomOptions.help)
          --watch                Redraw as the room changes, full-screen on a terminal (q or Ctrl-C leaves;
                                 n/p or the arrows page a lecture hall). Not on a terminal: a new snapshot
                                 (or JSON line) after each change, at most once a second.
          --duration <s>         With --watch: leave after this many seconds.
          --json                 The roster as JSON (with --watch: one line per change).
          --page <n>             Only page n (1-based) of the students.
          --page-size <n>        Students per page (default 50).
          --messages <n>         Show the room's latest n messages under the roster (default 5; 0 hides them).
          --theme <file>         Theme (UI config) to draw with.                  (HOMEROOM_THEME)
          -h, --help             Show help information.

        Joins as an observer named 'roster' unless --as/--user say otherwise.
        Colours only on a terminal, never with NO_COLOR; width from COLUMNS, then the terminal, then 80.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let json = reader.flag("--json")
        let watch = reader.flag("--watch")
        let duration = try reader.integer("--duration", in: 1...86_400)
        let page = try reader.integer("--page", in: 1...10_000_000)
        let pageSize = try reader.integer("--page-size", in: 1...100_000) ?? 50
        let themePath = try reader.string("--theme")
        let messageCount = try reader.integer("--messages", in: 0...100) ?? 5
        let options = try RoomOptions.read(&reader, defaultRole: .observer, defaultUser: "roster")
        try reader.finish()
        if duration != nil && !watch { throw .usage("--duration goes with --watch", usage: usage) }
        let theme = try ThemeCommand.load(themePath)
        let environment = ProcessEnvironment.current

        // A roster read is invisible: no session, so nobody's feed shows a reader.
        let pool = try options.join(.invisible)
        defer { pool.close() }
        func snapshot() -> RoomSnapshot { pool.snapshot(page: page.map { $0 - 1 }, pageSize: pageSize) }
        func messages() -> [MessageInfo] { messageCount == 0 ? [] : pool.message.history(limit: messageCount) }
        func messageLines() -> [String] {
            let latest = messages()
            return latest.isEmpty ? [] : ["Latest messages:"] + latest.map { "  " + MessageText.line($0, local: options.user) }
        }
        func text() -> String {
            var capabilities = TerminalCapabilities.detect(environment: environment)
            capabilities.height = nil
            let context = RenderContext(snapshot: snapshot(), nowMillis: WallClock.nowMillis(), theme: theme, capabilities: capabilities,
                                        status: messageLines())
            return Scenes.render(context)
        }
        func jsonText() -> String {
            guard case let .fields(keys, values) = SnapshotJSON.value(snapshot()) else { return "" }
            return JSONText.fields(keys + ["messages"], values + [.array(messages().map(MessageText.json))]).rendered
        }
        guard watch else {
            print(json ? jsonText() : text())
            return
        }
        Console.catchInterrupts()
        let deadline = duration.map { WallClock.monotonicMillis() + UInt64($0) * 1000 }
        if !json && TerminalCapabilities.isTerminal() {
            let view = LiveView(pool: pool, theme: theme, environment: environment)
            let ended = view.run(deadlineMillis: deadline) {
                let state = pool.monitor.connectionState
                return messageLines() + ["\(state.rawValue) as \(options.user) · q quit · n/p page · updated \(Self.clock())"]
            }
            if case .interrupted = ended { throw .interrupted }
            return
        }
        // Not a terminal (or JSON): a new snapshot after each change, at most once a second.
        let changed = Flag(true)
        let token = pool.addEventListener { event in
            if case .latencyUpdated = event { return }
            changed.set()
        }
        defer { pool.removeEventListener(token) }
        var last: UInt64 = 0
        var first = true
        while !Console.interrupted {
            let now = WallClock.monotonicMillis()
            if let deadline, now >= deadline { break }
            if now &- last >= 1_000, changed.take() {
                if json {
                    print(jsonText())
                } else {
                    print((first ? "" : "\n") + text())
                }
                fflushStdout()
                first = false
                last = now
            }
            sleepMillis(50)
        }
        if Console.interrupted { throw .interrupted }
    }

    static func clock() -> String { MessageText.clock(WallClock.nowMillis()) + " UTC" }
}
