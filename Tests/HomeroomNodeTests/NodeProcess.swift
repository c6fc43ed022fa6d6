import Foundation
import HomeroomNode

/// A `homeroom node` child process, started with posix_spawn (Foundation's Process),
/// never fork: nng is not fork-safe. Stopped (SIGTERM, then SIGKILL) on `stop()` or deinit.
final class NodeProcess {
    let process = Process()
    let name: String
    private(set) var listen = ""
    private(set) var publish = ""
    private let stdout = Pipe()
    private let stderrFile: URL

    static var binary: URL? {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["HOMEROOM_BIN"] { return URL(fileURLWithPath: path) }
        let candidates = [".build/debug/homeroom", ".build/release/homeroom"]
        return candidates.map { URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent($0) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    init(name: String, seeds: [String], heartbeatMillis: Int = 100, extra: [String] = []) throws {
        guard let binary = Self.binary else {
            throw NodeProcessError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)")
        }
        self.name = name
        stderrFile = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(name)-\(UInt32.random(in: 0...UInt32.max)).log")
        FileManager.default.createFile(atPath: stderrFile.path, contents: nil)
        process.executableURL = binary
        process.arguments = ["node", "--name", name, "--listen", "tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0",
                             "--heartbeat-ms", "\(heartbeatMillis)", "--suspect-ms", "\(heartbeatMillis * 5)",
                             "--down-ms", "\(heartbeatMillis * 15)", "--log-level", "notice"]
            + seeds.flatMap { ["--seed", $0] } + extra
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: stderrFile)
        try process.run()
        // The ready line carries the bound addresses.
        guard let line = readLine(timeoutSeconds: 10),
              let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
              let listen = json["listen"], let publish = json["publish"] else {
            stop()
            throw NodeProcessError("node \(name) did not become ready; its log: \(log)")
        }
        self.listen = listen
        self.publish = publish
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

    var log: String { (try? String(contentsOf: stderrFile, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { if process.isRunning { kill(process.processIdentifier, number) } }

    /// SIGKILL: no goodbye, no flush.
    func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func stop() {
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

struct NodeProcessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
