@preconcurrency import Glibc
import CLinuxEvents
import Dispatch
import HomeroomContext
import HomeroomSupport

/// `homeroom web`: serves the classroom page on the address it is given and, per
/// browser socket, holds a `ContextPool` joined with that browser's join token. The
/// page is a UI over the contexts (Flexible Classroom's split): it gets read models
/// as JSON and sends actions back; it never talks to a node, and never sees a key.
public final class WebServer: Sendable {
    public struct Options: Sendable {
        /// HOST:PORT to serve on (port 0: any free one).
        public var listen: String
        /// The nodes' addresses every session joins through (the first that answers; the others on failover).
        public var nodes: [String]
        /// The theme JSON the page draws with (`homeroom theme print` writes the default).
        public var themeJSON: String
        public var limits = WebLimits()
        public var requestTimeoutMillis: UInt64 = 1_000
        /// When a session's pool tries the nodes again once its node is lost (never given up:
        /// 2, 4, 8, 16 s between rounds, then suspended, every 30 s); the pool's default.
        public var reconnect = ReconnectOptions()
        /// Before the schedule: rounds before giving up. Ignored (sessions never give up now).
        @available(*, deprecated, message: "sessions follow `reconnect` and never give up; this is ignored")
        public var reconnectRounds = 20
        /// Where a reverse proxy serves the page to browsers (`https://class.example.org`),
        /// normalized by `WebSocketHandshake.normalizedOrigin`: their Origin and Host are accepted.
        public var publicOrigins: Set<String> = []

        public init(listen: String, nodes: [String], themeJSON: String) {
            self.listen = listen
            self.nodes = nodes
            self.themeJSON = themeJSON
        }
    }

    public let port: UInt16
    private let loop: WebServerLoop
    private let done = DispatchSemaphore(value: 0)

    public convenience init(_ options: Options, logger: Logger) throws(WebServerError) {
        try self.init(options, logger: logger, openSession: nil)
    }

    /// `openSession`: what handles each socket (tests give their own; nil: a `BrowserSession`).
    init(_ options: Options, logger: Logger, openSession: WebServerLoop.SessionFactory?) throws(WebServerError) {
        guard !options.nodes.isEmpty else { throw WebServerError("no node given: pass --node tcp://HOST:PORT (repeatable)") }
        let (listener, port) = try Listener.open(options.listen)
        let wake = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wake >= 0 else {
            Glibc.close(listener)
            throw WebServerError("cannot create an eventfd: \(String(cString: strerror(errno)))")
        }
        let settings = BrowserSession.Settings(nodes: options.nodes, requestTimeoutMillis: options.requestTimeoutMillis,
                                               reconnect: options.reconnect,
                                               backpressure: options.limits.pushBackpressure, maxPendingActions: options.limits.maxPendingActions)
        // A socket's Host must name this server as the browser reached it (not a rebound DNS name).
        let listenHost = options.listen[..<(options.listen.lastIndex(of: ":") ?? options.listen.endIndex)].lowercased()
        let hosts: Set<String> = ["127.0.0.1:\(port)", "localhost:\(port)", "\(listenHost):\(port)"]
        let browserSession: WebServerLoop.SessionFactory = { link in BrowserSession(link: link, settings: settings, logger: logger) }
        loop = WebServerLoop(listener: listener, wake: wake, hosts: hosts, publicOrigins: options.publicOrigins, limits: options.limits,
                             assets: PageAssets.all(themeJSON: options.themeJSON), logger: logger,
                             openSession: openSession ?? browserSession)
        self.port = port
        let loop = self.loop, done = self.done
        // A thread of its own for the whole life of the server: it blocks in poll.
        LoopThread.detach { loop.run(); done.signal() }
    }

    /// Sockets with a session now.
    public var sessions: Int { loop.sessions }

    /// Stops serving; sessions end (their pools leave) in the background. Idempotent.
    public func stop() {
        loop.stop()
        done.wait()
        done.signal()
    }

    deinit { stop() }
}

/// A detached POSIX thread: the loop blocks in `poll`, which a dispatch worker should not.
enum LoopThread {
    static func detach(_ body: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, box)
        if status == 0 { pthread_detach(thread) } else { Unmanaged<Box>.fromOpaque(box).release(); DispatchQueue.global().async(execute: body) }
    }
}
