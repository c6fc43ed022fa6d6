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

    static func run(_ arguments: [String], environment: [String: String] = [:], stdin: String? = nil,
                    timeout: Double = 20) throws -> Result {
        guard let binary else { throw CLIError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["NO_COLOR"] = "1"
        env["COLUMNS"] = "100"
        env.removeValue(forKey: "HOMEROOM_NODES")
        env.removeValue(forKey: "HOMEROOM_ROOM")
        env.removeValue(forKey: "HOMEROOM_THEME")
        env.removeValue(forKey: "HOMEROOM_TOKEN")
        env.removeValue(forKey: "HOMEROOM_CONTEXT")
        // Never the developer's saved contexts (homeroom context): a folder that does not exist.
        env["HOMEROOM_CONFIG_DIR"] = CLI.noContexts
        for (key, value) in environment { env[key] = value }
        process.environment = env
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
    private var output = Data()

    init(_ arguments: [String], columns: Int = 100, rows: Int = 40, environment: [String: String] = [:]) throws {
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
        var size = winsize(ws_row: UInt16(rows), ws_col: UInt16(columns), ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(slave, UInt(TIOCSWINSZ), &size)
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["TERM"] = "xterm-256color"
        env.removeValue(forKey: "NO_COLOR")
        env.removeValue(forKey: "COLUMNS")
        env.removeValue(forKey: "LINES")
        env.removeValue(forKey: "HOMEROOM_TOKEN")
        env.removeValue(forKey: "HOMEROOM_CONTEXT")
        env["HOMEROOM_CONFIG_DIR"] = CLI.noContexts
        for (key, value) in environment { env[key] = value }
        process.environment = env
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

    /// Reads until `text` has been shown (after `from` characters), or `timeout` passes.
    @discardableResult
    func waitFor(_ text: String, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if shown.contains(text) { return true }
            pump(millis: 50)
        }
        return shown.contains(text)
    }

    func pump(millis: Int32) {
        var poll = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, millis) > 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = read(master, &buffer, buffer.count)
        if count > 0 { output.append(contentsOf: buffer[0..<count]) }
    }

    /// Waits (bounded) for the process to end; its status, or nil if it had to be killed.
    func waitForExit(timeout: Double = 10) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { pump(millis: 20) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        pump(millis: 20)
        return process.terminationStatus
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        close(master)
    }
}
