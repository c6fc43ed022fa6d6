// Testable: two cases put a stale key in a replica's stage or hand queue, the one
// fault the registers themselves cannot show.
@testable import HomeroomCore
import Testing
@testable import HomeroomChaosKit

/// The checker that ends every chaos run. A checker that cannot fail passes every run,
/// so each check is shown failing: from a clean run (every check passes), each case
/// changes one thing in the history or the final replicas and expects that check, and
/// as far as the construction allows only that one, to fail.
@Suite struct CheckerTests {
    static let allChecks: Set<String> = ["converged", "no-lost-writes", "rewards", "locks", "register-effects", "invariants",
                                         "presence", "progress", "no-crash", "no-false-down", "harness",
                                         "heal-convergence", "target-convergence", "register-order", "stage-and-hands"]

    /// Runs the checker and expects exactly the checks in `failing` to fail.
    @discardableResult
    static func expectFailing(_ failing: Set<String>, _ run: Scenario, sourceLocation: SourceLocation = #_sourceLocation) -> Checker.Result {
        let result = run.checker().run()
        #expect(Set(result.checks.map(\.name)) == allChecks, sourceLocation: sourceLocation)
        let failed = Set(result.checks.filter { !$0.passed }.map(\.name))
        // The details of every failed check say why, when the set is not the one expected.
        let details = result.checks.filter { !$0.passed }.map { "\($0.name): \($0.detail)" }.joined(separator: "\n")
        #expect(failed == failing, "\(details)", sourceLocation: sourceLocation)
        return result
    }

    // MARK: A clean run

    @Test func aCleanRunPassesEveryCheck() {
        let result = Self.expectFailing([], Scenario.clean())
        for name in Self.allChecks.sorted() {
            #expect(result.checks.first { $0.name == name }?.passed == true, "\(name): \(result.detail(name))")
        }
        // Every check once: one dropped (or run twice) fails here.
        #expect(result.checks.count == Self.allChecks.count)
        #expect(result.passed(strict: true))
        #expect(result.lostCount == 0)
        #expect(result.differences.isEmpty)
        // The scenario exercises what the checks look at, so a pass means something.
        // Seven marked registers (stage, name, board, s2's camera, hand and microphone privilege,
        // mallory's microphone), each checked on the three replicas.
        #expect(result.detail("register-effects").hasPrefix("21 registers"))
        #expect(result.detail("locks").hasPrefix("1 acknowledged grants"))
        #expect(result.detail("rewards").hasPrefix("1 acknowledged of 1 attempted"))
        // The same seven registers ordered, on the three replicas; s1 on stage, s2's hand up.
        #expect(result.detail("register-order").hasPrefix("21 registers"))
        #expect(result.detail("stage-and-hands").contains("stage [s1] (limit 6) and the hands [s2] (limit 10)"))
    }

    // MARK: no-lost-writes

    @Test func anAcknowledgedWriteNoReplicaHoldsIsLost() {
        var run = Scenario.clean()
        // Acknowledged, then lost on every node alike: the replicas still agree.
        run.write("s2", .student, .setHand(user: "s2", raised: false), at: [])
        let result = Self.expectFailing(["no-lost-writes"], run)
        #expect(result.lostCount == 1)
    }

    @Test func anAcknowledgedPropertyWhoseValueIsGoneIsLost() {
        var run = Scenario.clean()
        // Its dot is seen, but a write nobody made replaced the unique value.
        run.applyEverywhere(run.stamp("s1", .student, .setUserProperty(user: "s1", key: "p3", value: Array("forged".utf8), cause: "chaos")))
        Self.expectFailing(["no-lost-writes"], run)
    }

    // MARK: converged

    @Test func aReplicaWithAnExtraDeltaDiverges() {
        var run = Scenario.clean()
        // A hand lowering no writer made: n3 also shows a hand down the history says is up.
        run.apply(run.stamp("s2", .student, .setHand(user: "s2", raised: false)), at: [2])
        let result = Self.expectFailing(["converged", "stage-and-hands"], run)
        #expect(!result.differences.isEmpty)
    }

    @Test func replicasNeverSeenIdenticalHaveNotConverged() {
        var run = Scenario.clean()
        run.finalConvergenceMillis = nil
        Self.expectFailing(["converged"], run)
    }

    // MARK: rewards

    @Test func aRewardCountedTwiceFails() {
        var run = Scenario.clean()
        // The same reward (author, target, amount) under a second counter: counted twice.
        run.applyEverywhere(run.stamp("t1", .teacher, .reward(user: "s1", amount: 5)))
        Self.expectFailing(["rewards"], run)
    }

