import Foundation
#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// A `homeroom node` child process, started with posix_spawn (Foundation's Process),
/// never fork: nng is not fork-safe. Stopped (SIGTERM, then SIGKILL) on `stop()` or deinit.
/// Shared by the node and CLI test targets.
public final class NodeProcess {
    public let process = Process()
    public let name: String
    public private(set) var listen = ""
    public private(set) var publish = ""
    /// The /healthz and /metrics base URL, when started with --http.
    public private(set) var http = ""
    /// The node's ready line on stdout (JSON: event, name, listen, publish, replica).
    public private(set) var readyLine = ""
    private let stdout = Pipe()
    private let stderrFile: URL

    public static var binary: URL? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["HOMEROOM_BIN"] { return URL(fileURLWithPath: path) }
        let candidates = [".build/debug/homeroom", ".build/release/homeroom"]
        return candidates.map { URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent($0) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Starts a node on 127.0.0.1 ephemeral ports and waits for its ready line: at once on
    /// an idle machine (well under a second), 30 s at most on a loaded one.
    public init(name: String, seeds: [String] = [], heartbeatMillis: Int = 100, suspectMillis: Int? = nil, downMillis: Int? = nil,
                logLevel: String = "notice", listen: String = "tcp://127.0.0.1:0", publish: String = "tcp://127.0.0.1:0",
                extra: [String] = []) throws {
        guard let binary = Self.binary else {
            throw NodeProcessError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)")
        }
        self.name = name
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(name)-\(UInt32.random(in: 0...UInt32.max)).log")
        FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process.executableURL = binary
        process.arguments = ["node", "--name", name, "--listen", listen, "--publish", publish,
                             "--heartbeat-ms", "\(heartbeatMillis)", "--suspect-ms", "\(suspectMillis ?? heartbeatMillis * 5)",
                             "--down-ms", "\(downMillis ?? heartbeatMillis * 15)", "--log-level", logLevel]
            + seeds.flatMap { ["--seed", $0] } + extra
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        // The ready line carries the bound addresses.
        guard let line = readLine(timeoutSeconds: 30),
              let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
              let listen = json["listen"], let publish = json["publish"] else {
            stop()
            throw NodeProcessError("node \(name) did not become ready; its log: \(log)")
        }
        self.readyLine = line
        self.listen = listen
        self.publish = publish
        self.http = json["http"] ?? ""
    }

    private func readLine(timeoutSeconds: Double) -> String? {
        let handle = stdout.fileHandleForReading
        var buffer = Data()
        let deadline = Date().addingTimeInterval(timeoutSeconds)
        while Date() < deadline {
            var poll = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 100) > 0 else { continue }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            buffer.append(chunk)
            if let newline = buffer.firstIndex(of: 0x0A) { return String(decoding: buffer[..<newline], as: UTF8.self) }
        }
        return nil
    }

    /// GET a path from the node's HTTP endpoint (plain sockets: no curl needed).
    public func get(_ path: String) -> (status: Int, body: String)? {
        guard let portText = http.split(separator: ":").last, let port = UInt16(portText) else { return nil }
        guard let connection = RawConnection(port: port) else { return nil }
        defer { connection.close() }
        connection.write(Array("GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        let response = connection.read(Int.max)
        let text = String(decoding: response, as: UTF8.self)
        guard let statusLine = text.split(separator: "\r\n").first, let code = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else { return nil }
        let body = text.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (code, body)
    }

    /// One metric's value from /metrics (the exact series name, labels included).
    public func metric(_ series: String) -> Double? {
        guard let (_, body) = get("/metrics") else { return nil }
        for line in body.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// Open descriptors of the node process (from /proc), or -1 once it is gone.
    public var descriptors: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/fd").count) ?? -1
    }

    /// Threads of the node process (from /proc), or -1 once it is gone.
    public var threads: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(process.processIdentifier)/task").count) ?? -1
    }

    public var log: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    public func signal(_ number: Int32) { if process.isRunning { kill(process.processIdentifier, number) } }

    /// Whether the process `pid` has a handler installed for `signal` (SigCgt in
    /// /proc/<pid>/status): a test waits for this before sending a signal the program
    /// catches, instead of sleeping and hoping its start-up got that far.
    public static func catches(_ signal: Int32, pid: Int32) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
              let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16) else { return false }
        return mask & (1 << UInt64(signal - 1)) != 0
    }

    /// SIGKILL: no goodbye, no flush.
    public func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: stderrFile)
    }
}

public struct NodeProcessError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
