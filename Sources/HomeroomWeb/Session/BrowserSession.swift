import Dispatch
import FoundationEssentials
import Synchronization
import HomeroomContext
import HomeroomSupport

/// One browser socket's classroom: after the page logs in with a join token, a
/// `ContextPool` joined as that token's user; its events make read models, which go to
/// the page, and the page's actions go to the pool. Work runs on the session's own
/// serial queue, never on the server's loop.
final class BrowserSession: WebSocketHandler {
    struct Settings: Sendable {
        var nodes: [String]
        var requestTimeoutMillis: UInt64
        /// When a pool whose node is lost tries the nodes again (reconnecting, then suspended).
        var reconnect: ReconnectOptions
        var backpressure: Int
        var maxPendingActions: Int
        var pageSize = 20
        var chatLimit = 40
        /// A frame at most this often while events arrive, and at least this often anyway (the timer, the carousel).
        var pushDelayMillis = 80
        var refreshMillis = 1_000
    }

    private let link: WebSocketLink
    private let settings: Settings
    private let logger: Logger
    private let work = DispatchQueue(label: "homeroom.web.session")
    /// The page's actions, in order, apart from `work`: an action that takes long (a
    /// broadcast visits every group's room) does not hold up the page's frames.
    private let actions = DispatchQueue(label: "homeroom.web.actions")
    private let pendingActions = Atomic<Int>(0)

    private struct State {
        var pool: ContextPool?
        var listener: Int?
        var page = 0
        /// A login arrived: one per socket (the page opens a new socket to log in again).
        var loginTaken = false
        var pushScheduled = false
        var lastSent = ""
        var ended = false
    }
    private let state = Mutex(State())

    init(link: WebSocketLink, settings: Settings, logger: Logger) {
        self.link = link
        self.settings = settings
        self.logger = logger
    }

    // MARK: - From the page (the loop's thread: hand off at once)

    func received(_ text: String) {
        let bytes = Data(text.utf8)
        guard let envelope = try? JSONDecoder().decode(PageRequest.Envelope.self, from: bytes) else {
            end(code: ContextError.invalidArgument, "the page sent something that is not a JSON message with a type")
            return
        }
        switch envelope.type {
        case "login":
            guard let login = try? JSONDecoder().decode(PageRequest.Login.self, from: bytes) else {
                end(code: ContextError.invalidArgument, "a login carries a token")
                return
            }
            // Refused on the loop's thread, so logins cannot pile up on the session's queue.
            let first = state.withLock { state -> Bool in
                defer { state.loginTaken = true }
                return !state.loginTaken
            }
            guard first else {
                end(code: ContextError.invalidArgument, "one login per socket: open a new one to log in again")
                return
            }
            // On the actions queue: the actions a page sends after its login wait for it.
            actions.async { self.logIn(login) }
        case "action":
            guard let action = try? JSONDecoder().decode(PageAction.self, from: bytes) else {
                end(code: ContextError.invalidArgument, "an action carries an id and what to do")
                return
            }
            // Bounded: a page that sends faster than the cluster answers is told to wait.
            guard pendingActions.add(1, ordering: .relaxed).newValue <= settings.maxPendingActions else {
                pendingActions.subtract(1, ordering: .relaxed)
                link.send(text: PageReply.json(PageReply.Result(id: action.id, ok: false, code: "busy",
                                                                message: "too many actions waiting: wait for their answers")))
                return
            }
            actions.async { self.perform(action) }
        case "page":
            guard let page = try? JSONDecoder().decode(PageRequest.Page.self, from: bytes) else { return }
            state.withLock { $0.page = max(0, min(page.index, 100_000)) }
            // Coalesced: however many page messages come, one push is waiting at most.
            schedulePush()
        default:
            end(code: ContextError.invalidArgument, "unknown message type '\(envelope.type)'")
        }
    }

    func ended() {
        let (pool, listener) = state.withLock { state -> (ContextPool?, Int?) in
            state.ended = true
            defer { state.pool = nil }
            return (state.pool, state.listener)
        }
        // Leaving joins the client's threads: on the session's queue, not the loop, and
        // after the actions already taken (they then find the pool closed, not half closed).
        actions.async {
            self.work.async {
                if let listener { pool?.removeEventListener(listener) }
                pool?.close()
            }
        }
    }

