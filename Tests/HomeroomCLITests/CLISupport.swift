import HomeroomTestSupport
import Foundation

/// Runs the built `homeroom` binary with a bounded wait (killed after `timeout`).
enum CLI {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var timedOut: Bool
    }

    static var binary: String? { CLIUsageTests.binary }

    /// Where the tests' CLI looks for saved contexts: nowhere, unless a test says so.
    static let noContexts = "/nonexistent/homeroom-test-contexts"

    /// The environment a child gets: the test's own without any HOMEROOM_ setting (the
    /// developer's nodes, room, token or context never leak in), saved contexts nowhere,
    /// then `extra`. On a terminal it keeps colours and takes the terminal's size.
    static func childEnvironment(_ extra: [String: String], terminal: Bool = false) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("HOMEROOM_") }
        if terminal {
            env["TERM"] = "xterm-256color"
            for key in ["NO_COLOR", "COLUMNS", "LINES"] { env.removeValue(forKey: key) }
        } else {
            env["NO_COLOR"] = "1"
            env["COLUMNS"] = "100"
        }
        // Never the developer's saved contexts (homeroom context): a folder that does not exist.
        env["HOMEROOM_CONFIG_DIR"] = CLI.noContexts
        return env.merging(extra) { $1 }
    }

    /// Runs the `homeroom` binary (or `executable`) with a bounded wait, both pipes drained.
    static func run(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
                    timeout: Double = 20, directory: URL? = nil, executable: String? = nil) throws -> Result {
        guard let program = executable ?? binary else { throw CLIError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = childEnvironment(environment)
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        // Drain both pipes beside the wait, so a chatty child never blocks on a full pipe.
        let collected = Collected()
        let group = DispatchGroup()
        for (handle, isOut) in [(out.fileHandleForReading, true), (err.fileHandleForReading, false)] {
            DispatchQueue.global().async(group: group) {
                let data = handle.readDataToEndOfFile()
                collected.set(data, isOut: isOut)
            }
        }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        let timedOut = process.isRunning
        if timedOut {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
        _ = group.wait(timeout: .now() + 5)
        return Result(status: process.terminationStatus, stdout: collected.out, stderr: collected.err, timedOut: timedOut)
    }

    final class Collected: @unchecked Sendable {
        private let lock = NSLock()
        private var outData = Data(), errData = Data()
        func set(_ data: Data, isOut: Bool) { lock.lock(); if isOut { outData = data } else { errData = data }; lock.unlock() }
        var out: String { lock.lock(); defer { lock.unlock() }; return String(decoding: outData, as: UTF8.self) }
        var err: String { lock.lock(); defer { lock.unlock() }; return String(decoding: errData, as: UTF8.self) }
    }
}

/// A `homeroom node` child for the CLI tests: the shared `NodeProcess`.
typealias NodeChild = NodeProcess

/// A child process on a pseudo-terminal (posix_openpt), as a person at a terminal would
/// run it: `send` types, `waitFor` reads what it shows (bounded). Killed on deinit.
final class TerminalSession {
    let process = Process()
    private let master: Int32
    /// The parent's own copy of the terminal's other end: while it is open, what a child
    /// wrote before it exited stays readable (with no slave open, Linux answers EIO).
    private var slaveCopy: Int32 = -1
    private var output = Data()

    init(_ arguments: [String], columns: Int = 100, rows: Int = 40, environment: [String: String] = [:], directory: URL? = nil) throws {
        guard let binary = CLI.binary else { throw CLIError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)") }
        // posix_openpt by hand (glibc's declaration is not imported): /dev/ptmx, unlock, number.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0,
              ioctl(master, 0x8004_5430 /* TIOCGPTN */, &number) == 0 else {
            throw CLIError("cannot open a pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw CLIError("cannot open /dev/pts/\(number): \(String(cString: strerror(errno)))") }
        slaveCopy = dup(slave)
        var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        process.environment = CLI.childEnvironment(environment, terminal: true)
        process.standardInput = handle
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Everything shown so far, escapes included.
    var shown: String { String(decoding: output, as: UTF8.self) }

    /// The last of what it showed, escapes removed (for failure messages).
    var plainTail: String {
        let plain = shown.replacingOccurrences(of: "\u{1B}\\[[0-9;?]*[A-Za-z]", with: "", options: .regularExpression)
        return String(plain.suffix(1_500))
    }

    /// How much has been shown so far: `waitFor(_:since:)` then looks only at what follows.
    var mark: Int { output.count }

    /// Reads until `text` has been shown (after `mark`), the process ends, or `timeout` passes.
    @discardableResult
    func waitFor(_ text: String, since mark: Int = 0, timeout: Double = 10) -> Bool {
        func seen() -> Bool { String(decoding: output.dropFirst(mark), as: UTF8.self).contains(text) }
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if seen() { return true }
            if !process.isRunning { drain(); return seen() }
            pump(millis: 50)
        }
        return seen()
    }

    /// Reads what is there (waiting up to `millis`); false when nothing was.
    @discardableResult
    func pump(millis: Int32) -> Bool {
        var poll = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, millis) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = read(master, &buffer, buffer.count)
        if count > 0 { output.append(contentsOf: buffer[0..<count]) }
        return count > 0
    }

    /// Everything left once the process is gone.
    func drain() { while pump(millis: 50) {} }

    /// Waits (bounded) for the process to end; its status, or nil if it had to be killed.
    func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { pump(millis: 20) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            drain()
            return nil
        }
        drain()
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        if slaveCopy >= 0 { close(slaveCopy) }
        close(master)
    }
}

/// Polls `condition` every 20 ms until it holds or `seconds` pass; bounded, never hangs.
func eventually(_ seconds: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return condition()
}
