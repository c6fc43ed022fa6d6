import Foundation
import HomeroomCore
import HomeroomWire
import Synchronization
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

    /// Snapshots are encoded and stored outside the state lock while writes go on: each
    /// covers the log only up to the position read with its copy of the room, so a
    /// write stored during the encode stays in the log. The node then dies without a
    /// final compaction (its store let go, as a crash would), and every acknowledged
    /// join must be there after the restart.
    @Test func writesStoredWhileASnapshotIsEncodedSurviveACrash() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: ClusterNode? = try Self.node("store-c", directory)
        let node = first!
        for index in 0..<5_000 {
            _ = node.join(room: "hall", user: "seat-\(index)", role: .student, session: "s\(index)", name: "Seat \(index)")
        }
        let writing = Atomic<Bool>(true)
        let acknowledged = Mutex<[UserID]>([])
        let writer = Thread {
            for index in 0..<3_000 {
                let user: UserID = "late-\(index)"
                if node.join(room: "hall", user: user, role: .student, session: "l\(index)", name: "Late \(index)").status == .accepted {
                    acknowledged.withLock { $0.append(user) }
                }
            }
            writing.store(false, ordering: .releasing)
        }
        writer.start()
        var compactions = 0
        var storedDuringWrites = 0
        while writing.load(ordering: .acquiring) && compactions < 10_000 {
            if case .stored = node.compact(room: "hall") { storedDuringWrites += 1 }
            compactions += 1
        }
        while writing.load(ordering: .acquiring) { usleep(1_000) }
        // A crash: nothing more reaches the store (no final compaction, no session ends).
        node.state.withLock { $0.store = nil }
        node.stop()
        first = nil
        let written = acknowledged.withLock { $0 }
        #expect(written.count == 3_000)
        #expect(storedDuringWrites >= 2, "the test must store snapshots while the writes run")
        let second = try Self.node("store-c", directory)
        defer { second.stop() }
        let after = try #require(second.room("hall"))
        let missing = written.filter { after.users[$0] == nil }
        #expect(missing.count == 0, "acknowledged joins lost after a crash, e.g. \(missing.prefix(5))")
        #expect(after.users.count == 8_000)
    }

    /// Two compactions of one room that finish out of order: the one taken earlier (it
    /// covers less of the log) changes nothing, so neither its snapshot nor its trim
    /// undoes the later one.
    @Test func anOlderSnapshotNeverReplacesANewerOne() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/homeroom.sqlite3"
        func delta(_ sequence: UInt64, _ user: UserID) -> Delta {
            Delta(sequence: sequence, clock: HybridTimestamp(millis: 1_000 + sequence, logical: 0, replica: ReplicaID(name: "writer")),
                  author: user, authorRole: .student, authorCounter: 0,
                  operation: .joinSession(user: user, session: "s\(sequence)", name: "N\(sequence)", role: .student, host: ReplicaID(name: "writer"), incarnation: 1))
        }
        var room = RoomState(roomID: "hall")
        let store = try NodeStore(path: path)
        for sequence in 1...3 as ClosedRange<UInt64> {
            let next = delta(sequence, "u\(sequence)")
            _ = room.apply(next)
            try store.append(room: "hall", deltas: [next])
        }
        let earlier = (room, store.logMark(room: "hall"))
        let fourth = delta(4, "u4")
        _ = room.apply(fourth)
        try store.append(room: "hall", deltas: [fourth])
        let later = (room, store.logMark(room: "hall"))
        #expect(try store.compact(room: "hall", snapshot: WireCodec.encodePatch(later.0.snapshot()), upTo: later.1, clock: 0))
        #expect(try !store.compact(room: "hall", snapshot: WireCodec.encodePatch(earlier.0.snapshot()), upTo: earlier.1, clock: 0))
        let loaded = try #require(try NodeStore(path: path).loadRooms().rooms["hall"])
        #expect(loaded.users["u4"]?.name.value == "N4")
        #expect(loaded.seen == later.0.seen)
    }

    /// A restart restores the clock the store vouches for: the highest reading in the log,
    /// and what each compaction kept of the clock when it trimmed the log. A write that
    /// leaves no stamp in the room (a `replica_down`) is still covered once trimmed.
    @Test func theStoreVouchesForEveryClockReadingItTrimmed() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/homeroom.sqlite3"
        let writer = ReplicaID(name: "writer")
        func down(_ sequence: UInt64, atMillis millis: UInt64) -> Delta {
            Delta(sequence: sequence, clock: HybridTimestamp(millis: millis, logical: 0, replica: writer),
                  author: "node:writer", authorRole: .system, authorCounter: 0,
                  operation: .replicaDown(replica: ReplicaID(name: "gone"), incarnation: sequence))
        }
        var room = RoomState(roomID: "hall")
        let store = try NodeStore(path: path)
        for (sequence, millis) in [(1, 5_000), (2, 9_000)] as [(UInt64, UInt64)] {
            let next = down(sequence, atMillis: millis)
            _ = room.apply(next)
            try store.append(room: "hall", deltas: [next])
        }
        let inLog = try NodeStore(path: path).loadRooms().clock
        #expect(inLog == HybridTimestamp(millis: 9_000, logical: 0, replica: writer).packed)
        // Trimmed, with the clock the node had when it copied the room (ahead of the log).
        let engineClock = HybridTimestamp(millis: 12_000, logical: 3, replica: writer).packed
        #expect(try store.compact(room: "hall", snapshot: WireCodec.encodePatch(room.snapshot()), upTo: store.logMark(room: "hall"), clock: engineClock))
        let reopened = try NodeStore(path: path).loadRooms()
        #expect(reopened.clock == engineClock, "the trimmed readings must still be vouched for")
        // The room alone keeps no stamp of these writes: without the kept clock a restart
        // would stamp its next write below them.
        #expect(reopened.rooms["hall"]?.highestClock(writtenBy: [writer]) ?? 0 < inLog)
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