    @Test func aRewardNeverAttemptedFails() {
        var run = Scenario.clean()
        run.applyEverywhere(run.stamp("t2", .teacher, .reward(user: "s2", amount: 7)))
        Self.expectFailing(["rewards"], run)
    }

    // MARK: register-effects

    @Test func aRegisterHoldingAnotherValueThanItsWriteFails() {
        var run = Scenario.clean()
        // History: s1's set-name wrote "Ann"; every replica reads "Bob" under that dot.
        run.rewriteEverywhere { $0.users["s1"]!.name.value = "Bob" }
        Self.expectFailing(["register-effects"], run)
    }

    @Test func aValueOnAnotherUsersRegisterFails() {
        var run = Scenario.clean()
        run.rewriteEverywhere { $0.users["s2"]!.name = $0.users["s1"]!.name }
        Self.expectFailing(["register-effects"], run)
    }

    @Test func aValueOnAnotherFieldFails() {
        var run = Scenario.clean()
        // s2's raised hand, stamp and all, shows as its camera.
        run.rewriteEverywhere { $0.users["s2"]!.cameraDevice = $0.users["s2"]!.hand }
        Self.expectFailing(["register-effects"], run)
    }

    // MARK: register-order

    @Test func aRegisterHoldingAnOlderWriteThanTheLastAcknowledgedFails() {
        var run = Scenario.clean()
        let granted = run.states[0].users["s1"]!.board
        run.write("t2", .teacher, .setBoard(user: "s1", granted: false))
        // Every replica has the revoke (its dot is seen) but the board register went back
        // to the grant: the grant's own dot and value agree, only the order shows it lost.
        run.rewriteEverywhere { $0.users["s1"]!.board = granted }
        let result = Self.expectFailing(["register-order"], run)
        #expect(result.detail("register-order").contains("s1 board = true"))
    }

    @Test func noStampSeenLeavesTheOrderChecksNothingToPassOn() {
        var run = Scenario.clean()
        // Acknowledged register writes, but the sampler recorded no stamp for any.
        run.stamps.removeAll()
        Self.expectFailing(["register-order", "stage-and-hands"], run)
    }

    // MARK: stage-and-hands

    @Test func aStageShowingAUserTheModelSaysLostFails() {
        var run = Scenario.clean()
        let promoted = run.states[0].users["s1"]!.stage.stamp
        run.write("t1", .teacher, .setStageLimit(1))
        run.write("t2", .teacher, .setStage(user: "s2", on: true))
        // One seat: s1, promoted first, holds it. Every queue puts s2 first (a key older
        // than its register's stamp): registers right, winner wrong, count within the limit.
        run.rewriteEverywhere { $0.stageQueue.set("s2", stamp: Stamp(clock: promoted.clock, sequence: promoted.sequence - 1)) }
        #expect(run.states[0].stageWinners == ["s2"])
        let result = Self.expectFailing(["stage-and-hands"], run)
        #expect(result.detail("stage-and-hands").contains("room chaos on n1: stage should be [s1] (limit 1), shows [s2]"))
    }

    @Test func aStageMissingAWinnerFails() {
        var run = Scenario.clean()
        // s1's acknowledged promotion is in its register, but no queue holds it.
        run.rewriteEverywhere { $0.stageQueue.set("s1", stamp: nil) }
        let result = Self.expectFailing(["stage-and-hands"], run)
        #expect(result.detail("stage-and-hands").contains("stage should be [s1] (limit 6), shows []"))
    }

    @Test func aHandShownUpAfterItsAcknowledgedLoweringFails() {
        var run = Scenario.clean()
        let raised = run.states[0].users["s2"]!.hand.stamp
        run.write("t1", .teacher, .setHand(user: "s2", raised: false))
        // The lowering won the register, but the queue kept the raise.
        run.rewriteEverywhere { $0.handQueue.set("s2", stamp: raised) }
        let result = Self.expectFailing(["stage-and-hands"], run)
        #expect(result.detail("stage-and-hands").contains("hands up should be [] (limit 10), shows [s2]"))
    }

    @Test func aPromotionNobodyWroteFails() {
        var run = Scenario.clean()
        // On every replica, stamped like any write, but in no writer's history.
        run.applyEverywhere(run.stamp("t2", .teacher, .setStage(user: "s2", on: true)))
        let result = Self.expectFailing(["stage-and-hands"], run)
        #expect(result.detail("stage-and-hands").contains("stage should be [s1] (limit 6), shows [s1, s2]"))
    }

