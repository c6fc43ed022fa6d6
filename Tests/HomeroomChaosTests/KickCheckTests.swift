// Testable: two cases put a stale key in one replica's stage or hand queue, the one
// fault a kick's own stamp cannot show.
@testable import HomeroomCore
import Testing
@testable import HomeroomChaosKit

/// The chaos run's kick check and the stage model's kicks (issue 40, item 4), on
/// histories built as in CheckerTests: a clean one passes, each break fails it.
@Suite struct KickCheckTests {
    /// A kick by `author`, applied on `replicas`, recorded as a writer records it; its stamp.
    @discardableResult
    static func kick(_ run: inout Scenario, _ author: UserID, _ user: UserID, at replicas: [Int] = Scenario.everyReplica) -> Stamp {
        // What the kicker's replica (the first one it reaches) shows of the user before the kick.
        let before = run.states[replicas.first ?? 0]
        let delta = run.write(author, .teacher, .kick(user: user), at: replicas)
        run.history[run.history.count - 1].kick = KickMark(user: user, onStage: before.stageWinners.contains(user),
                                                           handUp: before.raisedHands.contains(user))
        return delta.stamp
    }

    /// `user` joins again with a new session (no history record: a join is not a workload write).
    static func rejoin(_ run: inout Scenario, _ user: UserID, at replicas: [Int] = Scenario.everyReplica) {
        run.apply(run.stamp(user, .student, .joinSession(user: user, session: "\(user)-2", name: user, role: .student,
                                                         host: run.sequencer.replica, incarnation: 1)), at: replicas)
    }

    /// s1 on stage and s2's hand up, both kicked; s2 joins again and raises its hand.
    static func kicked() -> Scenario {
        var run = Scenario()
        run.startClass()
        run.write("t1", .teacher, .setStage(user: "s1", on: true))
        run.write("s2", .student, .setHand(user: "s2", raised: true))
        run.write("s1", .student, .setPresenceState(user: "s1", session: "s1-1",
                                                    items: [PresenceItem(key: WorkloadPlan.presenceKey, value: Array("s1.1".utf8))]))
        kick(&run, "t1", "s1")
        kick(&run, "t2", "s2")
        rejoin(&run, "s2")
        run.write("s2", .student, .setHand(user: "s2", raised: true))
        return run
    }

    static func check(_ run: Scenario, floor: Int = 2) -> Check {
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        return KickCheck(history: run.history, replicas: replicas, stamps: run.stamps, floor: floor).check()
    }

    static func stageModel(_ run: Scenario, kicks: Bool = true) -> Check {
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        return StageModel(order: RegisterOrder(history: run.history, stamps: run.stamps),
                          kicks: kicks ? KickOrder(history: run.history, stamps: run.stamps) : KickOrder(),
                          bannedUser: run.bannedUser, banAcknowledged: run.banAcknowledged).check(replicas)
    }

