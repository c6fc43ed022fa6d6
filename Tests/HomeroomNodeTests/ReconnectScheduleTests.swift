import HomeroomCore
import HomeroomNode
import Testing

/// Issue 43: Signaling's reconnect schedule. After the immediate first round, waits of
/// 2, 4, 8, 16 s between failed rounds, then suspended with a round every 30 s, forever.
@Suite struct ReconnectScheduleTests {
    static func exact() -> ReconnectSchedule {
        var options = ReconnectSchedule.Options()
        options.jitter = 0
        return ReconnectSchedule(options)
    }

    @Test func theDefaultsAreSignalings() {
        let options = ReconnectSchedule.Options()
        #expect(options.backoffMillis == [2_000, 4_000, 8_000, 16_000])
        #expect(options.suspendedIntervalMillis == 30_000)
        #expect(options.jitter > 0 && options.jitter <= 0.25, "a little jitter, not a different schedule")
    }

    @Test func waitsDoubleFromTwoToSixteenSecondsThenEveryThirtyForever() {
        var schedule = Self.exact()
        var random = SplitMix64(seed: 1)
        #expect(!schedule.isSuspended && schedule.failedRounds == 0)
        let steps = (0..<50).map { _ in schedule.roundFailed(using: &random) }
        #expect(steps.prefix(4).map(\.waitMillis) == [2_000, 4_000, 8_000, 16_000])
        #expect(steps.prefix(4).allSatisfy { !$0.suspended }, "still backing off")
        #expect(steps.dropFirst(4).allSatisfy { $0 == ReconnectSchedule.Step(waitMillis: 30_000, suspended: true) })
        #expect(schedule.isSuspended && schedule.failedRounds == 50)
    }

    @Test func attachedAgainTheNextLossStartsTheBackoffOver() {
        var schedule = Self.exact()
        var random = SplitMix64(seed: 2)
        for _ in 0..<7 { _ = schedule.roundFailed(using: &random) }
        #expect(schedule.isSuspended)
        schedule.reset()
        #expect(!schedule.isSuspended && schedule.failedRounds == 0)
        #expect(schedule.roundFailed(using: &random) == ReconnectSchedule.Step(waitMillis: 2_000, suspended: false))
    }

    @Test func jitterOnlyLengthensAWaitAndByAtMostItsShare() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var random = SplitMix64(seed: seed)
        var schedule = ReconnectSchedule()   // 10 % jitter
        var sawJitter = false
        for round in 0..<200 {
            let base: UInt64 = round < 4 ? [2_000, 4_000, 8_000, 16_000][round] : 30_000
            let step = schedule.roundFailed(using: &random)
            #expect(step.waitMillis >= base && step.waitMillis <= base + base / 10,
                    "round \(round): \(step.waitMillis) ms; replay: seed \(seed) in ReconnectScheduleTests.jitterOnlyLengthensAWaitAndByAtMostItsShare")
            if step.waitMillis != base { sawJitter = true }
        }
        #expect(sawJitter, "200 waits without jitter; seed \(seed)")
    }

    @Test func theSameSeedGivesTheSameWaits() {
        func waits(_ seed: UInt64) -> [UInt64] {
            var random = SplitMix64(seed: seed)
            var schedule = ReconnectSchedule()
            return (0..<8).map { _ in schedule.roundFailed(using: &random).waitMillis }
        }
        #expect(waits(42) == waits(42))
        #expect(waits(42) != waits(43))
    }

    @Test func aShortScheduleForTestsKeepsItsShape() {
        var schedule = ReconnectSchedule(.init(backoffMillis: [100], suspendedIntervalMillis: 500, jitter: 0))
        var random = SplitMix64(seed: 3)
        #expect(schedule.roundFailed(using: &random) == .init(waitMillis: 100, suspended: false))
        #expect(schedule.roundFailed(using: &random) == .init(waitMillis: 500, suspended: true))
        #expect(schedule.roundFailed(using: &random) == .init(waitMillis: 500, suspended: true))
        // No backoff at all: suspended after the first failed round.
        var none = ReconnectSchedule(.init(backoffMillis: [], suspendedIntervalMillis: 700, jitter: 0))
        #expect(none.roundFailed(using: &random) == .init(waitMillis: 700, suspended: true))
    }
}