    @Test func anUnansweredPromotionThatLandedPasses() {
        var run = Scenario.clean()
        // No answer reached t2: the promotion may or may not have landed; here it did.
        run.write("t2", .teacher, .setStage(user: "s2", on: true), outcome: .indeterminate("timeout"))
        let result = Self.expectFailing([], run)
        #expect(result.detail("stage-and-hands").contains("stage [s1, s2]"))
    }

    // MARK: locks

    @Test func aFenceGrantedToTwoClientsFails() {
        var run = Scenario.clean()
        // t2 acknowledged with the fence t1 holds, not a new one (no origin preparation).
        run.write("t2", .teacher, .acquireLock(name: WorkloadPlan.lockName, ttlSeconds: 10, fence: run.grantedFence), prepared: false)
        let result = Self.expectFailing(["locks"], run)
        #expect(result.detail("locks").contains("granted to t1 and t2"))
    }

    @Test func aGuardedValueNoWriteOfItsFenceHadFails() {
        var run = Scenario.clean()
        // The history says t1's guarded write had another value than the replicas hold.
        let index = run.history.firstIndex { if case .guardedWrite = $0.lock?.kind { true } else { false } }!
        run.history[index].lock!.kind = .guardedWrite(value: "t1.something-else")
        Self.expectFailing(["locks"], run)
    }

    // MARK: invariants

    @Test func anAcknowledgedBanMissingEverywhereFails() {
        // The harness records the ban in the history: missing everywhere, it is a lost write too.
        Self.expectFailing(["invariants", "no-lost-writes"], Scenario.clean(banAt: []))
    }

    @Test func aClassStateOtherThanDuringFails() {
        var run = Scenario.clean()
        run.applyEverywhere(run.stamp("t1", .teacher, .setClassState(.after)))
        Self.expectFailing(["invariants"], run)
    }

    @Test func aViolationSampledDuringTheRunFails() {
        var run = Scenario.clean()
        run.violations = ["n2 at 4000 ms: 7 users on stage, limit 6"]
        Self.expectFailing(["invariants"], run)
    }

    // MARK: presence

    @Test func aConnectedWriterShownOfflineFails() {
        var run = Scenario.clean()
        run.connectedWriters.append("s3")
        Self.expectFailing(["presence"], run)
    }

    // MARK: progress

    @Test func aWriterWithNothingAcknowledgedFails() {
        var run = Scenario.clean()
        run.refuse("s3", .setHand(user: "s3", raised: true))
        run.refuse("s3", .setDevice(user: "s3", device: .camera, on: true))
        let result = Self.expectFailing(["progress"], run)
        #expect(result.detail("progress").contains("s3: 0 of 2"))
    }

    @Test func anEmptyHistoryFails() {
        var run = Scenario()
        run.startClass()
        // Nothing attempted at all; the replicas still hold the joins and the class state,
        // so only progress has a reason to fail.
        run.history.removeAll()
        run.stableAt.removeAll()
        let result = Self.expectFailing(["progress"], run)
        #expect(result.detail("progress").contains("no write was attempted"))
    }

    // MARK: no-crash, no-false-down, harness

    @Test func aCrashInANodeLogFails() {
        var run = Scenario.clean()
        run.nodeLogFindings = ["n2: Fatal error: Index out of range"]
        Self.expectFailing(["no-crash"], run)
    }

    @Test func aNodeThatDiedUnaskedFails() {
        var run = Scenario.clean()
        run.unexpectedExits = ["n4 exited with status 134"]
        Self.expectFailing(["no-crash"], run)
    }

    @Test func aFalseDownFails() {
        var run = Scenario.clean()
        run.falseDowns = [DeclaredDown(node: "n1", peer: "n2", silentFrom: 3_000, at: 5_000)]
        Self.expectFailing(["no-false-down"], run)
    }

    @Test func downsExpectedButNoneReadFails() {
        var run = Scenario.clean()
        run.declaredDowns = 0
        Self.expectFailing(["no-false-down"], run)
    }

    @Test func aFaultTheHarnessFailedToInjectFails() {
        var run = Scenario.clean()
        run.nemesisFailures = ["partition-halves: iptables exited with status 4"]
        Self.expectFailing(["harness"], run)
    }

    // MARK: heal-convergence, target-convergence

    @Test func convergingPastTheHealBoundFails() {
        var run = Scenario.clean()
        // Within the convergence bound (10 s), past the heal bound (2.5 s) and the target.
        run.finalConvergenceMillis = 3_000
        let result = Self.expectFailing(["heal-convergence", "target-convergence"], run)
        #expect(!result.passed(strict: false))
    }

