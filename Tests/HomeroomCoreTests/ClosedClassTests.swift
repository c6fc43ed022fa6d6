import Testing
@testable import HomeroomCore

/// The closed class (Agora's class state 3), derived on every replica from the same
/// registers: `after`, and the schedule's close delay passed since the class-state stamp.
@Suite struct ClosedClassTests {
    /// A class ended at `origin.now` (after the returned deltas), with a close delay of `delay` s.
    static func endedClass(delay: UInt32, origin: inout Origin) -> (room: RoomState, deltas: [Delta], endedAt: UInt64) {
        var room = classroom(students: ["s1"], origin: &origin)
        var deltas: [Delta] = []
        for operation in [Operation.setSchedule(Schedule(startMillis: origin.now, durationSeconds: 600, closeDelaySeconds: delay)),
                          .setClassState(.during), .setClassState(.after)] {
            let delta = origin.delta("t", .teacher, operation)
            deltas.append(delta)
            _ = room.apply(delta)
        }
        return (room, deltas, origin.now)
    }

    @Test func theRoomClosesExactlyTheCloseDelayAfterTheClassEnded() {
        var origin = Origin(1)
        let (room, _, endedAt) = Self.endedClass(delay: 30, origin: &origin)
        #expect(room.closesAtMillis == endedAt + 30_000)
        #expect(!room.isClosed(nowMillis: endedAt + 29_999))
        #expect(room.isClosed(nowMillis: endedAt + 30_000))
        let write = Write(author: "s1", authorRole: .student, authorCounter: 9, operation: .setHand(user: "s1", raised: true))
        #expect(room.admit(write, nowMillis: endedAt + 29_999) == nil)
        #expect(room.admit(write, nowMillis: endedAt + 30_000) == .roomClosed)
        // A join is a write too: nobody rejoins a closed room.
        let rejoin = Write(author: "s1", authorRole: .student, authorCounter: 10,
                           operation: .joinSession(user: "s1", session: "s1-2", name: "S1", role: .student, host: ReplicaID(1), incarnation: 1))
        #expect(room.admit(rejoin, nowMillis: endedAt + 30_000)?.code == "room-closed")
    }

    @Test func aClassThatHasNotEndedNeverCloses() {
        var origin = Origin(1)
        var room = classroom(students: ["s1"], origin: &origin)
        #expect(room.closesAtMillis == nil)
        _ = room.apply(origin.delta("t", .teacher, .setClassState(.during)))
        #expect(room.closesAtMillis == nil)
        #expect(!room.isClosed(nowMillis: .max))
        #expect(!room.isRemovableAfterClosing(nowMillis: .max, retentionMillis: 0))
    }

    @Test func aClosedRoomIsRemovableOnlyOnceTheRetentionHasPassedSinceClosing() {
        var origin = Origin(1)
        let (room, _, endedAt) = Self.endedClass(delay: 10, origin: &origin)
        let closesAt = endedAt + 10_000
        #expect(!room.isRemovableAfterClosing(nowMillis: closesAt + 3_599_999, retentionMillis: 3_600_000))
        #expect(room.isRemovableAfterClosing(nowMillis: closesAt + 3_600_000, retentionMillis: 3_600_000))
        // Retention 0: removable the moment it closes, not before.
        #expect(!room.isRemovableAfterClosing(nowMillis: closesAt - 1, retentionMillis: 0))
        #expect(room.isRemovableAfterClosing(nowMillis: closesAt, retentionMillis: 0))
    }

    /// A replica that got the room by a repair patch (not the deltas) names the same closing instant.
    @Test func aReplicaRepairedByAPatchNamesTheSameClosing() {
        var origin = Origin(1)
        let (room, _, _) = Self.endedClass(delay: 45, origin: &origin)
        var other = RoomState(roomID: "r")
        _ = other.merge(room)
        #expect(other.closesAtMillis != nil)
        #expect(other.closesAtMillis == room.closesAtMillis)
    }

    @Test func theDisplayedStateSaysClosedOnlyOnceTheDelayPassed() {
        let schedule = Schedule(startMillis: 0, durationSeconds: 600, closeDelaySeconds: 60)
        #expect(ClassDisplayState(state: .during, sinceMillis: 5_000, schedule: schedule, nowMillis: .max) == .during)
        #expect(ClassDisplayState(state: .after, sinceMillis: 5_000, schedule: schedule, nowMillis: 64_999) == .after)
        #expect(ClassDisplayState(state: .after, sinceMillis: 5_000, schedule: schedule, nowMillis: 65_000) == .closed)
        // Never stamped: no closing is known, so none is shown.
        #expect(ClassDisplayState(state: .after, sinceMillis: 0, schedule: schedule, nowMillis: .max) == .after)
        var origin = Origin(1)
        let (room, _, endedAt) = Self.endedClass(delay: 60, origin: &origin)
        let roster = room.roster()
        #expect(roster.classDisplay(nowMillis: endedAt + 59_999) == .after)
        #expect(roster.classDisplay(nowMillis: endedAt + 60_000) == .closed)
        #expect(roster.classState == .after, "the wire's state is unchanged")
    }
}
