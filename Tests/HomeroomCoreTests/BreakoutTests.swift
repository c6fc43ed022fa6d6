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