    @Test func missingOnlyTheTargetFailsOnlyWithStrict() {
        var run = Scenario.clean()
        run.finalConvergenceMillis = 1_500
        let result = Self.expectFailing(["target-convergence"], run)
        #expect(result.passed(strict: false))
        #expect(!result.passed(strict: true))
    }
}

/// A chaos run written by hand: one node (n1) sequences every write, as a node would,
/// and each final replica applies the deltas it is given. `clean()` is a run that
/// passes every check; each case above changes one thing in it.
struct Scenario {
    static let replicaCount = 3
    static let everyReplica = Array(0..<replicaCount)
    /// The nodes' wall clock at the harness's time 0.
    static let epochMillis: UInt64 = 1_750_000_000_000

    var sequencer = Sequencer(replica: ReplicaID(name: "n1"))
    /// Harness time (ms), as the history and the heals count it; each write takes 100 ms.
    var now: UInt64 = 1_000
    var counters: [UserID: UInt64] = [:]
    var states = Array(repeating: RoomState(roomID: "chaos"), count: Scenario.replicaCount)
    var history: [WriteRecord] = []
    /// When each acknowledged write was on every node (by history index), as the sampler saw it.
    var stableAt: [Int: UInt64] = [:]
    /// The stamp of every write some replica holds, as the sampler would have seen it on a node.
    var stamps: [Dot: Stamp] = [:]
    var violations: [String] = []
    var bannedUser: UserID = "mallory"
    var banAcknowledged = false
    var connectedWriters: [UserID] = []
    /// The fence of t1's grant, for its guarded write.
    var grantedFence: UInt64 = 0
    // One fault healed at 1 s, the next at 20 s; the final heal at 25 s.
    var heals: [(at: UInt64, nextFault: UInt64?, kinds: String)] = [(1_000, 20_000, "isolate")]
    var finalHealAt: UInt64 = 25_000
    var finalConvergenceMillis: UInt64? = 300
    var nodeLogFindings: [String] = []
    var unexpectedExits: [String] = []
    // Faults silenced nodes, and the downs they caused were read and explained.
    var declaredDowns = 2
    var downsExpected = true
    var falseDowns: [DeclaredDown] = []
    var nemesisFailures: [String] = []

    /// Everyone joined and the class started, then one write of each kind the checks
    /// follow, then the ban (on the replicas in `banAt`).
    static func clean(banAt: [Int] = everyReplica) -> Scenario {
        var run = Scenario()
        run.startClass()
        run.write("t1", .teacher, .setStage(user: "s1", on: true))
        run.write("s1", .student, .setName(user: "s1", name: "Ann"))
        run.write("s2", .student, .setDevice(user: "s2", device: .camera, on: true))
        run.write("s2", .student, .setHand(user: "s2", raised: true))
        run.write("t2", .teacher, .setPrivilege(user: "s2", device: .microphone, allowed: false))
        run.write("t2", .teacher, .setBoard(user: "s1", granted: true))
        run.write("t1", .teacher, .reward(user: "s1", amount: 5))
        run.write("s1", .student, .setUserProperty(user: "s1", key: "p3", value: Array("s1.3".utf8), cause: "chaos"))
        run.write("t2", .teacher, .setRoomProperty(key: "t2.4", value: Array("v4".utf8), cause: "chaos"))
        run.write("mallory", .student, .setDevice(user: "mallory", device: .microphone, on: true))
        let grant = run.write("t1", .teacher, .acquireLock(name: WorkloadPlan.lockName, ttlSeconds: 10))
        if case let .acquireLock(_, _, fence) = grant.operation { run.grantedFence = fence }
        run.write("t1", .teacher, .setRoomProperty(key: WorkloadPlan.guardedKey, value: Array("t1.6".utf8), cause: "chaos",
                                                   revision: PropertyRevision(fence: LockFence(lock: WorkloadPlan.lockName, fence: run.grantedFence))))
        run.write("t1", .teacher, .ban(user: "mallory"), harness: true, at: banAt)
        run.banAcknowledged = true
        return run
    }

