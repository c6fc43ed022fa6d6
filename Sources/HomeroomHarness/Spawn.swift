@preconcurrency import Glibc
import Synchronization

/// Monotonic milliseconds since the harness started (every timeline entry uses it).
public enum Clock {
    private static func raw() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }
    public static let origin = raw()
    public static var now: UInt64 { raw() - origin }

    public static func sleep(millis: UInt64) {
        var remaining = millis
        while remaining > 0 {
            let step = min(remaining, 500)
            usleep(useconds_t(step * 1000))
            remaining -= step
        }
    }
}

public struct SpawnError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Every child process the harness started, so a failure, SIGINT or the watchdog
/// can end them all, each by its own pid.
public final class ProcessRegistry: Sendable {
    public static let shared = ProcessRegistry()
    private let pids = Mutex<[Int32: String]>([:])

    public func add(_ pid: Int32, _ label: String) { pids.withLock { $0[pid] = label } }
    public func remove(_ pid: Int32) { _ = pids.withLock { $0.removeValue(forKey: pid) } }
    public var all: [Int32: String] { pids.withLock { $0 } }

    /// SIGCONT (a paused child cannot die otherwise), SIGKILL, reap.
    public func killAll() {
        for (pid, _) in all {
            kill(pid, SIGCONT)
            kill(pid, SIGKILL)
            var status: Int32 = 0
            let deadline = Clock.now + 2_000
            while waitpid(pid, &status, WNOHANG) == 0 && Clock.now < deadline { usleep(10_000) }
            remove(pid)
        }
    }
}

public enum Spawn {
    /// Starts `arguments[0]` (looked up in PATH) with posix_spawn, never fork: nng is
    /// not fork-safe. Standard output and error go to the given files (appended), or
    /// /dev/null. The child gets its own process group (a terminal's Ctrl-C reaches
    /// only the harness, which stops it), default signal handlers and an empty mask.
    public static func start(_ arguments: [String], stdout: String? = nil, stderr: String? = nil, stdinPath: String? = nil,
                      label: String) throws(SpawnError) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdinPath ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw SpawnError("cannot start \(arguments[0]): \(String(cString: strerror(result)))")
        }
        ProcessRegistry.shared.add(pid, label)
        return pid
    }

    /// Waits for a child; nil when it is still running after `timeoutMillis`.
    public static func wait(_ pid: Int32, timeoutMillis: UInt64) -> Int32? {
        let deadline = Clock.now + timeoutMillis
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                ProcessRegistry.shared.remove(pid)
                return status
            }
            if result < 0 {
                ProcessRegistry.shared.remove(pid)
                return -1
            }
            if Clock.now >= deadline { return nil }
            usleep(5_000)
        }
    }

    /// Runs a command to completion (bounded) and returns its exit code and output.
    @discardableResult
    public static func run(_ arguments: [String], timeoutMillis: UInt64 = 20_000, stdinText: String? = nil) throws(SpawnError) -> (code: Int32, output: String) {
        let base = "/tmp/homeroom-chaos-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let outPath = base + ".out"
        var inPath: String?
        if let stdinText {
            inPath = base + ".in"
            guard writeFile(inPath!, stdinText) else { throw SpawnError("cannot write \(inPath!)") }
        }
        defer {
            unlink(outPath)
            if let inPath { unlink(inPath) }
        }
        let pid = try start(arguments, stdout: outPath, stderr: outPath, stdinPath: inPath, label: arguments.joined(separator: " "))
        guard let status = wait(pid, timeoutMillis: timeoutMillis) else {
            kill(pid, SIGKILL)
            _ = wait(pid, timeoutMillis: 2_000)
            throw SpawnError("\(arguments.joined(separator: " ")) did not finish within \(timeoutMillis) ms")
        }
        let output = readFile(outPath) ?? ""
        let code: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, output)
    }

    /// Runs a command and fails unless it exits 0.
    public static func check(_ arguments: [String], timeoutMillis: UInt64 = 20_000, stdinText: String? = nil) throws(SpawnError) {
        let (code, output) = try run(arguments, timeoutMillis: timeoutMillis, stdinText: stdinText)
        guard code == 0 else {
            throw SpawnError("\(arguments.joined(separator: " ")) exited \(code): \(output.trimmingSpaces)")
        }
    }

    /// Finds an executable in PATH.
    public static func which(_ name: String) -> String? {
        let path = String(cString: getenv("PATH") ?? strdup("/usr/sbin:/usr/bin:/sbin:/bin"))
        for directory in (path + ":/usr/sbin:/sbin").split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Moves the calling thread (call it before any other thread exists, so every later
    /// thread inherits it) into a new network namespace. It is anonymous: it, the bridge
    /// in it and the veth ends on the bridge vanish with this process, however it ends.
    public static func unshareNetwork() throws(SpawnError) {
        typealias Unshare = @convention(c) (Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else {
            throw SpawnError("unshare(2) is not available")
        }
        let unshare = unsafeBitCast(symbol, to: Unshare.self)
        let CLONE_NEWNET: Int32 = 0x4000_0000
        guard unshare(CLONE_NEWNET) == 0 else {
            throw SpawnError("unshare(CLONE_NEWNET) failed: \(String(cString: strerror(errno)))")
        }
    }
}

