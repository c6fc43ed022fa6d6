import Foundation
import HomeroomCore
import HomeroomWire
import Testing

/// Golden vectors live in Proto/golden (part of the public contract).
/// Regenerate after an intended format change with
///     HOMEROOM_UPDATE_GOLDEN=1 swift test --filter HomeroomWireTests.GoldenTests
/// and review the diff of the .txt files.
@Suite("Golden vectors")
struct GoldenTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let directory = root.appendingPathComponent("Proto/golden")
    static let updating = ProcessInfo.processInfo.environment["HOMEROOM_UPDATE_GOLDEN"] == "1"

    static func read(_ name: String, _ suffix: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent("\(name).\(suffix)"))
    }

    static func protocPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/protoc"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// `protoc --decode=homeroom.v1.Envelope` of `bytes`, as text.
    static func protocDecode(_ protoc: String, _ bytes: Data) throws -> String {
        let protos = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Proto/homeroom/v1").path)
            .filter { $0.hasSuffix(".proto") }.sorted().map { "homeroom/v1/\($0)" }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-golden-\(UUID().uuidString).bin")
        try bytes.write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: protoc)
        process.arguments = ["--decode=homeroom.v1.Envelope", "-I", root.appendingPathComponent("Proto").path] + protos
        process.currentDirectoryURL = root.appendingPathComponent("Proto")
        process.standardInput = try FileHandle(forReadingFrom: input)
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let text = output.fileHandleForReading.readDataToEndOfFile()
        let problems = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw NSError(domain: "protoc", code: Int(process.terminationStatus),
                          userInfo: [NSLocalizedDescriptionKey: String(decoding: problems, as: UTF8.self)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    @Test("regenerate the golden files (only with HOMEROOM_UPDATE_GOLDEN=1)", .enabled(if: GoldenTests.updating))
    func update() throws {
        try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
        let protoc = Self.protocPath()
        for (name, envelope) in Golden.vectors {
            let bytes = Data(WireCodec.encode(envelope))
            try bytes.write(to: Self.directory.appendingPathComponent("\(name).bin"))
            if let protoc {
                try Data(Self.protocDecode(protoc, bytes).utf8).write(to: Self.directory.appendingPathComponent("\(name).txt"))
            }
        }
    }

    @Test("each golden vector decodes to its expected value, and encodes back to the same bytes",
          .disabled(if: GoldenTests.updating), arguments: Golden.vectors.map(\.name))
    func decodeAndEncode(name: String) throws {
        let expected = try #require(Golden.vectors.first { $0.name == name }?.envelope)
        let bytes = [UInt8](try Self.read(name, "bin"))
        #expect(try WireCodec.decode(bytes) == expected)
        #expect(WireCodec.encode(expected) == bytes, "the encoding of \(name) changed: if intended, regenerate the golden files")
    }

    @Test("protoc --decode reads every golden vector as its stored text form",
          .disabled(if: GoldenTests.updating), arguments: Golden.vectors.map(\.name))
    func protocReadsThem(name: String) throws {
        guard let protoc = Self.protocPath() else {
            print("SKIPPED: protoc not found on PATH: install protobuf-compiler (Deploy/bootstrap.sh) to check golden vectors with protoc")
            return
        }
        let text = try Self.protocDecode(protoc, try Self.read(name, "bin"))
        let stored = String(decoding: try Self.read(name, "txt"), as: UTF8.self)
        #expect(text == stored)
    }

    @Test("the golden delta batch is compact")
    func compactBatch() throws {
        let bytes = WireCodec.encodeBatch(origin: Golden.nodeA, deltas: Golden.batchDeltas)
        // 5 deltas (one a join with a session id and a name, the first with a full clock), two interned ids.
        #expect(bytes.count <= 130)
    }
}
