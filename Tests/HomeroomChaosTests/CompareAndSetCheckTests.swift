@testable import HomeroomCore
import HomeroomNode
import Testing
@testable import HomeroomChaosKit

/// The chaos run's compare-and-set and presence-state checks (issue 40, item 4), on
/// histories built as in CheckerTests: a clean one passes, each break fails it.
@Suite struct CompareAndSetCheckTests {
    static let key = WorkloadPlan.compareAndSetKey

    /// A conditional write at `expected`, acknowledged with the revision the node made
    /// (or `claimed`), applied on `replicas`; its history index.
    @discardableResult
    static func compareAndSet(_ run: inout Scenario, _ author: UserID, _ value: String, expected: UInt64,
                              claimed: UInt64? = nil, at replicas: [Int] = Scenario.everyReplica) -> Int {
        let delta = run.write(author, .teacher, .setRoomProperty(key: key, value: Array(value.utf8), cause: "chaos-cas",
                                                                 revision: PropertyRevision(condition: expected)), at: replicas)
        var made: UInt64 = 0
        if case let .setRoomProperty(_, _, _, revision) = delta.operation { made = revision.assigned }
        let index = run.history.count - 1
        run.history[index].property = nil
        run.history[index].compareAndSet = CompareAndSetMark(value: value, expected: expected, result: PropertyWriteResult(
            dot: delta.dot, revision: claimed ?? made, scope: .room, key: key))
        return index
    }

    static func check(_ run: Scenario, kept: [Int: Bool?] = [:], seen: [Dot: SeenPropertyWrite] = [:],
                      contentionFloor: Int = 0, splitFloor: Int = 0, cutWindows: [ClosedRange<UInt64>] = [],
                      mergeGraceMillis: UInt64 = 2_500) -> Check {
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        return CompareAndSetCheck(history: run.history, replicas: replicas, kept: kept, seen: seen,
                                  contentionFloor: contentionFloor, splitFloor: splitFloor, cutWindows: cutWindows,
                                  mergeGraceMillis: mergeGraceMillis).check()
    }

    /// A conditional write prepared at replica `origin` (its revision and lineage are that
    /// replica's), as a node on one side of a partition takes it; its history index.
    @discardableResult
    static func compareAndSet(_ run: inout Scenario, _ author: UserID, _ value: String, expected: UInt64, preparedAt origin: Int,
                              at replicas: [Int]) -> Int {
        run.now += 100
        run.counters[author, default: 0] += 1
        var write = Write(author: author, authorRole: .teacher, authorCounter: run.counters[author]!,
                          operation: .setRoomProperty(key: key, value: Array(value.utf8), cause: "chaos-race",
                                                      revision: PropertyRevision(condition: expected)))
        write = run.states[origin].prepare(write, origin: run.sequencer.replica, nowMillis: Scenario.epochMillis + run.now)
        let delta = run.sequencer.stamp(write, nowMillis: Scenario.epochMillis + run.now)
        run.apply(delta, at: replicas)
        var made: UInt64 = 0
        if case let .setRoomProperty(_, _, _, revision) = delta.operation { made = revision.assigned }
        run.history.append(WriteRecord(client: author, operation: delta.operation.name, invokedAt: run.now - 100, completedAt: run.now,
                                       outcome: .acknowledged(delta.dot),
                                       compareAndSet: CompareAndSetMark(value: value, expected: expected, result: PropertyWriteResult(
                                           dot: delta.dot, revision: made, scope: .room, key: key))))
        return run.history.count - 1
    }

    /// What the observers saw of the key on each replica now.
    static func seen(_ run: Scenario) -> [Dot: SeenPropertyWrite] {
        var seen: [Dot: SeenPropertyWrite] = [:]
        for state in run.states { if let write = SeenPropertyWrite(state.properties[key]) { seen[write.dot] = write } }
        return seen
    }

    /// Every replica merges what the others hold (the heal).
    static func heal(_ run: inout Scenario) {
        let merged = run.states.dropFirst().reduce(run.states[0]) { whole, state in
            var whole = whole
            whole.merge(state)
            return whole
        }
        run.states = Array(repeating: merged, count: run.states.count)
    }

