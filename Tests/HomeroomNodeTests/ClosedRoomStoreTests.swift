import Foundation
import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Testing
@testable import HomeroomNode

/// A closed class's room leaves the store (snapshot, log, sequence floor) with its
/// tombstone kept in the same transaction; tombstones survive a restart and stay bounded.
@Suite(.serialized) struct ClosedRoomStoreTests {
    static func directory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-closed-store-\(UInt32.random(in: 0...UInt32.max))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func node(_ name: String, _ directory: String, retentionSeconds: UInt64) throws -> ClusterNode {
        var config = NodeConfig(name: name, listen: "inproc://\(name)-rep-\(UInt32.random(in: 0...UInt32.max))",
                                publish: "inproc://\(name)-pub-\(UInt32.random(in: 0...UInt32.max))")
        config.dataDirectory = directory
        config.closedRoomRetentionSeconds = retentionSeconds
        let (logger, _) = Logger.capturing(label: name, level: .error)
        return try ClusterNode(config: config, logger: logger)
    }

    @Test func buryingRemovesEveryRowKeepsTheTombstoneAndDropsTheOnesPastTheBound() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/homeroom.sqlite3"
        var origin = Sequencer(replica: ReplicaID(3))
        func delta(_ counter: UInt64) -> Delta {
            origin.stamp(Write(author: "t", authorRole: .teacher, authorCounter: counter, operation: .setRoomName("R\(counter)")),
                         sequence: counter, nowMillis: 1_000 + counter)
        }
        do {
            let store = try NodeStore(path: path)
            try store.append(room: "gone", deltas: [delta(1), delta(2)])
            try store.compact(room: "gone", snapshot: WireCodec.encodePatch(RoomState(roomID: "gone")), upTo: store.logMark(room: "gone"), clock: 9)
            try store.append(room: "gone", deltas: [delta(3)])
            try store.handOff(room: "gone-too", floor: SequenceFloor(sequence: 4, privateSequence: 0, clock: 9))
            try store.append(room: "kept", deltas: [delta(4)])
            #expect(try store.rowCount(room: "gone") == 2, "a snapshot and a log entry")
            try store.bury(room: "gone", floor: SequenceFloor(sequence: 3, privateSequence: 1, clock: 9), removedAtMillis: 5_000, dropped: [])
            try store.bury(room: "gone-too", floor: SequenceFloor(sequence: 2, privateSequence: 0, clock: 8), removedAtMillis: 6_000, dropped: [])
            #expect(try store.rowCount(room: "gone") == 0 && store.rowCount(room: "gone-too") == 0)
            // The sequence floor stays (a handoff's kept the higher of the two), so an id
            // opened again after its tombstone goes numbers above every dot it used.
            #expect(try store.loadFloors()["gone"] == SequenceFloor(sequence: 3, privateSequence: 1, clock: 9))
            #expect(try store.loadFloors()["gone-too"] == SequenceFloor(sequence: 4, privateSequence: 0, clock: 9))
            #expect(try store.rowCount(room: "kept") == 1, "other rooms' rows stay")
            // A removal past the bound forgets the oldest tombstone in the same transaction.
            try store.bury(room: "third", floor: SequenceFloor(sequence: 1, privateSequence: 0, clock: 9), removedAtMillis: 7_000, dropped: ["gone"])
        }
        let reopened = try NodeStore(path: path)
        #expect(try reopened.loadTombstones() == ["gone-too": 6_000, "third": 7_000])
        #expect(try reopened.loadRooms().rooms.keys.sorted() == ["kept"])
        try reopened.forgetTombstones(["third"])
        #expect(try reopened.loadTombstones() == ["gone-too": 6_000])
    }

    /// The node's tick: a class ended with no close delay is closed at once; retention 0
    /// removes it at the next pass, rows and all, and a restart keeps refusing it.
    @Test func aNodeRemovesAClosedRoomAndStillRefusesItAfterARestart() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: ClusterNode? = try Self.node("closed-store", directory, retentionSeconds: 0)
        let node = first!
        #expect(node.join(room: "lab", user: "t", role: .teacher, session: "t1", name: "T").status == .accepted)
        #expect(node.join(room: "lab", user: "s", role: .student, session: "s1", name: "S").status == .accepted)
        for (counter, operation) in [Operation.setSchedule(Schedule(startMillis: 1, durationSeconds: 60, closeDelaySeconds: 0)),
                                     .setClassState(.during), .setClassState(.after)].enumerated() {
            #expect(node.submit(room: "lab", Write(author: "t", authorRole: .teacher, authorCounter: UInt64(10 + counter), operation: operation)).status == .accepted)
        }
        node.endClosedClasses()
        #expect(node.room("lab") == nil, "the closed room is still held")
        #expect(node.join(room: "lab", user: "s", role: .student, session: "s2", name: "S").errorCode == "room-closed")
        #expect(node.room("lab") == nil, "a refused join opened the room again")
        let store = try #require(node.state.withLock { $0.store })
        #expect(try store.rowCount(room: "lab") == 0)
        node.stop()
        first = nil
        let second = try Self.node("closed-store", directory, retentionSeconds: 0)
        defer { second.stop() }
        #expect(second.room("lab") == nil)
        #expect(second.join(room: "lab", user: "t", role: .teacher, session: "t9", name: "T").errorCode == "room-closed")
        #expect(second.state.withLock { $0.engine.tombstones.contains("lab") })
    }
}