    /// As ChaosRun starts a run: every writer joins (no history record), the first
    /// teacher starts the class (a record without marks).
    mutating func startClass() {
        for (user, role) in [("t1", Role.teacher), ("t2", .teacher), ("s1", .student), ("s2", .student), ("mallory", .student)] {
            applyEverywhere(stamp(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role,
                                                          host: sequencer.replica, incarnation: 1)))
        }
        write("t1", .teacher, .setClassState(.during), harness: true)
        connectedWriters = ["t1", "t2", "s1", "s2"]
    }

    /// Sequences a write at n1, prepared there as a node would (a lock's fence, a property's revision).
    mutating func stamp(_ author: UserID, _ role: Role, _ operation: Operation, prepared: Bool = true) -> Delta {
        now += 100
        counters[author, default: 0] += 1
        var write = Write(author: author, authorRole: role, authorCounter: counters[author]!, operation: operation)
        if prepared { write = states[0].prepare(write, origin: sequencer.replica, nowMillis: Self.epochMillis + now) }
        return sequencer.stamp(write, nowMillis: Self.epochMillis + now)
    }

    mutating func apply(_ delta: Delta, at replicas: [Int]) {
        if !replicas.isEmpty { stamps[delta.dot] = delta.stamp }
        for index in replicas {
            let outcome = states[index].apply(delta)
            // A scenario is only as good as its deltas: each must take effect.
            if case .applied = outcome { continue }
            Issue.record("\(delta.operation.name) by \(delta.author) not applied at n\(index + 1): \(outcome)")
        }
    }

    mutating func applyEverywhere(_ delta: Delta) { apply(delta, at: Self.everyReplica) }

    /// Changes every replica alike (so they still agree): what no delta would do.
    mutating func rewriteEverywhere(_ change: (inout RoomState) -> Void) {
        for index in states.indices { change(&states[index]) }
    }

    /// A write (acknowledged unless `outcome` says otherwise), applied on `replicas`,
    /// recorded with the marks a writer gives it (Writer.loop); `harness`: a write of the
    /// harness's own, with only its register mark (ChaosRun.recordWrite).
    @discardableResult
    mutating func write(_ author: UserID, _ role: Role, _ operation: Operation, harness: Bool = false, prepared: Bool = true,
                        at replicas: [Int] = everyReplica, outcome: Outcome? = nil) -> Delta {
        let invoked = now
        let delta = stamp(author, role, operation, prepared: prepared)
        apply(delta, at: replicas)
        var record = WriteRecord(client: author, operation: operation.name, invokedAt: invoked, completedAt: now,
                                 outcome: outcome ?? .acknowledged(delta.dot))
        record.register = RegisterMark(delta.operation)
        if !harness {
            switch delta.operation {
            case let .reward(user, amount, _):
                record.reward = RewardMark(author: author, target: user, amount: amount)
            case let .setRoomProperty(key, value, _, revision):
                let text = String(decoding: value ?? [], as: UTF8.self)
                if let fence = revision.fence {
                    record.lock = LockMark(kind: .guardedWrite(value: text), fence: fence.fence)
                } else {
                    record.property = PropertyMark(user: nil, key: key, value: text)
                }
            case let .setUserProperty(user, key, value, _, _):
                record.property = PropertyMark(user: user, key: key, value: String(decoding: value ?? [], as: UTF8.self))
            case let .acquireLock(_, _, fence):
                record.lock = LockMark(kind: .acquire, fence: fence)
            default: break
            }
        }
        if replicas.count == Self.replicaCount, case .acknowledged = record.outcome { stableAt[history.count] = now + 50 }
        history.append(record)
        return delta
    }

    /// A write the cluster refused: recorded, applied nowhere.
    mutating func refuse(_ author: UserID, _ operation: Operation) {
        now += 100
        history.append(WriteRecord(client: author, operation: operation.name, invokedAt: now - 100, completedAt: now,
                                   outcome: .refused("unavailable"), register: RegisterMark(operation)))
    }

    func checker() -> Checker {
        var options = ChaosOptions()
        options.nodes = Self.replicaCount
        let tracking = Observatory.Tracking(stableAt: stableAt, highestClassState: Array(repeating: .during, count: Self.replicaCount),
                                            violations: violations, violationCount: violations.count, samples: 200, stamps: stamps)
        return Checker(history: history, tracking: tracking,
                       replicas: states.indices.map { FinalReplica(label: "n\($0 + 1)", state: states[$0]) },
                       finalConvergenceMillis: finalConvergenceMillis, finalHealAt: finalHealAt,
                       convergedAt: finalConvergenceMillis.map { finalHealAt + $0 }, heals: heals, options: options,
                       bannedUser: bannedUser, banAcknowledged: banAcknowledged, connectedWriters: connectedWriters,
                       presenceMillis: 200, checkedAt: 400, nodeLogFindings: nodeLogFindings, declaredDowns: declaredDowns,
                       downsExpected: downsExpected, falseDowns: falseDowns, unexpectedExits: unexpectedExits,
                       nemesisFailures: nemesisFailures, stuckWriters: [])
    }
}

extension Checker.Result {
    /// The detail of the check named `name` ("" when there is none).
    func detail(_ name: String) -> String { checks.first { $0.name == name }?.detail ?? "" }
}
