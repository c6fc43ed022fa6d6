import Testing
@testable import HomeroomCore

/// The stage carousel: every replica derives the same turn from the room and the time.
@Suite struct CarouselTests {
    static let students: [UserID] = ["s1", "s2", "s3", "s4", "s5"]

    /// A small classroom with two seats and five students who joined in order.
    static func room(_ origin: inout Origin) -> RoomState {
        var room = classroom(students: students, origin: &origin)
        _ = room.apply(origin.delta("t", .teacher, .setStageLimit(2)))
        return room
    }

    static func start(_ room: inout RoomState, _ origin: inout Origin, every seconds: UInt32 = 10, range: Carousel.Range = .all,
                      order: Carousel.Order = .joinOrder) -> UInt64 {
        let delta = origin.delta("t", .teacher, .setCarousel(Carousel(intervalSeconds: seconds, range: range, order: order)))
        #expect(room.apply(delta).changes == [.roomInfoUpdated])
        return delta.clock.millis
    }

    @Test func inJoinOrderEveryStudentGetsATurnAndTheTurnsWrapAround() {
        var one = Origin(1)
        var room = Self.room(&one)
        let start = Self.start(&room, &one)
        let turns = (0..<4).map { room.carouselTurn(atMillis: start + UInt64($0) * 10_000 + 5)!.onStage }
        #expect(turns == [["s1", "s2"], ["s3", "s4"], ["s5", "s1"], ["s2", "s3"]])
        #expect(room.stage(atMillis: start + 10_001) == ["s3", "s4"])
        let turn = room.carouselTurn(atMillis: start + 12_000)!
        #expect(turn.number == 1 && turn.nextTurnAtMillis == start + 20_000 && turn.rotates)
        // The roster and its streams follow the turn when given the moment.
        let roster = room.roster(nowMillis: start + 12_000)
        #expect(roster.stage == ["s3", "s4"] && roster.carousel?.intervalSeconds == 10 && roster.carouselTurn == turn)
        #expect(roster.rows.filter(\.onStage).map(\.user).sorted() == ["s3", "s4"])
        // Without a moment, the stage as written (nobody was put on it).
        #expect(room.roster().stage.isEmpty)
    }

    @Test func withNoMoreStudentsThanSeatsEveryoneIsOnStageAndNothingRotates() {
        var one = Origin(1)
        var room = classroom(students: ["s1", "s2"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setStageLimit(3)))
        let start = Self.start(&room, &one)
        for offset in [UInt64(0), 10_000, 95_000] {
            let turn = room.carouselTurn(atMillis: start + offset)!
            #expect(turn.onStage == ["s1", "s2"] && !turn.rotates)
        }
    }

    @Test func cameraOnTakesOnlyStudentsWithTheirCameraOnAndOfflineStudentsNever() {
        var one = Origin(1)
        var room = Self.room(&one)
        for user in ["s2", "s4", "s5"] { _ = room.apply(one.delta(user, .student, .setDevice(user: user, device: .camera, on: true))) }
        _ = room.apply(one.delta("s5", .student, .leaveSession(user: "s5", session: "s5-1")))
        let start = Self.start(&room, &one, range: .cameraOn)
        #expect(room.carouselTurn(atMillis: start)!.candidates == ["s2", "s4"])
        #expect(room.carouselTurn(atMillis: start + 30_000)!.onStage == ["s2", "s4"])
    }

