@preconcurrency import Glibc
import HomeroomContext
import HomeroomTerminalUI
import Synchronization
import HomeroomSupport

/// The full-screen live roster (like top): redrawn when the room changes and every
/// second (the class clock), paged with n/p in a lecture hall, left with q or Ctrl-C.
final class LiveView: Sendable {
    let pool: ContextPool
    let theme: Theme
    let environment: [String: String]
    private let dirty = Flag(true)

    init(pool: ContextPool, theme: Theme, environment: [String: String]) {
        self.pool = pool
        self.theme = theme
        self.environment = environment
    }

    enum Ending { case quit, interrupted, deadline, finished }

    /// Runs until q, Ctrl-C, `deadlineMillis` (monotonic) or `finished()`; `status` gives
    /// the lines under the scene.
    func run(deadlineMillis: UInt64?, status: @escaping () -> [String], finished: () -> Bool = { false }) -> Ending {
        let token = pool.addEventListener { [dirty] event in
            if case .latencyUpdated = event { return }
            dirty.set()
        }
        defer { pool.removeEventListener(token) }
        let keyboard = KeyboardMode()
        Screen.enter()
        defer {
            Screen.leave()
            keyboard.restore()
        }
        var page = 0
        var lastDraw: UInt64 = 0
        while true {
            if Console.interrupted { return .interrupted }
            if let deadlineMillis, WallClock.monotonicMillis() >= deadlineMillis { return .deadline }
            if finished() { return .finished }
            let now = WallClock.monotonicMillis()
            if dirty.take() || now &- lastDraw >= 1_000 {
                let frame = Self.frame(pool: pool, theme: theme, environment: environment, page: &page,
                                       status: Self.linkLines(pool.monitor.link) + status(), fullScreen: true)
                Screen.draw(frame)
                lastDraw = now
            }
            switch keyboard.key(waitingMillis: 50) {
            case .quit: return .quit
            case .next: page += 1; dirty.set()
            case .previous: page = max(0, page - 1); dirty.set()
            case .redraw: Console.out("\u{1B}[2J"); dirty.set()
            case .other, nil: break
            }
        }
    }

    /// While the link is down: which node was lost, since when, why, and what is tried
    /// now (redrawn every second, so the age counts up).
    static func linkLines(_ link: LinkInfo) -> [String] {
        link.state == .connected ? [] : ["⚠ " + link.summary(nowMillis: WallClock.nowMillis())]
    }

    /// One frame of the pool's scene. Full-screen, the students are paged to fit the
    /// terminal (a lecture hall always; any room when its roster is taller than the screen).
    static func frame(pool: ContextPool, theme: Theme, environment: [String: String], page: inout Int, status: [String],
                      fullScreen: Bool, capabilities: TerminalCapabilities? = nil) -> String {
        var capabilities = capabilities ?? TerminalCapabilities.detect(environment: environment)
        if !fullScreen { capabilities.height = nil }
        let type = pool.room.info.type
        var pageSize: Int?
        if type == .lectureHall {
            pageSize = Scenes.rowsPerPage(theme: theme, capabilities: capabilities)
        }
        if fullScreen, let height = capabilities.height {
            // State bar, stage (2), hands, header, page line and the blank lines between; counts in a lecture hall.
            let fixed = (type == .lectureHall ? 12 : 10) + (status.isEmpty ? 0 : status.count + 1)
            pageSize = theme.roster.pageSize > 0 ? theme.roster.pageSize : max(3, height - fixed)
        }
        let snapshot: RoomSnapshot
        if let pageSize {
            snapshot = pool.snapshot(page: page, pageSize: pageSize)
            page = snapshot.students.index
        } else {
            snapshot = pool.snapshot()
        }
        let context = RenderContext(snapshot: snapshot, nowMillis: WallClock.nowMillis(), theme: theme, capabilities: capabilities,
                                    status: status)
        return Scenes.render(context)
    }
}

/// A flag set from one thread and taken from another.
final class Flag: Sendable {
    private let value: Atomic<Bool>
    init(_ initial: Bool = false) { value = Atomic(initial) }
    func set() { value.store(true, ordering: .relaxed) }
    /// True once after each `set()`.
    func take() -> Bool { value.exchange(false, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
