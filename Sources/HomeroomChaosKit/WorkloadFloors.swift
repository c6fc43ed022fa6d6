/// The least the workload must have done for its checks not to pass on nothing: fewer
/// acknowledged kicks, fewer contended conditional writes (refused as stale, or a second
/// accepted at one revision), or fewer splits than these fail the run (`kicks`,
/// `compare-and-set`).
struct WorkloadFloors: Sendable, Equatable {
    var kicks = 0
    var contendedCompareAndSets = 0
    var splits = 0

    static let none = WorkloadFloors()

    /// For faults planned over `plannedMillis`: each teacher kicks in 1 of 100 writes at
    /// `writesPerSecond`, and the racers race every `CompareAndSetRace.periodMillis`. The
    /// floors are a quarter of what that gives (measured: docs/CHAOS.md), so only a
    /// workload that stopped kicking or contending falls below them, not a slow machine.
    init(plannedMillis: UInt64, teachers: Int, writesPerSecond: Double, racers: Int) {
        let seconds = Double(plannedMillis) / 1000
        kicks = max(1, Int(seconds * Double(teachers) * writesPerSecond / 100 / 4))
        guard racers >= 2 else { return }
        let rounds = seconds * 1000 / Double(CompareAndSetRace.periodMillis)
        // Each round, every racer but one is refused as stale, or accepted beside another (a split).
        contendedCompareAndSets = Int(rounds * Double(racers - 1) / 4)
        splits = 1
    }

    init(kicks: Int = 0, contendedCompareAndSets: Int = 0, splits: Int = 0) {
        self.kicks = kicks
        self.contendedCompareAndSets = contendedCompareAndSets
        self.splits = splits
    }
}