    // MARK: - On the session's queue

    private func logIn(_ login: PageRequest.Login) {
        guard state.withLock({ $0.pool == nil && !$0.ended }) else { return }
        let pool: ContextPool
        do {
            var config = try ClassroomConfig(token: login.token, room: login.room, name: login.name ?? "", nodes: settings.nodes)
            config.requestTimeoutMillis = settings.requestTimeoutMillis
            config.readsOwnWrites = true
            config.reconnect = settings.reconnect
            pool = try ContextPool(config: config, logger: logger.with("user", config.user))
            try pool.room.join()
        } catch {
            end(code: error.code, error.message)
            return
        }
        let listener = pool.addEventListener { [weak self] event in
            guard let self else { return }
            if case let .localUserKickedOut(banned) = event {
                self.end(code: banned ? ContextError.banned : ContextError.kicked,
                         banned ? "you were banned from this room" : "you were removed from this room; log in again if the teacher allows it")
                return
            }
            // The class closed: the nodes refuse the room to everyone now (docs/PROTOCOL.md, "Closed classes").
            if case .roomClosed = event {
                self.end(code: "room-closed", "the class is over and the room is closed: nobody can rejoin it")
                return
            }
            self.schedulePush()
        }
        let keep = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            state.pool = pool
            state.listener = listener
            return true
        }
        guard keep else { pool.close(); return }
        link.loggedIn.store(true, ordering: .relaxed)
        let config = pool.config
        logger.info("browser logged in", ["room": config.room, "user": config.user, "role": "\(config.role)"])
        link.send(text: PageReply.json(PageReply.Welcome(user: config.user, role: "\(config.role)", room: config.room,
                                                        nowMillis: WallClock.nowMillis())))
        push()
        refresh()
    }

    private func perform(_ action: PageAction) {
        defer { pendingActions.subtract(1, ordering: .relaxed) }
        guard let pool = state.withLock({ $0.pool }) else {
            link.send(text: PageReply.json(PageReply.Result(id: action.id, ok: false, code: ContextError.notJoined, message: "log in first")))
            return
        }
        // While the link is down a write would wait without a word: say so instead.
        let linkInfo = pool.monitor.link
        var result = PageReply.Result(id: action.id, ok: true)
        if linkInfo.state != .connected {
            result = PageReply.Result(id: action.id, ok: false, code: ContextError.unavailable,
                                      message: "not sent: \(linkInfo.summary(nowMillis: WallClock.nowMillis())); try again once connected")
        } else {
            do {
                try action.perform(on: pool)
            } catch {
                result = PageReply.Result(id: action.id, ok: false, code: error.code, message: error.message)
            }
        }
        link.send(text: PageReply.json(result))
        work.async { self.push() }
    }

    private func schedulePush() {
        let first = state.withLock { state -> Bool in
            defer { state.pushScheduled = true }
            return !state.pushScheduled
        }
        guard first else { return }
        work.asyncAfter(deadline: .now() + .milliseconds(settings.pushDelayMillis)) { self.push() }
    }

    /// Sends the read model if it changed since the last one sent, unless the page is
    /// behind (then it is tried again shortly: the page gets the newest, not every one).
    private func push() {
        guard let (pool, page) = state.withLock({ state -> (ContextPool, Int)? in
            state.pushScheduled = false
            return state.pool.map { ($0, state.page) }
        }) else { return }
        guard link.queuedBytes < settings.backpressure else {
            schedulePush()
            return
        }
        let text = PageReply.json(PageModel(pool: pool, page: page, pageSize: settings.pageSize, chatLimit: settings.chatLimit))
        let changed = state.withLock { state -> Bool in
            defer { state.lastSent = text }
            return state.lastSent != text
        }
        if changed { link.send(text: text) }
    }

    private func refresh() {
        work.asyncAfter(deadline: .now() + .milliseconds(settings.refreshMillis)) { [weak self] in
            guard let self, self.state.withLock({ !$0.ended && $0.pool != nil }) else { return }
            self.push()
            self.refresh()
        }
    }

    private func end(code: String, _ message: String) {
        logger.info("browser session ends", ["code": code, "why": message])
        link.send(text: PageReply.json(PageReply.Ended(code: code, message: message)))
        link.close(WebSocketCloseCode.policyViolation, reason: code)
    }
}
