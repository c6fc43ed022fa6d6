@preconcurrency import Glibc
import HomeroomContext
import HomeroomSupport
import HomeroomWeb

/// `homeroom web`: the classroom in a browser. The page is a UI over the contexts; this
/// process holds a session per browser and speaks to the cluster as any client does.
enum WebCommand {
    static let usage = """
        OVERVIEW: Serve the classroom page: each browser logs in with a join token and gets a live room.

        USAGE: homeroom web --listen <host:port> --node <address> [--node ...] [options]

        Each browser pastes a join token (homeroom token create); this process joins the
        token's room as the token's user through the nodes given, sends the page the room's
        read models over a WebSocket and carries out its actions. The page never sees a key,
        and nothing of a room its user was not given. Serves only on --listen.

        OPTIONS:
          --listen <host:port>   Where to serve the page (default 127.0.0.1:8080; port 0 picks one).
          --node <address>       A node's listen address; repeatable, the others are fallbacks.
                                 e.g. tcp://127.0.0.1:7100                        (HOMEROOM_NODES, comma-separated)
          --tls-ca <file>        The authority that signed the nodes' certificates, for tls+tcp://
                                 addresses. (HOMEROOM_TLS_CA)
          --theme <file>         Theme (the terminal's UI config, JSON) the page draws with. (HOMEROOM_THEME)
          --public-origin <url>  Where a reverse proxy serves the page to browsers, e.g.
                                 https://class.example.org; repeatable. Its Origin and Host are
                                 accepted besides this server's own address.
          --max-sessions <n>     Browser sessions held at once (default 32).
          --max-sessions-per-peer <n>
                                 Sessions one peer address may hold (default 8). Behind a
                                 reverse proxy every browser has the proxy's address: raise it.
          --timeout-ms <n>       How long to wait for a node's answer (default 1000).
          --reconnect-waits <ms,...>
                                 Once a session's node is lost, the waits between rounds over
                                 the nodes; the last repeats while suspended (default
                                 2000,4000,8000,16000,30000). A session never gives up.
          --reconnect-rounds <n> Ignored, with a warning: sessions no longer give up. Kept so
                                 scripts written for it still start.
          --log-level <level>    trace, debug, info, notice, warning, error (default notice).
          -h, --help             Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let listen = try reader.string("--listen") ?? "127.0.0.1:8080"
        var nodes = try reader.strings("--node").flatMap { $0.split(separator: ",").map { String($0).trimmed } }.filter { !$0.isEmpty }
        if nodes.isEmpty, let list = ProcessEnvironment.current["HOMEROOM_NODES"] {
            nodes = list.split(separator: ",").map { String($0).trimmed }.filter { !$0.isEmpty }
        }
        let themePath = try reader.string("--theme")
        let authority = try reader.string("--tls-ca") ?? ProcessEnvironment.current["HOMEROOM_TLS_CA"]
        var publicOrigins: Set<String> = []
        for text in try reader.strings("--public-origin") {
            guard let origin = WebSocketHandshake.normalizedOrigin(text) else {
                throw .usage("--public-origin '\(text)' is not an origin: scheme and host, e.g. https://class.example.org", usage: usage)
            }
            publicOrigins.insert(origin)
        }
        let maxSessions = try reader.integer("--max-sessions", in: 1...4_096) ?? 32
        let maxPerPeer = try reader.integer("--max-sessions-per-peer", in: 1...4_096) ?? min(8, maxSessions)
        let timeout = try reader.integer("--timeout-ms", in: UInt64(50)...UInt64(60_000)) ?? 1_000
        let waits = try reader.string("--reconnect-waits").map { text throws(CommandLineError) in
            let values = text.split(separator: ",").map { UInt64(String($0).trimmed) }
            guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) >= 50 && ($0 ?? 0) <= 600_000 }) else {
                throw .usage("--reconnect-waits '\(text)' must be milliseconds (50 to 600000) separated by commas, e.g. 2000,4000,8000,16000,30000",
                             usage: usage)
            }
            return values.compactMap { $0 }
        }
        // Before the schedule, sessions gave up after this many rounds; they no longer do.
        // Still accepted, so a script written for it keeps starting.
        let oldRounds = try reader.integer("--reconnect-rounds", in: 1...1_000)
        let levelName = try reader.string("--log-level") ?? "notice"
        try reader.finish()
        if oldRounds != nil {
            Console.error("warning: --reconnect-rounds is ignored: sessions no longer give up (they back off, then retry every 30 s); --reconnect-waits sets the waits")
        }
        guard !nodes.isEmpty else { throw .usage("missing --node <address>: the node the sessions join through", usage: usage) }
        for node in nodes where !["tcp://", "tls+tcp://", "ipc://", "inproc://"].contains(where: { node.hasPrefix($0) }) {
            throw .usage("node address '\(node)' must start with tcp://, tls+tcp://, ipc:// or inproc://", usage: usage)
        }
        try ClientTLS.configure(authority: authority, nodes: nodes, usage: usage)
        guard let level = Logger.Level.allCases.first(where: { "\($0)" == levelName }) else {
            throw .usage("unknown log level '\(levelName)'", usage: usage)
        }
        let theme = try ThemeCommand.load(themePath)
        var options = WebServer.Options(listen: listen, nodes: nodes, themeJSON: theme.json())
        options.limits.maxSessions = maxSessions
        options.limits.maxSessionsPerPeer = min(maxPerPeer, maxSessions)
        options.publicOrigins = publicOrigins
        options.requestTimeoutMillis = timeout
        if let waits {
            options.reconnect = ReconnectOptions(backoffMillis: Array(waits.dropLast()), suspendedIntervalMillis: waits[waits.count - 1])
        }
        let logger = Logger(label: "homeroom-web", level: level)
        Console.catchInterrupts()
        let server: WebServer
        do {
            server = try WebServer(options, logger: logger)
        } catch {
            throw .failure(error.description)
        }
        let host = listen[..<(listen.lastIndex(of: ":") ?? listen.endIndex)]
        // One line a script can read, as `homeroom node` prints when ready.
        Console.line("{\"event\":\"ready\",\"url\":\(jsonString("http://\(host):\(server.port)/")),\"port\":\(server.port)}")
        while !Console.interrupted { usleep(100_000) }
        server.stop()
    }
}
