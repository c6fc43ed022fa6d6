import HomeroomTestSupport
import Foundation
import HomeroomCore
import Testing

/// A room used for a semester, from outside: thousands of one-shot commands against a
/// real node process with a store, then a kill -9 and a restart.
@Suite(.serialized) struct LifetimeProcessTests {
    static let oneShots = ProcessInfo.processInfo.environment["HOMEROOM_ONESHOTS"].flatMap(Int.init) ?? 2_000

    static func temporaryDirectory(_ label: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
    }

    /// Bytes the node sent in replies for one `homeroom roster --json` (its join reply,
    /// syncs and leave): what a newcomer to the room downloads.
    static func rosterReplyBytes(_ node: NodeProcess, _ room: [String]) throws -> Double {
        let before = try #require(node.metric("homeroom_reply_bytes_total"))
        let roster = try CLI.run(["roster", "--json"] + room)
        #expect(roster.status == 0, "roster failed: \(roster.stderr)")
        let after = try #require(node.metric("homeroom_reply_bytes_total"))
        return after - before
    }

    @Test func thousandsOfOneShotsKeepTheRoomJoinableSmallAndTheNodeRestartable() throws {
        let data = Self.temporaryDirectory("semester")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let store = ["--data-dir", data, "--http", "http://127.0.0.1:0"]
        var node = try NodeChild(name: "semester", extra: store)
        defer { node.stop() }
        let room = ["--room", "semester", "--node", node.listen]
        #expect(try CLI.run(["hand", "up", "--user", "bob"] + room).status == 0)

        var sizeAfterTen = 0.0
        let started = Date()
        for index in 1...Self.oneShots {
            // Each one-shot is a join, one write and a leave, by bob or by the teacher:
            // both users gather thousands of sessions. The writes are registers (their
            // size does not grow), so the room should not grow either.
            let words = index % 2 == 0 ? ["hand", "up", "--user", "bob"] : ["hand", "down", "bob"]
            let result = try CLI.run(words + room)
            guard result.status == 0 else {
                Issue.record("one-shot \(index) failed: \(result.stderr)")
                return
            }
            if index == 10 { sizeAfterTen = try Self.rosterReplyBytes(node, room) }
        }
        // At rest, the node folds every ended session (docs/ARCHITECTURE.md, "Lifetime").
        usleep(useconds_t((RoomState.sessionFoldQuietMillis + 2_000) * 1_000))
        let sizeAtEnd = try Self.rosterReplyBytes(node, room)
        print("lifetime: \(Self.oneShots) one-shots in \(Int(Date().timeIntervalSince(started))) s; roster download \(Int(sizeAfterTen)) B after 10, \(Int(sizeAtEnd)) B at the end; folds \(node.metric("homeroom_session_folds_total") ?? -1)")
        #expect(sizeAfterTen > 0)
        #expect(sizeAtEnd <= sizeAfterTen * 1.2, "the room grew from \(sizeAfterTen) to \(sizeAtEnd) bytes with the number of sessions")
        #expect((node.metric("homeroom_session_folds_total") ?? 0) >= Double(Self.oneShots / 8 / 2), "the node did not fold the ended sessions")

        // kill -9, then a restart on the same store: it loads, and the room is joinable.
        node.crash()
        node = try NodeChild(name: "semester", extra: store)
        let restarted = ["--room", "semester", "--node", node.listen]
        let roster = try CLI.run(["roster", "--json"] + restarted)
        #expect(roster.status == 0, "the room is not joinable after a restart: \(roster.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        #expect(json["hands"] as? [String] == (Self.oneShots % 2 == 0 ? ["bob"] : []))
        #expect(node.get("/healthz")?.body.contains("\"quarantined\":[]") == true)
        #expect(!node.log.contains("Fatal error"))
    }

    /// Two clients of one author (two `homeroom reward` processes as the same teacher)
    /// rewarding at the same moment, sixty times: every acknowledged reward counts.
    @Test func twoClientsOfOneAuthorRewardingAtOnceBothCount() throws {
        let node = try NodeChild(name: "counters")
        let room = ["--room", "counters", "--node", node.listen]
        #expect(try CLI.run(["hand", "up", "--user", "bob"] + room).status == 0)
        let pairs = 60
        let acknowledged = Counter()
        for _ in 0..<pairs {
            DispatchQueue.concurrentPerform(iterations: 2) { _ in
                if let result = try? CLI.run(["reward", "bob"] + room), result.status == 0 { acknowledged.add() }
            }
        }
        let roster = try CLI.run(["roster", "--json"] + room)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        let bob = try #require((json["students"] as? [[String: Any]])?.first { $0["user"] as? String == "bob" })
        #expect(acknowledged.value == 2 * pairs, "some rewards were not acknowledged")
        #expect(bob["rewards"] as? Int == acknowledged.value, "\(acknowledged.value) acknowledged, \(bob["rewards"] ?? "none") counted")
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.lock(); count += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    }
}
