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

    /// Bytes the node sent in replies for one `homeroom roster --json` (its first read
    /// and any later sync): what a newcomer to the room downloads. The least of three
    /// reads: a read that lives past a sync interval also gets an (empty) sync reply.
    static func rosterReplyBytes(_ node: NodeProcess, _ room: [String]) throws -> Double {
        var least = Double.infinity
        for _ in 0..<3 {
            let before = try #require(node.metric("homeroom_reply_bytes_total"))
            let roster = try CLI.run(["roster", "--json"] + room)
            #expect(roster.status == 0, "roster failed: \(roster.stderr)")
            let after = try #require(node.metric("homeroom_reply_bytes_total"))
            least = min(least, after - before)
        }
        return least
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
            // Most one-shots write without a session (bob's hand, by bob or the teacher);
            // every fourth sets bob's presence state, which needs a session: a join, one
            // write and a leave, so bob gathers hundreds of sessions. The writes are
            // registers (their size does not grow), so the room should not grow either.
            let words = index % 4 == 0 ? ["presence", "set", "mood", "\(index)", "--user", "bob"]
                : index % 2 == 0 ? ["hand", "up", "--user", "bob"] : ["hand", "down", "bob"]
            let result = try CLI.run(words + room)
            guard result.status == 0 else {
                Issue.record("one-shot \(index) failed: \(result.stderr)")
                return
            }
            if index == 10 { sizeAfterTen = try Self.rosterReplyBytes(node, room) }
        }
        // At rest, the node folds every ended session (docs/ARCHITECTURE.md, "Lifetime"):
        // after the quiet period, at its next look. Waited for (roster reads hold no
        // session, so they do not disturb the rest), bounded at 30 s past the quiet period.
        let foldsWanted = Double(Self.oneShots / 4 / 8 / 2)
        usleep(useconds_t(RoomState.sessionFoldQuietMillis * 1_000))
        var sizeAtEnd = 0.0
        _ = eventually(30) {
            sizeAtEnd = (try? Self.rosterReplyBytes(node, room)) ?? .infinity
            return sizeAtEnd <= sizeAfterTen * 1.2 && (node.metric("homeroom_session_folds_total") ?? 0) >= foldsWanted
        }
        print("lifetime: \(Self.oneShots) one-shots in \(Int(Date().timeIntervalSince(started))) s; roster download \(Int(sizeAfterTen)) B after 10, \(Int(sizeAtEnd)) B at the end; folds \(node.metric("homeroom_session_folds_total") ?? -1)")
        #expect(sizeAfterTen > 0)
        #expect(sizeAtEnd <= sizeAfterTen * 1.2, "the room grew from \(sizeAfterTen) to \(sizeAtEnd) bytes with the number of sessions")
        #expect((node.metric("homeroom_session_folds_total") ?? 0) >= foldsWanted, "the node did not fold the ended sessions")

        // kill -9, then a restart on the same store: it loads, and the room is joinable.
        node.crash()
        node = try NodeChild(name: "semester", extra: store)
        let restarted = ["--room", "semester", "--node", node.listen]
        let roster = try CLI.run(["roster", "--json"] + restarted)
        #expect(roster.status == 0, "the room is not joinable after a restart: \(roster.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        let lastHand = (1...Self.oneShots).last { $0 % 4 != 0 } ?? 0
        #expect(json["hands"] as? [String] == (lastHand % 2 == 0 ? ["bob"] : []))
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

    /// Rewards through two real nodes, each one-shot a reward by the teacher: the nodes
    /// fold them (a 1 s reward window), so the room a newcomer downloads stays the size
    /// it had after the first rewards, both nodes count every acknowledged reward, and
    /// the count survives a kill -9 and a restart from the store.
    @Test func rewardsFoldAcrossTwoNodesAndTheRoomStaysSmall() throws {
        let data = Self.temporaryDirectory("rewards")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let window = ["--reward-window-ms", "1000", "--max-clock-drift-ms", "1000"]
        let store = ["--data-dir", data, "--http", "http://127.0.0.1:0"] + window
        var a = try NodeChild(name: "rewards-a", extra: store)
        defer { a.stop() }
        let b = try NodeChild(name: "rewards-b", seeds: [a.listen], extra: ["--http", "http://127.0.0.1:0"] + window)
        defer { b.stop() }
        let onA = ["--room", "rewards", "--node", a.listen], onB = ["--room", "rewards", "--node", b.listen]
        #expect(try CLI.run(["hand", "up", "--user", "bob"] + onA).status == 0)
        func count(_ room: [String]) throws -> Int? {
            let roster = try CLI.run(["roster", "--json"] + room)
            guard roster.status == 0, let json = try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any] else { return nil }
            return (json["students"] as? [[String: Any]])?.first { $0["user"] as? String == "bob" }?["rewards"] as? Int
        }
        var acknowledged = 0
        func reward(_ times: Int) throws {
            for index in 0..<times {
                let result = try CLI.run(["reward", "bob"] + (index % 2 == 0 ? onA : onB))
                if result.status == 0 { acknowledged += 1 } else { Issue.record("reward \(index) failed: \(result.stderr)") }
            }
        }
        let settle = useconds_t((RoomState.rewardFoldQuietMillis + 3_000) * 1_000)
        try reward(20)
        usleep(settle)
        let sizeAfterTwenty = try Self.rosterReplyBytes(a, onA)
        try reward(Self.oneShots / 10)
        // Folded once the newest is quiet: waited for (roster reads add no reward), bounded
        // at 40 s past the quiet period.
        usleep(useconds_t(RoomState.rewardFoldQuietMillis * 1_000))
        var sizeAtEnd = 0.0
        _ = eventually(40) {
            sizeAtEnd = (try? Self.rosterReplyBytes(a, onA)) ?? .infinity
            return sizeAtEnd <= sizeAfterTwenty * 1.2
        }
        let folds = (a.metric("homeroom_reward_folds_total") ?? 0, b.metric("homeroom_reward_folds_total") ?? 0)
        print("lifetime: \(acknowledged) rewards through two nodes; roster download \(Int(sizeAfterTwenty)) B after 20, \(Int(sizeAtEnd)) B at the end; reward folds \(folds)")
        #expect(acknowledged == 20 + Self.oneShots / 10)
        #expect(folds.0 > 0 && folds.1 > 0, "both nodes fold the rewards they sequenced: \(folds)")
        #expect(sizeAtEnd <= sizeAfterTwenty * 1.2, "the room grew from \(sizeAfterTwenty) to \(sizeAtEnd) bytes with the number of rewards")
        let (countA, countB) = (try count(onA), try count(onB))
        #expect(countA == acknowledged, "node A counts \(String(describing: countA)), \(acknowledged) acknowledged")
        #expect(countB == acknowledged, "node B counts \(String(describing: countB)), \(acknowledged) acknowledged")

        a.crash()
        a = try NodeChild(name: "rewards-a", seeds: [b.listen], extra: store)
        let restarted = ["--room", "rewards", "--node", a.listen]
        let countRestarted = try count(restarted)
        #expect(countRestarted == acknowledged, "after kill -9 and a restart node A counts \(String(describing: countRestarted))")
        #expect(!a.log.contains("Fatal error") && !b.log.contains("Fatal error"))
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func add() { lock.lock(); count += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return count }
    }
}
