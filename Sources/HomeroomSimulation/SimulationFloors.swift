/// Anti-vacuity floors over many schedules: a run in which too few faults or writes of
/// a kind happened checked too little, and fails. Each floor is a rate per schedule,
/// far below what the test's schedules give (measured over its 2,000 default seeds).
public enum SimulationFloor: String, CaseIterable, Sendable {
    case restarts, partitions, storeFailures, folds, lockGrants, guardedWrites, acceptedMessages, acknowledgedWrites

    /// The least a schedule must give on average: about a quarter of what the test's
    /// 2,000 default schedules (`SimulationTests`, seeds 0x5EED0000...) gave when measured.
    var perSchedule: Double {
        switch self {
        // Measured: 4,301 (2.2 a schedule).
        case .restarts: 0.5
        // Measured: 3,612 (1.8).
        case .partitions: 0.4
        // Client writes refused `store-failed`; measured: 3,852 (1.9).
        case .storeFailures: 0.4
        // Session and reward folds; measured: 29,815 (15).
        case .folds: 3
        // Measured: 831 (0.42).
        case .lockGrants: 0.1
        // Rare in the workload (a moderator's write under the fence it holds at its node);
        // measured: 45 (0.023). CI's 10,000 schedules give some 225.
        case .guardedWrites: 0.005
        // Measured: 10,282 (5.1).
        case .acceptedMessages: 1
        // Acknowledged writes times replicas; measured: 422,637 (211).
        case .acknowledgedWrites: 50
        }
    }
}

/// What many schedules added up to, for the floors.
public struct SimulationTally: Sendable, CustomStringConvertible {
    public private(set) var schedules = 0
    public private(set) var counts: [SimulationFloor: Int] = [:]

    public init() {}

    public mutating func add(_ report: SimulationReport) {
        schedules += 1
        counts[.restarts, default: 0] += report.restarts
        counts[.partitions, default: 0] += report.partitions
        counts[.storeFailures, default: 0] += report.storeFailures
        counts[.folds, default: 0] += report.sessionFolds + report.rewardFolds
        counts[.lockGrants, default: 0] += report.lockGrants
        counts[.guardedWrites, default: 0] += report.guardedWrites
        counts[.acceptedMessages, default: 0] += report.messagesAccepted
        counts[.acknowledgedWrites, default: 0] += report.acknowledgedWritesChecked
    }

    /// The least `floor` allows for this many schedules (at least one).
    public func required(_ floor: SimulationFloor) -> Int {
        max(1, Int((floor.perSchedule * Double(schedules)).rounded(.up)))
    }

    /// The floors this tally is below, in a fixed order.
    public var tripped: [SimulationFloor] {
        SimulationFloor.allCases.filter { counts[$0, default: 0] < required($0) }
    }

    /// One line per tripped floor, saying what happened and what was required.
    public var shortfalls: [String] {
        tripped.map { "too few \($0.rawValue) in \(schedules) schedules: \(counts[$0, default: 0]), at least \(required($0)) required" }
    }

    public var description: String {
        "\(schedules) schedules: " + SimulationFloor.allCases.map { "\(counts[$0, default: 0]) \($0.rawValue)" }.joined(separator: ", ")
    }
}