    /// A split across a partition: n1 alone takes a1.1 at revision 1; n2 and n3 take
    /// a2.1 at revision 1 and a3.1 on top of it at revision 2, what the observers see, then the heal.
    static func splitAndHealed() -> (run: Scenario, seen: [Dot: SeenPropertyWrite], lone: Int, winners: [Int]) {
        var run = Scenario()
        run.startClass()
        let lone = compareAndSet(&run, "a1", "a1.1", expected: 0, preparedAt: 0, at: [0])
        let first = compareAndSet(&run, "a2", "a2.1", expected: 0, preparedAt: 1, at: [1, 2])
        // The observers see a1.1 on n1 and a2.1 on n2 and n3, then a3.1 replace a2.1 there.
        var everSeen = seen(run)
        let second = compareAndSet(&run, "a3", "a3.1", expected: 1, preparedAt: 1, at: [1, 2])
        everSeen.merge(seen(run)) { $1 }
        heal(&run)
        return (run, everSeen, lone, [first, second])
    }

    @Test func aSplitIsResolvedToTheLongerSideAndItsLoserJudgedLost() {
        let (run, seen, lone, winners) = Self.splitAndHealed()
        #expect(String(decoding: run.states[0].properties[Self.key]!.value.bytes!, as: UTF8.self) == "a3.1")
        let kept: [Int: Bool?] = [lone: false, winners[0]: true, winners[1]: true]
        // The partition ran while both writes of revision 1 were made.
        let partition = run.history[lone].invokedAt...run.history[winners[0]].completedAt
        let check = Self.check(run, kept: kept, seen: seen, splitFloor: 1, cutWindows: [partition])
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.contains("1 revisions accepted twice under a split (floor 1; 1 while a partition cut links), at most one kept, 1 judged lost"), "\(check.detail)")
        // The second write accepted at revision 1 is contention as much as a refusal would be.
        let contended = Self.check(run, kept: kept, seen: seen, contentionFloor: 1)
        #expect(contended.passed, "\(contended.detail)")
        #expect(contended.detail.contains("(0 refused revision-mismatch; 1 contended, floor 1)"), "\(contended.detail)")
        let later = (partition.upperBound + 1)...(partition.upperBound + 1_000)
        #expect(Self.check(run, kept: kept, seen: seen, cutWindows: [later]).detail.contains("(floor 0; 0 while a partition cut links)"))
        #expect(check.detail.contains("every replica holds the highest (revision, stamp) of 3 writes seen"), "\(check.detail)")
        #expect(check.detail.contains("the chain of the final value covers revisions 1-2 (1 splits within it, each resolved to one write): 2 acknowledged writes on it kept, 1 off it lost (1 told to their writers by a conflict or judged lost, 0 lost too far below the write that beat them for a lineage to tell)"), "\(check.detail)")
    }

    @Test func aSplitLoserNeverToldFails() {
        let (run, seen, lone, _) = Self.splitAndHealed()
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        // a1's client cannot tell (nil) and reported no conflict.
        let untold = CompareAndSetCheck(history: run.history, replicas: replicas, kept: [lone: nil], seen: seen).check()
        #expect(!untold.passed)
        #expect(untold.detail.contains("a1's write a1.1 (revision 1) was lost to"), "\(untold.detail)")
        #expect(untold.detail.contains("and its client was never told (no conflict reported, not judged lost)"), "\(untold.detail)")
        // A conflict its client reported during the run tells it as well.
        let dot = run.history[lone].compareAndSet!.result!.dot
        let told = CompareAndSetCheck(history: run.history, replicas: replicas, kept: [lone: nil], seen: seen, lossesTold: [dot]).check()
        #expect(told.passed, "\(told.detail)")
    }

    @Test func aLoserTooFarBelowTheWinnerForALineageIsCountedNotFailed() {
        var run = Scenario()
        run.startClass()
        // n1 alone takes a1.1; the other side makes ten revisions before the heal.
        let lone = Self.compareAndSet(&run, "a1", "a1.1", expected: 0, preparedAt: 0, at: [0])
        var seen = Self.seen(run)
        for revision in 0..<10 {
            Self.compareAndSet(&run, "a2", "a2.\(revision)", expected: UInt64(revision), preparedAt: 1, at: [1, 2])
            seen.merge(Self.seen(run)) { $1 }
        }
        let partition = run.history[lone].invokedAt...run.now
        Self.heal(&run)
        // a1's client cannot tell (the lineage of revision 10 reaches back to 2) and no conflict named it.
        let beyond = Self.check(run, kept: [lone: nil], seen: seen, cutWindows: [partition])
        #expect(beyond.passed, "\(beyond.detail)")
        #expect(beyond.detail.contains("10 acknowledged writes on it kept, 1 off it lost (0 told to their writers by a conflict or judged lost, 1 lost too far below the write that beat them for a lineage to tell)"), "\(beyond.detail)")
        // Had the winner been within 8 revisions when a1's client merged it, a1 must have been told.
        let near = Self.check(run, kept: [lone: nil], seen: seen, mergeGraceMillis: 0)
        #expect(!near.passed)
        #expect(near.detail.contains("a1's write a1.1 (revision 1) was lost to"), "\(near.detail)")
    }

    @Test func aSplitLoserJudgedKeptFails() {
        let (run, seen, lone, winners) = Self.splitAndHealed()
        let check = Self.check(run, kept: [lone: true, winners[0]: true, winners[1]: true], seen: seen)
        #expect(!check.passed)
        // Two kept at one revision, and the lone write off the chain judged kept (so never told it lost).
        #expect(check.detail.hasPrefix("3 problems, first: 2 writes accepted at revision 0 all judged kept"), "\(check.detail)")
        let alone = Self.check(run, kept: [lone: true], seen: seen)
        #expect(alone.detail.contains("a1's write a1.1 (revision 1) is judged kept by its client, but the final value descends from"), "\(alone.detail)")
    }

    @Test func aChainWriteJudgedLostFails() {
        let (run, seen, lone, winners) = Self.splitAndHealed()
        // a2.1 is in a3.1's lineage: kept, whatever its client says.
        let check = Self.check(run, kept: [lone: false, winners[0]: false], seen: seen)
        #expect(!check.passed)
        #expect(check.detail.contains("a2's write a2.1 (revision 1) is judged lost by its client, but the final value descends from it"), "\(check.detail)")
    }

    @Test func aReplicaHoldingTheLowerRankedWriteFails() {
        var run = Scenario()
        run.startClass()
        // Both at revision 1 on their own sides; the heal keeps the later stamp.
        let earlier = Self.compareAndSet(&run, "a1", "a1.1", expected: 0, preparedAt: 0, at: [0])
        Self.compareAndSet(&run, "a2", "a2.1", expected: 0, preparedAt: 1, at: [1, 2])
        let seen = Self.seen(run)
        Self.heal(&run)
        #expect(String(decoding: run.states[0].properties[Self.key]!.value.bytes!, as: UTF8.self) == "a2.1")
        let resolved = Self.check(run, kept: [earlier: false], seen: seen)
        #expect(resolved.passed, "\(resolved.detail)")
        // n3 keeps the earlier stamp: a merge that let the first write stand.
        var broken = run
        broken.states[2].properties[Self.key] = Register(PropertyValue(bytes: Array("a1.1".utf8), operatorID: "a1", cause: "chaos-race", revision: 1),
                                                       stamp: seen.values.min { $0.stamp < $1.stamp }!.stamp)
        let check = Self.check(broken, seen: seen)
        #expect(!check.passed)
        #expect(check.detail.contains("n3: holds a1.1 (revision 1"), "\(check.detail)")
        #expect(check.detail.contains("but a2.1 (revision 1") && check.detail.contains("the merge keeps the higher revision, then the later stamp"), "\(check.detail)")
    }

    @Test func contentionBelowTheFloorsFails() {
        var run = Scenario()
        run.startClass()
        Self.compareAndSet(&run, "t1", "t1.1", expected: 0)
        let calm = Self.check(run, contentionFloor: 1, splitFloor: 1)
        #expect(!calm.passed)
        #expect(calm.detail.hasPrefix("2 problems, first: 0 contended conditional writes (0 refused revision-mismatch), fewer than the floor of 1"), "\(calm.detail)")
        // A racer refused as stale meets the first floor; a split would meet the second.
        run.history.append(WriteRecord(client: "a1", operation: "set-room-property", invokedAt: run.now, completedAt: run.now + 1,
                                       outcome: .refused("revision-mismatch"), compareAndSet: CompareAndSetMark(value: "a1.1", expected: 0)))
        #expect(Self.check(run, contentionFloor: 1).passed)
        let noSplit = Self.check(run, contentionFloor: 1, splitFloor: 1)
        #expect(noSplit.detail.contains("0 revisions accepted twice (splits), fewer than the floor of 1"), "\(noSplit.detail)")
    }

    @Test func theFloorsFollowThePlannedFaultsAndNeedTwoRacers() {
        // A short run's faults, about 120 s: 2 teachers at 6 writes a second kick 1 in 100
        // (14 kicks), 3 racers race 200 rounds (400 contended writes); a quarter of each.
        let short = WorkloadFloors(plannedMillis: 120_000, teachers: 2, writesPerSecond: 6, racers: 3)
        #expect(short == WorkloadFloors(kicks: 3, contendedCompareAndSets: 100, splits: 1))
        // One racer has nobody to race: no contention floor, the kicks' stays.
        #expect(WorkloadFloors(plannedMillis: 120_000, teachers: 2, writesPerSecond: 6, racers: 1) == WorkloadFloors(kicks: 3))
        // However short the run, a kick is owed.
        #expect(WorkloadFloors(plannedMillis: 1_000, teachers: 1, writesPerSecond: 1, racers: 0).kicks == 1)
    }

    @Test func theChainReachesPastOneLineageThroughTheWritesSeen() {
        var run = Scenario()
        run.startClass()
        var seen: [Dot: SeenPropertyWrite] = [:]
        var dots: [Dot] = []
        for revision in 0..<12 {
            let index = Self.compareAndSet(&run, "a1", "a1.\(revision)", expected: UInt64(revision), preparedAt: 0, at: Scenario.everyReplica)
            dots.append(run.history[index].compareAndSet!.result!.dot)
            // The observers caught revision 4 only.
            if revision == 3 { seen = Self.seen(run) }
        }
        let final = SeenPropertyWrite(run.states[0].properties[Self.key])!
        #expect(final.lineage.count == 8)
        let short = CompareAndSetChain(final: final, seen: [:])
        #expect(short.lowestRevision == 4)
        #expect(short.keeps(dots[2], revision: 3) == nil)
        let long = CompareAndSetChain(final: final, seen: seen)
        #expect(long.lowestRevision == 1)
        #expect(long.keeps(dots[2], revision: 3) == true)
        #expect(long.keeps(dots[1], revision: 3) == false)
        #expect(long.contradictions.isEmpty)
    }

    @Test func aRacerMostlyRefusedAsStaleStillProgresses() {
        var run = Scenario.clean()
        let index = Self.compareAndSet(&run, "a1", "a1.1", expected: 0)
        for round in 2...5 {
            run.history.append(WriteRecord(client: "a1", operation: "set-room-property", invokedAt: run.now, completedAt: run.now + 1,
                                           outcome: .refused("revision-mismatch"), compareAndSet: CompareAndSetMark(value: "a1.\(round)", expected: 0)))
        }
        var checker = run.checker()
        checker.compareAndSetKept = [index: true]
        #expect(checker.run().checks.first { $0.name == "progress" }?.passed == true)
        // Refused for any other reason, the same writes are a cluster that does not answer.
        for offset in run.history.indices.suffix(4) { run.history[offset].outcome = .refused("unavailable") }
        let progress = run.checker().run().checks.first { $0.name == "progress" }
        #expect(progress?.passed == false)
        #expect(progress?.detail.contains("a1: 1 of 5 writes acknowledged") == true, "\(progress?.detail ?? "")")
    }

    @Test func aChainOfConditionalWritesPasses() {
        var run = Scenario()
        run.startClass()
        let first = Self.compareAndSet(&run, "t1", "t1.1", expected: 0)
        let second = Self.compareAndSet(&run, "t2", "t2.1", expected: 1)
        let check = Self.check(run, kept: [first: true, second: true])
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.hasPrefix("2 acknowledged conditional writes each made the next revision"), "\(check.detail)")
        #expect(check.detail.contains("every replica at revision 2 or later"))
    }

    @Test func aWriteThatSkippedARevisionFails() {
        var run = Scenario()
        run.startClass()
        Self.compareAndSet(&run, "t1", "t1.1", expected: 0, claimed: 2)
        let check = Self.check(run)
        #expect(!check.passed)
        #expect(check.detail.contains("t1's write t1.1 expected revision 0 and made 2"), "\(check.detail)")
    }

    @Test func anAcknowledgedRevisionMissingOnAReplicaFails() {
        var run = Scenario()
        run.startClass()
        Self.compareAndSet(&run, "t1", "t1.1", expected: 0)
        Self.compareAndSet(&run, "t2", "t2.1", expected: 1, at: [0])
        let check = Self.check(run)
        #expect(!check.passed)
        #expect(check.detail.contains("n2: cas at revision 1, below the acknowledged 2"), "\(check.detail)")
    }

    @Test func aValueNoWriteWroteFails() {
        var run = Scenario()
        run.startClass()
        Self.compareAndSet(&run, "t1", "t1.1", expected: 0)
        run.rewriteEverywhere { $0.properties[Self.key]?.value.bytes = Array("made up".utf8) }
        let check = Self.check(run)
        #expect(!check.passed)
        #expect(check.detail.contains("cas = made up, which no write wrote"), "\(check.detail)")
    }

    @Test func twoWritesAcceptedAtOneRevisionMayNotBothBeKept() {
        var run = Scenario()
        run.startClass()
        // A split: each side accepted a write at revision 0 (n1, which prepares every
        // write here, holds neither when it prepares them); the merge keeps one.
        let right = Self.compareAndSet(&run, "t2", "t2.1", expected: 0, at: [1, 2])
        let left = Self.compareAndSet(&run, "t1", "t1.1", expected: 0, at: [0])
        let both = Self.check(run, kept: [left: true, right: true])
        #expect(!both.passed)
        #expect(both.detail.contains("2 writes accepted at revision 0 all judged kept"), "\(both.detail)")
        // What the writers' clients would say after the heal: one kept, one lost (and the
        // replicas, not merged in this scenario, are left out of the comparison).
        var merged = run
        merged.states = [run.states[1], run.states[2]]
        let told = Self.check(merged, kept: [left: false, right: true])
        #expect(told.passed, "\(told.detail)")
        #expect(told.detail.contains("1 revisions accepted twice under a split (floor 0; 0 while a partition cut links), at most one kept, 1 judged lost"), "\(told.detail)")
    }

    @Test func sentButNeverAcknowledgedClaimsNothing() {
        var run = Scenario()
        run.startClass()
        run.history.append(WriteRecord(client: "t1", operation: "set-room-property", invokedAt: 1, completedAt: 2,
                                       outcome: .refused("unavailable"), compareAndSet: CompareAndSetMark(value: "t1.1", expected: 0)))
        let check = Self.check(run)
        #expect(!check.passed)
        #expect(check.detail.contains("nothing to check"))
    }

    // MARK: Presence state

    static func presence(_ run: inout Scenario, _ user: UserID, _ value: String, at replicas: [Int] = Scenario.everyReplica,
                         outcome: Outcome? = nil) {
        run.write(user, .student, .setPresenceState(user: user, session: "\(user)-1", items: [PresenceItem(key: WorkloadPlan.presenceKey, value: Array(value.utf8))]),
                  at: replicas, outcome: outcome)
        run.history[run.history.count - 1].presence = value
    }

    static func presenceCheck(_ run: Scenario, writers: [UserID] = ["s1"]) -> Check {
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        return PresenceStateCheck(history: run.history, replicas: replicas, writers: writers).check()
    }

    @Test func theLastAcknowledgedPresenceStateIsShownEverywhere() {
        var run = Scenario()
        run.startClass()
        Self.presence(&run, "s1", "s1.1")
        Self.presence(&run, "s1", "s1.2")
        let check = Self.presenceCheck(run)
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.hasPrefix("1 connected writers show their last acknowledged presence state (of 2"), "\(check.detail)")
        // A later write whose answer was lost may have landed: allowed.
        var unanswered = run
        Self.presence(&unanswered, "s1", "s1.3", outcome: .indeterminate("timeout"))
        #expect(Self.presenceCheck(unanswered).passed)
    }

    @Test func onlyTheCurrentClientsPresenceStateCounts() {
        var run = Scenario()
        run.startClass()
        Self.presence(&run, "s1", "s1.1")
        Self.presence(&run, "s2", "s2.1")
        // s1 is kicked: the state of its session is over, and its new client has set none.
        run.write("t1", .teacher, .kick(user: "s1"))
        let rejoinedAt = run.now
        let stale = Self.presenceCheck(run, writers: ["s1", "s2"])
        #expect(!stale.passed)
        #expect(stale.detail.contains("s1's mood is unset, the last acknowledged is s1.1"), "\(stale.detail)")
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        let current = PresenceStateCheck(history: run.history, replicas: replicas, writers: ["s1", "s2"], since: ["s1": rejoinedAt]).check()
        #expect(current.passed, "\(current.detail)")
        #expect(current.detail.hasPrefix("1 connected writers show their last acknowledged presence state"), "\(current.detail)")
    }

    @Test func anOlderOrMissingPresenceStateFails() {
        var run = Scenario()
        run.startClass()
        Self.presence(&run, "s1", "s1.1")
        Self.presence(&run, "s1", "s1.2", at: [0])
        let older = Self.presenceCheck(run)
        #expect(!older.passed)
        #expect(older.detail.contains("n2: s1's mood is s1.1, the last acknowledged is s1.2"), "\(older.detail)")
        var none = Scenario()
        none.startClass()
        Self.presence(&none, "s1", "s1.1", at: [])
        let missing = Self.presenceCheck(none)
        #expect(!missing.passed)
        #expect(missing.detail.contains("s1's mood is unset"), "\(missing.detail)")
        #expect(!Self.presenceCheck(none, writers: []).passed, "sent, none checked: nothing to check")
    }
}
