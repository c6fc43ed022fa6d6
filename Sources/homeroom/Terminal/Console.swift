@preconcurrency import Glibc
import Synchronization

/// Set by SIGINT or SIGTERM while a live view or an interactive session runs.
let interruptRequested = Atomic<Bool>(false)
/// While set (connecting, before anything needs undoing), SIGINT and SIGTERM exit at
/// once with 130, as a shell expects of Ctrl-C, instead of waiting for the timeout.
let exitOnInterrupt = Atomic<Bool>(false)

/// Output to stdout and stderr from any thread, one whole write at a time.
enum Console {
    private static let lock = Mutex<Void>(())

    static func out(_ text: String) {
        lock.withLock { _ in
            fputs(text, stdout)
            fflush(stdout)
        }
    }

    static func line(_ text: String) { out(text + "\n") }

    static func error(_ text: String) {
        lock.withLock { _ in
            fputs(text + "\n", stderr)
            fflush(stderr)
        }
    }

    /// Catches SIGINT and SIGTERM in `interruptRequested` instead of dying, so the
    /// terminal is restored and the room left before exiting.
    static func catchInterrupts() {
        _ = interruptRequested.load(ordering: .relaxed)
        signal(SIGINT) { _ in Console.interrupt() }
        signal(SIGTERM) { _ in Console.interrupt() }
        // A parent may have started us with these blocked (the mask is inherited): unblock.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
    }

    static var interrupted: Bool { interruptRequested.load(ordering: .relaxed) }

    /// The signal handler: only async-signal-safe calls.
    private static func interrupt() {
        if exitOnInterrupt.load(ordering: .relaxed) {
            let newline: [UInt8] = [10]
            _ = newline.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, 1) }
            _exit(130)
        }
        interruptRequested.store(true, ordering: .relaxed)
    }

    /// Runs `body` (a connect) so that Ctrl-C during it exits 130 at once.
    static func exitingOnInterrupt<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        exitOnInterrupt.store(true, ordering: .relaxed)
        defer { exitOnInterrupt.store(false, ordering: .relaxed) }
        if interrupted { _exit(130) }
        return try body()
    }
}

/// The terminal in key-at-a-time mode (no echo, no line buffering) for a live view;
/// restored by `restore()`. Signals (Ctrl-C) still work.
final class KeyboardMode {
    private var original = termios()
    private let active: Bool

    init() {
        guard isatty(STDIN_FILENO) == 1, tcgetattr(STDIN_FILENO, &original) == 0 else {
            active = false
            return
        }
        var raw = original
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        active = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0
    }

    func restore() {
        if active { tcsetattr(STDIN_FILENO, TCSANOW, &original) }
    }

    deinit { restore() }

    enum Key { case quit, next, previous, redraw, other }

    /// Waits up to `millis` for a key on stdin.
    func key(waitingMillis millis: Int32) -> Key? {
        guard active else {
            usleep(useconds_t(millis) * 1000)
            return nil
        }
        var poll = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, millis) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = read(STDIN_FILENO, &buffer, buffer.count)
        guard count > 0 else { return count == 0 ? .quit : nil }
        let bytes = Array(buffer[0..<count])
        switch bytes {
        case [0x71], [0x51], [0x03], [0x04]: return .quit                     // q Q Ctrl-C Ctrl-D
        case [0x6E], [0x20], [0x1B, 0x5B, 0x43], [0x1B, 0x5B, 0x36, 0x7E]: return .next      // n space → PgDn
        case [0x70], [0x1B, 0x5B, 0x44], [0x1B, 0x5B, 0x35, 0x7E]: return .previous        // p ← PgUp
        case [0x72], [0x0C]: return .redraw                                    // r Ctrl-L
        default: return .other
        }
    }
}

/// The alternate screen, as full-screen programs (top, less) use it.
enum Screen {
    static func enter() { Console.out("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J") }
    static func leave() { Console.out("\u{1B}[?25h\u{1B}[?1049l") }

    /// Draws `text` from the top-left corner, clearing what the last frame left.
    static func draw(_ text: String) {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        Console.out("\u{1B}[H" + lines.joined(separator: "\u{1B}[K\r\n") + "\u{1B}[K\u{1B}[J")
    }
}

func fflushStdout() { fflush(stdout) }

func sleepMillis(_ millis: UInt64) { usleep(useconds_t(min(millis, 1_000_000) * 1000)) }