    @Test func teachersOnStageKeepTheirSeatsAndTheStudentsShareTheRest() {
        var one = Origin(1)
        var room = Self.room(&one)
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "t", on: true)))
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "s5", on: true)))
        let start = Self.start(&room, &one)
        #expect(room.stage(atMillis: start) == ["t", "s1"])
        #expect(room.stage(atMillis: start + 10_000) == ["t", "s2"])
        // Stopped: the stage is again who was put on it.
        var stopped = Carousel.stopped
        stopped.intervalSeconds = 10
        _ = room.apply(one.delta("t", .teacher, .setCarousel(stopped)))
        #expect(room.carouselTurn(atMillis: start + 10_000) == nil)
        #expect(room.stage(atMillis: start + 10_000) == room.stageWinners && room.stageWinners.contains("s5"))
    }

    @Test func aShuffledOrderIsTheSameOnEveryReplicaAndChangesFromTurnToTurn() {
        var one = Origin(1)
        var a = Self.room(&one)
        let start = Self.start(&a, &one, order: .random)
        // Another replica gets the same room by a snapshot: it derives the same turns.
        var b = RoomState(roomID: "r")
        b.merge(a.missing(since: VersionVector()))
        var seen: Set<[UserID]> = []
        for turn in 0..<12 {
            let moment = start + UInt64(turn) * 10_000
            let here = a.carouselTurn(atMillis: moment)!.onStage
            #expect(here == b.carouselTurn(atMillis: moment)!.onStage)
            #expect(here.count == 2 && Set(here).count == 2 && Set(here).isSubset(of: Set(Self.students)))
            seen.insert(here)
        }
        #expect(seen.count >= 4, "the shuffle gave only \(seen.count) different stages in 12 turns")
        // The shuffle is the documented one: docs/PROTOCOL.md's test vectors, which the
        // Python reference client reproduces too (Tests/interop).
        let seven: [UserID] = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
        #expect(RoomState.carouselShuffle(seven, seed: 42) == ["s3", "s5", "s7", "s1", "s4", "s2", "s6"])
        #expect(RoomState.carouselShuffle(seven, seed: 1_796_206_413_242 ^ (3 &* 0x9E37_79B9_7F4A_7C15))
                == ["s7", "s1", "s4", "s2", "s3", "s5", "s6"])
    }

    @Test func twoCarouselsStartedOnBothSidesOfAPartitionGiveOneStageAfterTheHeal() {
        var one = Origin(1), two = Origin(2)
        var a = Self.room(&one)
        var b = RoomState(roomID: "r")
        b.merge(a.missing(since: VersionVector()))
        two.now = one.now
        _ = Self.start(&a, &one, every: 30)
        two.now += 5
        _ = Self.start(&b, &two, every: 20, order: .random)
        #expect(a.carousel.value != b.carousel.value)
        a.merge(b.missing(since: a.seen))
        b.merge(a.missing(since: b.seen))
        #expect(a == b)
        for offset in stride(from: UInt64(0), to: 200_000, by: 7_000) {
            #expect(a.stage(atMillis: one.now + offset) == b.stage(atMillis: one.now + offset))
        }
    }

    @Test func carouselsAreForModeratorsWithinTheirBoundsAndNotInOneToOneRooms() {
        var one = Origin(1)
        var room = Self.room(&one)
        let fast = one.delta("t", .teacher, .setCarousel(Carousel(intervalSeconds: 5)))
        #expect(room.apply(fast).changes.isEmpty && room.carouselTurn(atMillis: one.now) == nil)
        let student = one.delta("s1", .student, .setCarousel(Carousel()))
        #expect(room.apply(student).changes.isEmpty && !room.carousel.value.running)
        let write = Write(author: "t", authorRole: .teacher, authorCounter: 99, operation: .setCarousel(Carousel()))
        #expect(room.admit(write, nowMillis: one.now) == nil)
        _ = room.apply(one.delta("t", .teacher, .setRoomType(.oneToOne)))
        #expect(room.admit(write, nowMillis: one.now) != nil)
    }

    /// Flexible Classroom 2.8.100 fixed a lecture hall whose stage went wrong while
    /// students joined and left. Here: two replicas, three students on stage, and 300
    /// other joins and leaves in an interleaved order; the stage stays those three, equal
    /// on both replicas after every exchange.
    @Test func aLectureHallStageStaysRightWhileStudentsJoinAndLeave() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["p1", "p2", "p3"], origin: &one)
        _ = a.apply(one.delta("t", .teacher, .setRoomType(.lectureHall)))
        _ = a.apply(one.delta("t", .teacher, .setStageLimit(3)))
        for user in ["p1", "p2", "p3"] { _ = a.apply(one.delta("t", .teacher, .setStage(user: user, on: true))) }
        var b = RoomState(roomID: "r")
        b.merge(a.missing(since: VersionVector()))
        two.now = one.now
        var random = SplitMix64(seed: 2_8100)
        for step in 0..<300 {
            let user = "v\(random.next() % 40)"
            let onA = random.next() % 2 == 0
            let session = "\(user)-\(step)"
            if onA {
                _ = a.apply(join(user, .student, session: session, via: &one))
                if random.next() % 3 != 0 { _ = a.apply(one.delta(user, .student, .leaveSession(user: user, session: session))) }
            } else {
                _ = b.apply(join(user, .student, session: session, via: &two))
                if random.next() % 3 != 0 { _ = b.apply(two.delta(user, .student, .leaveSession(user: user, session: session))) }
            }
            if step % 7 == 0 {
                a.merge(b.missing(since: a.seen))
                b.merge(a.missing(since: b.seen))
                #expect(a.stageWinners == b.stageWinners, "step \(step)")
            }
            #expect(a.stageWinners == ["p1", "p2", "p3"] && b.stageWinners == ["p1", "p2", "p3"], "step \(step): \(a.stageWinners) / \(b.stageWinners)")
        }
        a.merge(b.missing(since: a.seen))
        b.merge(a.missing(since: b.seen))
        #expect(a == b && a.roster().stage == ["p1", "p2", "p3"])
    }
}
