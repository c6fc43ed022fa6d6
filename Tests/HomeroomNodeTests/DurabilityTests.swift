import HomeroomTestSupport
import Foundation
import HomeroomCore
import Synchronization
import Testing
@testable import HomeroomNode

/// Real processes with SQLite stores: SIGKILL in the middle of acknowledged writes.
@Suite(.serialized) struct DurabilityTests {
    static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-durability-\(UInt32.random(in: 0...UInt32.max))").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func killedNodeLosesNoAcknowledgedWriteAndLeavesNoGhosts() throws {
        let data = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: data) }
        let a = try NodeProcess(name: "dur-a", seeds: [], extra: ["--data-dir", data + "/a"])
        let b = try NodeProcess(name: "dur-b", seeds: [a.listen], extra: ["--data-dir", data + "/b"])
        var c = try NodeProcess(name: "dur-c", seeds: [a.listen], extra: ["--data-dir", data + "/c"])
        defer { a.stop(); b.stop(); c.stop() }
        let (logger, _) = Logger.capturing(label: "dur", level: .error)
        var options = RoomClient.Options()
        options.syncIntervalMillis = 100
        options.requestTimeoutMillis = 400
        let room = "durable"
        let student = RoomClient(room: room, user: "sam", role: .student, name: "Sam", endpoints: [NodeEndpoint(a.listen)],
                                 options: options, logger: logger)
        let teacher = RoomClient(room: room, user: "tess", role: .teacher, name: "Tess",
                                 endpoints: [c, a, b].map { NodeEndpoint($0.listen) }, options: options, logger: logger)
        defer { student.close(); teacher.close() }
        try student.connect()
        #expect(eventually(5) { student.replica.users["sam"]?.isKnown == true })
        try teacher.connect()
        #expect(eventually(10) { teacher.replica.users["sam"]?.isKnown == true })

        var acknowledged: [Dot] = []
        var failed = 0
        for index in 0..<150 {
            if index == 60 { c.crash() }   // mid-burst, the teacher's own node
            do {
                acknowledged.append(try teacher.write(.reward(user: "sam", amount: 1)))
            } catch {
                failed += 1
            }
        }
        #expect(acknowledged.count >= 100, "too few writes acknowledged (\(acknowledged.count), \(failed) failed)")

        // Restart the killed node from its store.
        c = try NodeProcess(name: "dur-c", seeds: [a.listen], extra: ["--data-dir", data + "/c"])
        let observers = [a, b, c].enumerated().map { index, node in
            RoomClient(room: room, user: "observer-\(index)", role: .observer, name: "Observer", endpoints: [NodeEndpoint(node.listen)],
                       options: options, logger: logger)
        }
        defer { for observer in observers { observer.close() } }
        for observer in observers { try observer.connect() }
        let allPresent = eventually(15) {
            observers.allSatisfy { observer in
                let replica = observer.replica
                return acknowledged.allSatisfy { replica.seen.contains($0) }
                    && (replica.users["sam"]?.rewardTotal ?? 0) >= Int64(acknowledged.count)
            }
        }
        #expect(allPresent, "an acknowledged write is missing after the crash: \(observers.map { $0.replica.users["sam"]?.rewardTotal ?? -1 }) of \(acknowledged.count)")
        #expect(observers.allSatisfy { ($0.replica.users["sam"]?.rewardTotal ?? 0) <= 150 }, "a reward was counted twice")
        // No ghost: the teacher's session on the killed incarnation is over everywhere.
        let noGhosts = eventually(10) {
            observers.allSatisfy { observer in
                let replica = observer.replica
                guard let record = replica.users["tess"] else { return false }
                let live = record.sessions.filter { session in
                    session.ended == nil && !(replica.deadIncarnations[session.host].map { session.incarnation <= $0 } ?? false)
                }
                return live.count == 1
            }
        }
        #expect(noGhosts, "a session of the killed node is still live somewhere")
        #expect(!c.log.contains("Fatal error") && !a.log.contains("Fatal error") && !b.log.contains("Fatal error"))
    }
}
