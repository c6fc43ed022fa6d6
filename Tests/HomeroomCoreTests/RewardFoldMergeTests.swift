import Testing
@testable import HomeroomCore

/// A state from before a reward fold, joined with one after it (either way), counts each reward once.
@Suite struct RewardFoldMergeTests {
    @Test func mergingAStateFromBeforeAFoldCountsEachRewardOnce() {
        var origin = RetirementTests.Origin(RetirementTests.old)
        var before = RoomState(roomID: "r")
        let deltas = [
            origin.stamp("bob", .student, counter: 1, .joinSession(user: "bob", session: "b1", name: "Bob", role: .student, host: RetirementTests.old, incarnation: 7)),
            origin.stamp("tina", .teacher, counter: 1, .joinSession(user: "tina", session: "t1", name: "Tina", role: .teacher, host: RetirementTests.old, incarnation: 7)),
            origin.stamp("tina", .teacher, counter: 2, RetirementTests.reward(5)),
            origin.stamp("tina", .teacher, counter: 3, RetirementTests.reward(7)),
        ]
        for delta in deltas { _ = before.apply(delta) }
        var after = before
        _ = after.apply(origin.stamp("node", .system, counter: 0, .foldRewards(user: "bob", upTo: 4, sum: 12)))
        #expect(after.users["bob"]?.rewardTotal == 12)
        var merged = after
        _ = merged.merge(before)
        #expect(merged.users["bob"]?.rewardTotal == 12, "merge of the state from before the fold: \(merged.users["bob"]?.rewardTotal ?? -1)")
        var other = before
        _ = other.merge(after)
        #expect(other.users["bob"]?.rewardTotal == 12, "the other way: \(other.users["bob"]?.rewardTotal ?? -1)")
    }
}
