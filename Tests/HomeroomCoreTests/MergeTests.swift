import Testing
@testable import HomeroomCore

@Suite struct MergeTests {
    @Test func concurrentRewardsAddUpAndARetryCountsOnce() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["s"], origin: &one)
        var b = a
        let r1 = one.delta("t", .teacher, .reward(user: "s", amount: 1))
        let r2 = two.delta("a", .assistant, .reward(user: "s", amount: 1))
        _ = a.apply(r1); _ = b.apply(r2)
        _ = a.apply(r2); _ = b.apply(r1)
        #expect(a == b)
        #expect(a.users["s"]!.rewardTotal == 2)
        // The same write (author, counter) retried through replica 2.
        var retry = two.sequencer
        let again = retry.stamp(Write(author: "t", authorRole: .teacher, authorCounter: r1.authorCounter, operation: r1.operation), nowMillis: two.now + 5)
        let changes = a.apply(again).changes
        #expect(a.users["s"]!.rewardTotal == 2)
        #expect(!changes.contains { if case .userRewarded = $0 { return true } else { return false } })
    }

    @Test func stageOverflowPicksTheSameEarliestWinnersEverywhere() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["s1", "s2", "s3"], origin: &one)
        _ = a.apply(one.delta("t", .teacher, .setStageLimit(2)))
        var b = a
        b.seen = a.seen
        let p1 = one.delta("t", .teacher, .setStage(user: "s1", on: true), advance: 10)
        let p3 = one.delta("t", .teacher, .setStage(user: "s3", on: true), advance: 10)
        two.now = one.now - 15
        let p2 = two.delta("a", .assistant, .setStage(user: "s2", on: true))
        for d in [p1, p3] { _ = a.apply(d) }
        _ = b.apply(p2)
        let changes = a.merge(b.missing(since: a.seen))
        b.merge(a.missing(since: b.seen))
        #expect(a == b)
        #expect(a.stageWinners == b.stageWinners)
        // s2 was promoted earliest (replica 2's clock is behind), so it leads the stage.
        #expect(a.stageWinners == ["s2", "s1"])
        #expect(a.stageWaiting == ["s3"])
        #expect(changes.contains(.coHostsRemoved(["s3"])))
        #expect(changes.contains(.coHostsAdded(["s2"])))
        // A seat frees: the waiting user moves up on both.
        let off = one.delta("t", .teacher, .setStage(user: "s1", on: false), advance: 50)
        let moved = a.apply(off).changes
        #expect(moved.contains(.coHostsAdded(["s3"])))
        _ = b.apply(off)
        #expect(b.stageWinners == ["s2", "s3"])
        #expect(a.stageWinners == b.stageWinners)
    }

    @Test func banWinsForeverAndKickEndsOnlyEarlierSessions() {
        var one = Origin(1)
        var room = classroom(students: ["s", "k"], origin: &one)
        let ban = one.delta("t", .teacher, .ban(user: "s"))
        let changes = room.apply(ban).changes
        #expect(changes.contains(.userBanned("s")) && changes.contains(.userLeft("s")))
        _ = room.apply(join("s", .student, session: "s-2", via: &one))
        #expect(!room.isOnline("s"))
        #expect(!room.roster().rows.contains { $0.user == "s" })

        _ = room.apply(one.delta("t", .teacher, .kick(user: "k")))
        #expect(!room.isOnline("k"))
        let back = room.apply(join("k", .student, session: "k-2", via: &one)).changes
        #expect(back.contains(.userJoined("k")))
    }

    @Test func muteAllTurnsOffMicrophonesGrantedBeforeIt() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "s", on: true)))
        _ = room.apply(one.delta("s", .student, .setDevice(user: "s", device: .microphone, on: true)))
        _ = room.apply(one.delta("t", .teacher, .setPrivilege(user: "s", device: .microphone, allowed: true)))
        #expect(room.roster().rows.first { $0.user == "s" }?.microphone == .live)
        let changes = room.apply(one.delta("t", .teacher, .muteAll)).changes
        #expect(changes.contains(.streamUpdated("s", .microphone, .privilegeOff)))
        _ = room.apply(one.delta("t", .teacher, .setPrivilege(user: "s", device: .microphone, allowed: true)))
        #expect(room.roster().rows.first { $0.user == "s" }?.microphone == .live)
    }

    @Test func theFourStreamStates() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        func camera() -> StreamState { room.roster().rows.first { $0.user == "s" }!.camera }
        _ = room.apply(one.delta("s", .student, .setDevice(user: "s", device: .camera, on: true)))
        #expect(camera() == .inoperable)
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "s", on: true)))
        #expect(camera() == .privilegeOff)
        _ = room.apply(one.delta("s", .student, .setDevice(user: "s", device: .camera, on: false)))
        #expect(camera() == .deviceOff)
        _ = room.apply(one.delta("s", .student, .setDevice(user: "s", device: .camera, on: true)))
        let changes = room.apply(one.delta("t", .teacher, .setPrivilege(user: "s", device: .camera, allowed: true))).changes
        #expect(camera() == .live)
        #expect(changes == [.streamUpdated("s", .camera, .live)])
    }

    @Test func compactDeltaCarriesOnlyLatestValuesAndSnapshotsAreIdentical() {
        var one = Origin(1)
        var a = classroom(students: ["s1", "s2"], origin: &one)
        var b = a
        for i in 0..<500 {
            _ = a.apply(one.delta("s1", .student, .setDevice(user: "s1", device: .camera, on: i % 2 == 0)))
        }
        let patch = a.missing(since: b.seen)
        #expect(patch.users.count == 1)
        #expect(patch.users["s1"]?.cameraDevice == a.users["s1"]!.cameraDevice)
        #expect(patch.users["s1"]?.name.stamp == .origin)
        b.merge(patch)
        #expect(a == b)
        #expect(a.snapshot() == b.snapshot())
        var fresh = RoomState(roomID: "r")
        fresh.merge(a.snapshot())
        #expect(fresh == a)
        #expect(fresh.roster() == a.roster())
    }

    @Test func replicaDownEndsItsSessionsAndNewSessionsAreOnline() {
        var one = Origin(1), two = Origin(2)
        var room = RoomState(roomID: "r")
        _ = room.apply(join("s", .student, via: &one))
        _ = room.apply(join("u", .student, via: &two))
        let down = two.delta("node-2", .system, .replicaDown(replica: ReplicaID(1), incarnation: 1))
        let changes = room.apply(down).changes
        #expect(changes == [.userLeft("s")])
        #expect(room.isOnline("u"))
        _ = room.apply(one.delta("s", .student, .joinSession(user: "s", session: "s-2", name: "S", role: .student, host: ReplicaID(1), incarnation: 2)))
        #expect(room.isOnline("s"))
    }

    @Test func rosterPutsStageFirstThenNames() {
        var one = Origin(1)
        var room = classroom(students: ["zed", "amy", "bob"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "zed", on: true)))
        let order = room.roster(roles: [.student]).rows.map(\.user)
        #expect(order == ["zed", "amy", "bob"])
    }

    @Test func handLimitShowsLaterHandsAsWaiting() {
        var one = Origin(1)
        var room = classroom(students: ["a", "b", "c"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setHandLimit(2)))
        for s in ["a", "b", "c"] { _ = room.apply(one.delta(s, .student, .setHand(user: s, raised: true))) }
        #expect(room.raisedHands == ["a", "b"])
        #expect(room.waitingHands == ["c"])
        let changes = room.apply(one.delta("t", .teacher, .setHand(user: "a", raised: false))).changes
        #expect(changes.contains(.handLowered("a")) && changes.contains(.handWaved("c")))
    }
}