    @Test func kicksReflectedOnEveryReplicaPass() {
        let run = Self.kicked()
        // What Core does with them: s1 off stage and offline, s2 back with a later session and raise.
        #expect(run.states[0].stageWinners.isEmpty)
        #expect(!run.states[0].isOnline("s1"))
        #expect(run.states[0].isOnline("s2"))
        #expect(run.states[0].raisedHands == ["s2"])
        let check = Self.check(run)
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.hasPrefix("2 acknowledged kicks (0 without a stamp seen; floor 2; 1 of a user on stage, 1 of a hand up, as the kicker saw it) reflected on all 3 replicas (6 judged)"), "\(check.detail)")
        #expect(check.detail.contains("in the end 1 users kept off a stage their register still promotes and 0 hands kept down, 0 back on stage and 1 hands up through later writes, 1 users with a session begun after the kick"), "\(check.detail)")
        let model = Self.stageModel(run)
        #expect(model.passed, "\(model.detail)")
        #expect(model.detail.contains("stage [] (limit 6) and the hands [s2] (limit 10)"), "\(model.detail)")
    }

    @Test func aLaterPromotionPutsAKickedUserBackOnStage() {
        var run = Self.kicked()
        run.write("t2", .teacher, .setStage(user: "s1", on: true))
        #expect(run.states[0].stageWinners == ["s1"])
        let check = Self.check(run)
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.contains("0 users kept off a stage their register still promotes and 0 hands kept down, 1 back on stage"), "\(check.detail)")
        #expect(Self.stageModel(run).passed)
    }

    @Test func aKickedUserStillOnStageOnOneNodeFails() {
        var run = Self.kicked()
        // n3 holds the kick, but its stage queue still seats s1 by the older promotion.
        let promoted = run.states[2].users["s1"]!.stage.stamp
        run.states[2].stageQueue.set("s1", stamp: promoted)
        #expect(run.states[2].stageWinners == ["s1"])
        let check = Self.check(run)
        #expect(!check.passed)
        #expect(check.detail.hasPrefix("1 problems, first: n3: s1 on stage after t1's acknowledged kick of s1"), "\(check.detail)")
        #expect(check.detail.contains("through a promotion stamped before it"), "\(check.detail)")
        let model = Self.stageModel(run)
        #expect(!model.passed)
        #expect(model.detail.contains("on n3: stage should be [] (limit 6), shows [s1]"), "\(model.detail)")
    }

    @Test func aKickedHandStillUpOnOneNodeFails() {
        var run = Scenario()
        run.startClass()
        let raised = run.write("s2", .student, .setHand(user: "s2", raised: true)).stamp
        Self.kick(&run, "t2", "s2")
        #expect(run.states[1].raisedHands.isEmpty)
        // n2 holds the kick, but its hand queue still has s2's raise from before it.
        run.states[1].handQueue.set("s2", stamp: raised)
        let check = Self.check(run, floor: 1)
        #expect(!check.passed)
        #expect(check.detail.hasPrefix("1 problems, first: n2: s2's hand up after t2's acknowledged kick of s2"), "\(check.detail)")
        #expect(check.detail.contains("through a raise stamped before it"), "\(check.detail)")
        let model = Self.stageModel(run)
        #expect(!model.passed)
        #expect(model.detail.contains("on n2: hands up should be [] (limit 10), shows [s2]"), "\(model.detail)")
    }

    @Test func aKickLostOnOneNodeFails() {
        var run = Scenario()
        run.startClass()
        run.write("t1", .teacher, .setStage(user: "s1", on: true))
        run.write("s1", .student, .setPresenceState(user: "s1", session: "s1-1",
                                                    items: [PresenceItem(key: WorkloadPlan.presenceKey, value: Array("s1.1".utf8))]))
        let stamp = Self.kick(&run, "t1", "s1", at: [0, 1])
        let check = Self.check(run, floor: 1)
        #expect(!check.passed)
        #expect(check.detail.contains("n3: t1's acknowledged kick of s1"), "\(check.detail)")
        #expect(check.detail.contains("is lost: s1's kicked stamp is"), "\(check.detail)")
        // Each effect the lost kick leaves undone is named on its own line.
        let kick = KickOrder(history: run.history, stamps: run.stamps).acknowledged[0]
        let lines = KickCheck.problems(kick, stamp: stamp, in: FinalReplica(label: "n3", state: run.states[2]))
        #expect(lines.count == 4, "\(lines)")
        #expect(lines.contains { $0.contains("s1 on stage after") })
        #expect(lines.contains { $0.contains("s1 online after") && $0.contains("with no open session begun after it") })
        #expect(lines.contains { $0.contains("s1's presence state mood shown after") && $0.contains("set by session s1-1") })
        #expect(KickCheck.problems(kick, stamp: stamp, in: FinalReplica(label: "n1", state: run.states[0])).isEmpty)
        // The stage model, which follows the acknowledged kick, fails n3 too.
        #expect(Self.stageModel(run).detail.contains("on n3: stage should be [] (limit 6), shows [s1]"))
    }

    @Test func aRejoinStampedBeforeTheKickDoesNotBringTheUserBack() {
        var run = Scenario()
        run.startClass()
        // The rejoin's node had not heard of the kick, and its stamp is older: Core keeps the user out.
        let rejoin = run.stamp("s1", .student, .joinSession(user: "s1", session: "s1-2", name: "s1", role: .student,
                                                            host: run.sequencer.replica, incarnation: 1))
        Self.kick(&run, "t1", "s1")
        run.applyEverywhere(rejoin)
        #expect(!run.states[0].isOnline("s1"))
        #expect(Self.check(run, floor: 1).passed)
    }

    @Test func fewerKicksThanTheFloorFail() {
        let run = Self.kicked()
        let check = Self.check(run, floor: 3)
        #expect(!check.passed)
        #expect(check.detail.contains("2 acknowledged kicks with a stamp seen, fewer than the floor of 3"), "\(check.detail)")
        // Kicks whose stamps no sample caught are not judged, and do not count.
        var unseen = run
        for kick in KickOrder(history: run.history, stamps: run.stamps).acknowledged { unseen.stamps[kick.dot] = nil }
        let blind = Self.check(unseen, floor: 1)
        #expect(!blind.passed)
        #expect(blind.detail.contains("0 acknowledged kicks with a stamp seen, fewer than the floor of 1"), "\(blind.detail)")
        #expect(Self.check(unseen, floor: 0).passed)
    }

    @Test func theStageModelWithoutKicksWouldSeatAKickedUser() {
        let run = Self.kicked()
        // Blind to kicks, the model expects s1 on stage and s2's first raise: every replica differs.
        let blind = Self.stageModel(run, kicks: false)
        #expect(!blind.passed)
        #expect(blind.detail.contains("stage should be [s1] (limit 6), shows []"), "\(blind.detail)")
    }

    @Test func theWholeCheckerPassesARunWithKicksAndRejoins() {
        var run = Scenario.clean()
        Self.kick(&run, "t1", "s1")
        Self.rejoin(&run, "s1")
        var checker = run.checker()
        checker.floors = WorkloadFloors(kicks: 1)
        let result = checker.run()
        let failed = result.checks.filter { !$0.passed }.map { "\($0.name): \($0.detail)" }
        #expect(failed.isEmpty, "\(failed)")
        #expect(result.checks.contains { $0.name == "kicks" })
        // The floor alone brings the check in: no kick in the history fails it.
        var none = Scenario.clean().checker()
        none.floors = WorkloadFloors(kicks: 1)
        #expect(none.run().checks.first { $0.name == "kicks" }?.passed == false)
    }
}
