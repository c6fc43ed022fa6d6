import Foundation
import Testing

/// Runs the built `homeroom` binary and checks stdout, stderr and exit codes.
@Suite struct CLIUsageTests {
    static var binary: String? {
        if let path = ProcessInfo.processInfo.environment["HOMEROOM_BIN"] { return path }
        let path = FileManager.default.currentDirectoryPath + "/.build/debug/homeroom"
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        guard let binary else { throw CLIError("no homeroom binary: run `swift build` first (or set HOMEROOM_BIN)") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    @Test func helpIsOnStdoutAndExitsZero() throws {
        let result = try Self.run(["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("OVERVIEW:") && result.stdout.contains("USAGE:") && result.stdout.contains("SUBCOMMANDS:"))
    }

    @Test func unknownSubcommandIsAUsageError() throws {
        let result = try Self.run(["frobnicate"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: unknown subcommand 'frobnicate'"))
        #expect(result.stderr.contains("USAGE:"))
        #expect(result.stdout.isEmpty)
    }

    @Test func aMistypedSubcommandGetsTheNearestOneSuggested() throws {
        let result = try Self.run(["rostr"])
        #expect(result.status == 64)
        #expect(result.stderr.hasPrefix("Error: unknown subcommand 'rostr': did you mean 'roster'?"))
        let verb = try Self.run(["rewrad"])
        #expect(verb.stderr.contains("did you mean 'reward'?"))
        let far = try Self.run(["frobnicate"])
        #expect(!far.stderr.contains("did you mean"), "nothing is near 'frobnicate'")
    }

    @Test func versionPrintsTheBuildAndTheWireProtocol() throws {
        let result = try Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("homeroom ") && result.stdout.contains("(wire protocol 1)"))
    }

    @Test func badNodeAddressSaysWhatToFix() throws {
        let result = try Self.run(["node", "--name", "x", "--listen", "http://nope", "--publish", "tcp://127.0.0.1:1"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("must start with tcp://, ipc:// or inproc://"))
    }

    @Test func missingConfigFileIsAFailure() throws {
        let result = try Self.run(["node", "--config", "/nonexistent/homeroom.json"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("cannot read config file /nonexistent/homeroom.json"))
    }
}

struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
