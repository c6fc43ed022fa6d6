import Glibc
import Testing
@testable import HomeroomCore

/// Breakout groups: the registry in the main room, its bounds, and what an end does to
/// writes that arrive late, in every order.
@Suite struct BreakoutTests {
    typealias Node = LockTests.Node
    static let now = LockTests.now

    /// A small classroom with a teacher and `students` students, on node n1.
    static func classroom(students: Int) -> Node {
        var node = Node("n1")
        _ = node.write("tom", .teacher, .joinSession(user: "tom", session: "tom-1", name: "Tom", role: .teacher, host: node.sequencer.replica, incarnation: 1), at: now)
        for index in 1...students {
            let user = "s\(index)"
            _ = node.write(user, .student, .joinSession(user: user, session: "\(user)-1", name: user, role: .student, host: node.sequencer.replica, incarnation: 1), at: now)
        }
        return node
    }

    @Test func groupsHoldMembersAndTheRosterShowsWhoIsWhere() throws {
        var node = Self.classroom(students: 4)
        _ = try node.write("tom", .teacher, .setBreakoutGroup(id: "g1", name: "Red"), at: Self.now + 1).get()
        _ = try node.write("tom", .teacher, .setBreakoutGroup(id: "g2", name: "Blue"), at: Self.now + 2).get()
        for (user, group) in [("s1", "g1"), ("s2", "g2"), ("s3", "g1")] {
            _ = try node.write("tom", .teacher, .assignBreakoutGroup(user: user, group: group), at: Self.now + 3).get()
        }
        let groups = node.room.breakout
        #expect(groups.map(\.id) == ["g1", "g2"] && groups.map(\.name) == ["Red", "Blue"])
        #expect(groups[0].members == ["s1", "s3"] && groups[1].members == ["s2"] && groups[0].roomID == "r:g1")
        let roster = node.room.roster()
        #expect(roster.breakout == groups)
        #expect(Dictionary(uniqueKeysWithValues: roster.rows.map { ($0.user, $0.group) }) == ["tom": nil, "s1": "g1", "s2": "g2", "s3": "g1", "s4": nil])
        // Back to the main room; a removed group takes its members with it.
        _ = try node.write("tom", .teacher, .assignBreakoutGroup(user: "s3", group: nil), at: Self.now + 4).get()
        _ = try node.write("tom", .teacher, .setBreakoutGroup(id: "g2", name: nil), at: Self.now + 5).get()
        #expect(node.room.breakout.map(\.id) == ["g1"] && node.room.breakoutGroup(of: "s2") == nil && node.room.breakoutGroup(of: "s3") == nil)
        #expect(Breakout.parse(roomID: "maths:g1")! == ("maths", "g1") && Breakout.parse(roomID: "maths") == nil)
    }

    @Test func boundsAuthorityAndRoomTypesAreChecked() throws {
        var node = Self.classroom(students: 18)
        func code(_ result: Result<Delta, WriteError>) -> String? { node.refusalCode(result) }
        #expect(code(node.write("s1", .student, .setBreakoutGroup(id: "g1", name: "Mine"), at: Self.now + 1)) == "not-allowed")
        #expect(code(node.write("tom", .teacher, .setBreakoutGroup(id: "Bad Id", name: "x"), at: Self.now + 1)) == "not-allowed")
        #expect(code(node.write("tom", .teacher, .assignBreakoutGroup(user: "s1", group: "g1"), at: Self.now + 1)) == "invalid")
        for index in 1...Breakout.maxGroups { _ = try node.write("tom", .teacher, .setBreakoutGroup(id: "g\(index)", name: "G\(index)"), at: Self.now + 2).get() }
        #expect(code(node.write("tom", .teacher, .setBreakoutGroup(id: "g21", name: "one more"), at: Self.now + 3)) == "limit-reached")
        _ = try node.write("tom", .teacher, .setBreakoutGroup(id: "g20", name: "renamed"), at: Self.now + 3).get()
        for index in 1...Breakout.maxMembers { _ = try node.write("tom", .teacher, .assignBreakoutGroup(user: "s\(index)", group: "g1"), at: Self.now + 4).get() }
        #expect(code(node.write("tom", .teacher, .assignBreakoutGroup(user: "s18", group: "g1"), at: Self.now + 5)) == "limit-reached")
        #expect(code(node.write("tom", .teacher, .assignBreakoutGroup(user: "nobody", group: "g2"), at: Self.now + 5)) == "user-not-found")
        // Moving a member within its group is no new member.
        _ = try node.write("tom", .teacher, .assignBreakoutGroup(user: "s1", group: "g1"), at: Self.now + 6).get()
        var hall = Self.classroom(students: 1)
        _ = try hall.write("tom", .teacher, .setRoomType(.lectureHall), at: Self.now + 1).get()
        #expect(hall.refusalCode(hall.write("tom", .teacher, .setBreakoutGroup(id: "g1", name: "x"), at: Self.now + 2)) == "invalid")
    }

