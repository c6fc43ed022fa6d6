import Foundation
import HomeroomCore
import Testing
@testable import HomeroomNode

@Suite(.serialized) struct StoreTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-store-\(UInt32.random(in: 0...UInt32.max))").path
    }

    static func node(_ name: String, _ directory: String) throws -> ClusterNode {
        var config = NodeConfig(name: name, listen: "inproc://\(name)-rep-\(UInt32.random(in: 0...UInt32.max))",
                                publish: "inproc://\(name)-pub-\(UInt32.random(in: 0...UInt32.max))")
        config.dataDirectory = directory
        let (logger, _) = Logger.capturing(label: name, level: .error)
        return try ClusterNode(config: config, logger: logger)
    }

    @Test func aLargeRoomSurvivesCompactionAndRestart() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let users = 25_000   // more ids than one message's default string table allows
        var first: ClusterNode? = try Self.node("store-a", directory)
        for index in 0..<users {
            _ = first!.join(room: "hall", user: "student-\(index)", role: .student, session: "s\(index)", name: "S\(index)")
        }
        _ = first!.submit(room: "hall", Write(author: "student-7", authorRole: .student, authorCounter: 1, operation: .setHand(user: "student-7", raised: true)))
        let before = first!.room("hall")
        first!.compactStore(force: true)
        _ = first!.submit(room: "hall", Write(author: "student-8", authorRole: .student, authorCounter: 1, operation: .setName(user: "student-8", name: "Eight")))
        first!.stop()
        first = nil
        let second = try Self.node("store-a", directory)
        defer { second.stop() }
        let after = try #require(second.room("hall"))
        #expect(after.users.count == users)
        #expect(after.raisedHands == ["student-7"])
        #expect(after.users["student-8"]?.name.value == "Eight")
        // The restart ended the old incarnation's sessions: nobody from before is online.
        #expect(!after.isOnline("student-1"))
        #expect(before?.users.count == users)
    }

    @Test func aCorruptStoreIsRefusedWithWhatToDo() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data((0..<4096).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: directory + "/homeroom.sqlite3"))
        do {
            _ = try Self.node("store-b", directory)
            Issue.record("a corrupt store was opened")
        } catch let error as NodeError {
            #expect(error.description.contains("corrupt or not a Homeroom database"))
            #expect(error.description.contains("move the file"))
        }
        // Nothing was reset: the bad file is still there, untouched.
        #expect(FileManager.default.fileExists(atPath: directory + "/homeroom.sqlite3"))
    }

    @Test func aDataDirectoryBelongsToOneNode() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Self.node("owner", directory).stop()
        #expect(throws: NodeError.self) { _ = try Self.node("intruder", directory) }
    }
}
