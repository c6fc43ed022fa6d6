import Testing
import HomeroomCore
@testable import HomeroomEngine

/// The node's policy for closed classes: which sessions each node ends once the room
/// closes, when the room is removed, and that its tombstone refuses everything after.
@Suite struct ClosedRoomEngineTests {
    static let room = "closing-room"
    static let start: UInt64 = 1_800_000_000_000

    @discardableResult
    static func write(_ engine: inout NodeEngine, _ author: UserID, _ role: Role, _ operation: Operation, now: UInt64, room: String = room) -> Delta? {
        let write = Write(author: author, authorRole: role, authorCounter: now, operation: operation)
        guard case let .persist(stamped) = engine.decide(room: room, write, nowMillis: now) else { return nil }
        return engine.commit(stamped).delta
    }

    static func join(_ user: UserID, _ role: Role, at engine: NodeEngine) -> Operation {
        .joinSession(user: user, session: "\(user)#1", name: user, role: role, host: engine.replica, incarnation: 0)
    }

    /// Node 1 hosts the teacher, node 2 a student; the teacher ends the class with a 10 s
    /// close delay; both nodes hold every write. Returns when the room closes.
    static func endedClass() throws -> (first: NodeEngine, second: NodeEngine, closesAt: UInt64, firstDeltas: [Delta], secondDeltas: [Delta]) {
        var first = NodeEngine(replica: ReplicaID(1)), second = NodeEngine(replica: ReplicaID(2))
        var now = start
        var ones: [Delta] = [], twos: [Delta] = []
        ones.append(try #require(write(&first, "t", .teacher, join("t", .teacher, at: first), now: now)))
        _ = second.applyRemote(room: room, ones, origin: first.replica, nowMillis: now)
        now += 10
        twos.append(try #require(write(&second, "s", .student, join("s", .student, at: second), now: now)))
        _ = first.applyRemote(room: room, twos, origin: second.replica, nowMillis: now)
        var more: [Delta] = []
        for operation in [Operation.setSchedule(Schedule(startMillis: start, durationSeconds: 600, closeDelaySeconds: 10)),
                          .setClassState(.during), .setClassState(.after)] {
            now += 10
            more.append(try #require(write(&first, "t", .teacher, operation, now: now)))
        }
        _ = second.applyRemote(room: room, more, origin: first.replica, nowMillis: now)
        ones += more
        let closesAt = try #require(first.rooms[room]?.closesAtMillis)
        #expect(second.rooms[room]?.closesAtMillis == closesAt, "both replicas name the same closing")
        return (first, second, closesAt, ones, twos)
    }

    @Test func eachNodeEndsOnlyTheSessionsItHostsOnceTheRoomCloses() throws {
        var (first, second, closesAt, _, _) = try Self.endedClass()
        #expect(first.sessionsToEndInClosedRooms(nowMillis: closesAt - 1).isEmpty)
        #expect(second.sessionsToEndInClosedRooms(nowMillis: closesAt - 1).isEmpty)
        let firstDue = first.sessionsToEndInClosedRooms(nowMillis: closesAt)
        let secondDue = second.sessionsToEndInClosedRooms(nowMillis: closesAt)
        #expect(firstDue.map(\.user) == ["t"] && firstDue.map(\.session) == ["t#1"])
        #expect(secondDue.map(\.user) == ["s"] && secondDue.map(\.session) == ["s#1"])
        // The leave is a system write (no admission: the room refuses clients now); once
        // applied, nothing is left to end.
        let leave = Write(author: "node:1", authorRole: .system, authorCounter: 0, operation: .leaveSession(user: "t", session: "t#1"))
        let stamped = try #require(first.stampSystemWrite(room: Self.room, leave, nowMillis: closesAt))
        _ = first.commit(stamped)
        #expect(first.sessionsToEndInClosedRooms(nowMillis: closesAt + 1).isEmpty)
        #expect(first.rooms[Self.room]?.hasLiveSession == true, "the student's session is node 2's to end")
        for due in secondDue {
            let write = Write(author: "node:2", authorRole: .system, authorCounter: 0, operation: .leaveSession(user: due.user, session: due.session))
            _ = second.commit(try #require(second.stampSystemWrite(room: due.room, write, nowMillis: closesAt)))
        }
        #expect(second.sessionsToEndInClosedRooms(nowMillis: closesAt + 1).isEmpty)
        // A client's write, a rejoin included, is refused.
        guard case let .answer(outcome) = second.decide(room: Self.room, Write(author: "s", authorRole: .student, authorCounter: 99,
                                                                               operation: Self.join("s", .student, at: second)), nowMillis: closesAt + 1) else {
            Issue.record("a rejoin of a closed room was admitted")
            return
        }
        #expect(outcome.code == "room-closed")
    }

    @Test func aClosedRoomIsRemovableOnlyAfterTheRetention() throws {
        let (first, _, closesAt, _, _) = try Self.endedClass()
        #expect(first.closedRoomsToRemove(nowMillis: closesAt + 59_999, retentionMillis: 60_000).isEmpty)
        #expect(first.closedRoomsToRemove(nowMillis: closesAt + 60_000, retentionMillis: 60_000) == [Self.room])
        #expect(first.closedRoomsToRemove(nowMillis: closesAt - 1, retentionMillis: 0).isEmpty)
    }

    @Test func aTombstonedRoomRefusesJoinsAndIgnoresLateDeltasAndPatches() throws {
        var (first, second, closesAt, _, secondDeltas) = try Self.endedClass()
        let removedAt = closesAt + 60_000
        let buried = first.bury(room: Self.room, nowMillis: removedAt)
        let burial = try #require(buried)
        #expect(burial.dropped == [])
        #expect(burial.floor.sequence > 0, "the floor keeps the sequences this node gave in the room")
        #expect(first.rooms[Self.room] == nil && first.isTombstoned(Self.room))
        let again = first.bury(room: Self.room, nowMillis: removedAt)
        #expect(again == nil, "nothing left to bury")
        #expect(first.roomSequences[Self.room] == burial.floor.sequence, "numbering would continue above it")
        // A join is refused, and opens no room.
        guard case let .answer(outcome) = first.decide(room: Self.room, Write(author: "t", authorRole: .teacher, authorCounter: 5,
                                                                              operation: Self.join("t", .teacher, at: first)), nowMillis: removedAt) else {
            Issue.record("a join of a removed room was admitted")
            return
        }
        #expect(outcome.code == "room-closed")
        // A late delta and a repair patch from a peer that still holds it bring nothing back.
        #expect(first.deltasToStore(room: Self.room, secondDeltas, nowMillis: removedAt).isEmpty)
        #expect(first.applyRemote(room: Self.room, secondDeltas, origin: second.replica, nowMillis: removedAt).fresh.isEmpty)
        let patch = try #require(second.rooms[Self.room])
        #expect(!first.patchBringsWrites(room: Self.room, patch))
        #expect(!first.merge(room: Self.room, patch).changed)
        #expect(first.rooms[Self.room] == nil, "a late peer message resurrected the room")
        // A room only named like one of its groups (no such group was made) is not removed with it.
        #expect(!first.isTombstoned(Breakout.roomID(of: "g1", in: Self.room)))
        // A restart (the store's tombstones) keeps refusing it.
        var restarted = NodeEngine(replica: ReplicaID(1))
        restarted.restore(tombstones: first.tombstones.removedAt)
        #expect(restarted.isTombstoned(Self.room))
        second.restore(tombstones: [:])
        #expect(!second.isTombstoned(Self.room))
    }

    @Test func tombstonesAreBoundedByCountOldestFirstAndByAge() {
        var tombstones = ClosedRoomTombstones(maxCount: 3, maxAgeMillis: 1_000)
        #expect(tombstones.bury("a", atMillis: 10).isEmpty)
        #expect(tombstones.bury("b", atMillis: 30).isEmpty)
        #expect(tombstones.bury("c", atMillis: 20).isEmpty)
        #expect(tombstones.bury("d", atMillis: 40) == ["a"], "the oldest goes first")
        #expect(tombstones.count == 3 && !tombstones.contains("a") && tombstones.contains("d"))
        #expect(tombstones.expire(nowMillis: 1_029) == ["c"])
        #expect(tombstones.expire(nowMillis: 1_040) == ["b", "d"])
        #expect(tombstones.count == 0)
        // The default bound, reached: one more removal drops the oldest, never more.
        var defaults = ClosedRoomTombstones()
        for index in 0..<ClosedRoomTombstones.defaultMaxCount { defaults.bury("room-\(index)", atMillis: UInt64(1_000 + index)) }
        #expect(defaults.count == ClosedRoomTombstones.defaultMaxCount)
        #expect(defaults.bury("one-more", atMillis: 999_999) == ["room-0"])
        #expect(defaults.count == ClosedRoomTombstones.defaultMaxCount)
    }

    @Test func aClassGoesWithItsGroupsRoomsButNotWithRoomsOnlyNamedLikeThem() throws {
        var (first, _, closesAt, _, _) = try Self.endedClass()
        let stamp = try #require(first.rooms[Self.room]).classState.stamp
        first.rooms[Self.room]?.breakoutGroups["g1"] = Register("Fractions", stamp: stamp)
        let made = Breakout.roomID(of: "g1", in: Self.room), lookalike = Breakout.roomID(of: "physics", in: Self.room)
        first.rooms[made] = RoomState(roomID: made)
        first.rooms[lookalike] = RoomState(roomID: lookalike)
        #expect(first.closedRoomsToRemove(nowMillis: closesAt + 60_000, retentionMillis: 60_000) == [Self.room, made].sorted())
        #expect(first.closedRoomsToRemove(nowMillis: closesAt + 60_000, retentionMillis: 60_000, limit: 1).count == 1)
        let buried = first.bury(room: made, nowMillis: closesAt + 60_000)
        #expect(buried != nil)
        #expect(first.isTombstoned(made) && !first.isTombstoned(lookalike))
    }
}
