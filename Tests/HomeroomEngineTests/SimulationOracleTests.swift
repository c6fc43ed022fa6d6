import Testing
import HomeroomCore
import HomeroomSimulation

/// The simulation's own checks can fail: the acknowledged-write oracle reports a write
/// kind every replica drops, and each anti-vacuity floor trips when what it counts
/// never happens.
@Suite struct SimulationOracleTests {
    /// Kinds whose only trace is a register (the replicas agree on dropping them, so no
    /// other check notices), each written often enough by one 600-step schedule.
    static let registerKinds = ["set-stage", "set-hand", "set-board", "set-device", "set-privilege", "kick", "mute-all",
                                "set-room-name", "set-class-state", "set-chat-muted", "assign-breakout-group", "set-presence-state",
                                "set-device-muted", "set-hand-raising", "invite-to-stage", "answer-invitation"]

    @Test(arguments: registerKinds)
    func aWriteKindNoReplicaAppliesFailsTheOracle(_ kind: String) {
        var config = SimulationConfig()
        config.steps = 600
        config.unappliedOperations = [kind]
        // Schedules until one acknowledged a write of the kind that nothing later stands for.
        var blamed: [String: Int] = [:]
        var reported: [String] = [], others: [String] = []
        for seed in UInt64(0xAC_0000)..<0xAC_0004 where blamed[kind] == nil {
            let report = Simulation.run(seed: seed, config: config)
            blamed.merge(report.writesWithoutEffect, uniquingKeysWith: +)
            reported += report.violations.filter { $0.contains("acknowledged \(kind) ") && $0.contains("has no effect") }
            others += report.violations.filter { !$0.contains("has no effect") && !$0.hasSuffix("acknowledged writes without effect") }
        }
        // That kind and no other: the oracle blames only what was dropped.
        #expect(Array(blamed.keys) == [kind], "\(blamed)")
        #expect(!reported.isEmpty)
        // Nothing else noticed: the replicas agree, and every view follows the registers.
        #expect(others.isEmpty, "\(others)")
    }

    /// What a run turns off, and the floors that must then trip.
    enum Disabled: String, CaseIterable, Sendable {
        case restarts, partitions, storeFailures, messaging, steps

        var tripped: Set<SimulationFloor> {
            switch self {
            case .restarts: [.restarts]
            case .partitions: [.partitions]
            case .storeFailures: [.storeFailures]
            case .messaging: [.lockGrants, .guardedWrites, .acceptedMessages]
            // Only the joins: nothing is over, so nothing folds.
            case .steps: [.restarts, .partitions, .folds, .lockGrants, .guardedWrites, .acceptedMessages]
            }
        }

        func apply(to config: inout SimulationConfig) {
            switch self {
            case .restarts: config.restarts = false
            case .partitions: config.partitionPercent = 0
            case .storeFailures: config.storeFailurePercent = 0
            case .messaging: config.messagingPercent = 0
            case .steps: config.steps = 0
            }
        }
    }

    @Test(arguments: Disabled.allCases)
    func aFloorTripsWhenWhatItCountsNeverHappens(_ disabled: Disabled) {
        var tally = SimulationTally()
        for seed in UInt64(0xF100_0000)..<0xF100_0004 {
            var config = SimulationTests.scheduleConfig(seed: seed)
            disabled.apply(to: &config)
            tally.add(Simulation.run(seed: seed, config: config))
        }
        // None happened, and the floors say so.
        for floor in disabled.tripped { #expect(tally.counts[floor, default: 0] == 0, "\(floor): \(tally)") }
        #expect(disabled.tripped.isSubset(of: Set(tally.tripped)), "\(tally); tripped \(tally.tripped)")
    }
}
