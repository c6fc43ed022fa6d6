@testable import HomeroomCore
import HomeroomNode
import Testing
@testable import homeroom_chaos

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

    static func check(_ run: Scenario, kept: [Int: Bool?] = [:]) -> Check {
        let replicas = run.states.indices.map { FinalReplica(label: "n\($0 + 1)", state: run.states[$0]) }
        return CompareAndSetCheck(history: run.history, replicas: replicas, kept: kept).check()
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
        #expect(told.detail.contains("1 revisions accepted twice under a split, at most one kept, 1 judged lost"), "\(told.detail)")
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