    /// An end voids what was written before it: two nodes, one ends the groups while the
    /// other (cut off) still moves students; after the heal both agree in either order,
    /// keeping only what was written after the end.
    @Test func anEndVoidsEarlierWritesOnEveryReplicaWhateverArrivesLate() throws {
        var a = Self.classroom(students: 3)
        _ = try a.write("tom", .teacher, .setBreakoutGroup(id: "g1", name: "Red"), at: Self.now + 1).get()
        _ = try a.write("tom", .teacher, .assignBreakoutGroup(user: "s1", group: "g1"), at: Self.now + 2).get()
        var b = Node("n2", room: a.room)
        // Cut off: b moves s2 into g1 (before the end, by the clock); a ends everything, then starts g5.
        let early = try b.write("tom", .teacher, .assignBreakoutGroup(user: "s2", group: "g1"), at: Self.now + 3).get()
        _ = try a.write("tom", .teacher, .endBreakout, at: Self.now + 10).get()
        #expect(a.room.breakout.isEmpty && a.room.breakoutAssignments.isEmpty && a.room.breakoutGroups.isEmpty)
        _ = try a.write("tom", .teacher, .setBreakoutGroup(id: "g5", name: "Later"), at: Self.now + 11).get()
        _ = try a.write("tom", .teacher, .assignBreakoutGroup(user: "s3", group: "g5"), at: Self.now + 12).get()
        // Heal both ways: by patch, and by the late delta alone.
        var viaPatch = a.room
        viaPatch.merge(b.room.missing(since: viaPatch.seen))
        var viaDelta = a.room
        _ = viaDelta.apply(early)
        b.room.merge(a.room.missing(since: b.room.seen))
        #expect(viaPatch == b.room && viaDelta.breakoutAssignments == b.room.breakoutAssignments)
        for room in [viaPatch, b.room, viaDelta] {
            #expect(room.breakout.map(\.id) == ["g5"] && room.breakout[0].members == ["s3"])
            #expect(room.breakoutGroup(of: "s2") == nil && room.breakoutAssignments["s2"] == nil)
        }
        // A snapshot keeps exactly that.
        #expect(viaPatch.snapshot() == viaPatch && viaPatch.missing(since: .empty).breakoutGroups == viaPatch.breakoutGroups)
    }
}

/// Seeded schedules of three nodes that split and heal while teachers create, remove,
/// fill and end groups. The oracle comes from the accepted writes alone: after the final
/// heal every replica is equal, and each user's group is the latest accepted assignment
/// stamped after the latest accepted end, if it names a group whose latest write after
/// that end gave it a name.
@Suite struct BreakoutScheduleTests {
    @Test func randomSplitsAgreeOnWhoIsInWhichGroup() {
        let replay = getenv("HOMEROOM_SEED").flatMap { UInt64(String(cString: $0)) }
        let first = replay ?? 20_261_203
        let count = replay == nil ? 300 : 1
        var endsSeen = 0, groupsSeen = 0
        for seed in first..<(first + UInt64(count)) {
            var rng = SplitMix64(seed: seed)
            let start = BreakoutTests.classroom(students: 6)
            var nodes = [start, LockTests.Node("n2", room: start.room), LockTests.Node("n3", room: start.room)]
            var accepted: [Delta] = []
            var side: Int?
            var now = BreakoutTests.now + 100
            for _ in 0..<150 {
                now += UInt64.random(in: 1...50, using: &rng)
                let roll = Int.random(in: 0..<100, using: &rng)
                if roll < 6 { side = side == nil ? Int.random(in: 0..<3, using: &rng) : nil; continue }
                if roll < 40 {
                    let x = Int.random(in: 0..<3, using: &rng), y = Int.random(in: 0..<3, using: &rng)
                    if x != y && (side == nil || (x == side) == (y == side)) { nodes[y].room.merge(nodes[x].room.missing(since: nodes[y].room.seen)) }
                    continue
                }
                let group = "g\(Int.random(in: 1...3, using: &rng))"
                let operation: Operation
                switch Int.random(in: 0..<20, using: &rng) {
                case 0..<5: operation = .setBreakoutGroup(id: group, name: rng.chance(80) ? "Group \(group)" : nil)
                case 5..<19: operation = .assignBreakoutGroup(user: "s\(Int.random(in: 1...6, using: &rng))", group: rng.chance(85) ? group : nil)
                default: operation = .endBreakout
                }
                let node = Int.random(in: 0..<3, using: &rng)
                if case let .success(delta) = nodes[node].write("tom", .teacher, operation, at: now) { accepted.append(delta) }
            }
            for _ in 0..<2 { for x in 0..<3 { for y in 0..<3 where x != y { nodes[y].room.merge(nodes[x].room.missing(since: nodes[y].room.seen)) } } }
            // The oracle.
            let end = accepted.filter { $0.operation == .endBreakout }.map(\.stamp).max() ?? .origin
            var names: [String: (Stamp, String?)] = [:], places: [UserID: (Stamp, String?)] = [:]
            for delta in accepted where end < delta.stamp {
                switch delta.operation {
                case let .setBreakoutGroup(id, name): if names[id].map({ $0.0 < delta.stamp }) ?? true { names[id] = (delta.stamp, name) }
                case let .assignBreakoutGroup(user, group): if places[user].map({ $0.0 < delta.stamp }) ?? true { places[user] = (delta.stamp, group) }
                default: break
                }
            }
            var problems: [String] = []
            if nodes[1].room != nodes[0].room || nodes[2].room != nodes[0].room { problems.append("replicas differ after the heal") }
            for user in (1...6).map({ "s\($0)" }) {
                let expected = places[user]?.1.flatMap { names[$0]?.1 != nil ? $0 : nil }
                if nodes[0].room.breakoutGroup(of: user) != expected {
                    problems.append("\(user) is in \(nodes[0].room.breakoutGroup(of: user) ?? "the main room"), the writes say \(expected ?? "the main room")")
                }
            }
            if end != .origin { endsSeen += 1 }
            groupsSeen += nodes[0].room.breakout.count
            if !problems.isEmpty {
                Issue.record("seed \(seed): \(problems.joined(separator: "; "))\nreplay: HOMEROOM_SEED=\(seed) swift test --filter BreakoutScheduleTests")
                return
            }
        }
        #expect(endsSeen > count / 4 && groupsSeen > count / 2, "ends \(endsSeen), groups \(groupsSeen)")
    }
}
