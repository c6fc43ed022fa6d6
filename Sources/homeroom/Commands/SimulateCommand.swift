import HomeroomCore
import HomeroomSimulation

/// `homeroom simulate`: seeded schedules of the node engine over Core, several rooms
/// each, with loss, duplication, partitions and restarts, ending in a convergence check.
enum SimulateCommand {
    static let usage = """
        OVERVIEW: Run seeded simulations of rooms replicated on several nodes (two rooms and, in a small classroom, a breakout group's room) and check that every replica converges.

        USAGE: homeroom simulate [--seed <n>] [--schedules <n>] [--replicas <n>] [--students <n>] [--steps <n>] [--json]

        OPTIONS:
          --seed <n>        First seed (default 1). A failing seed replays exactly.
          --schedules <n>   How many schedules to run, seeds seed..seed+n-1 (default 1).
          --replicas <n>    Replicas (nodes) per schedule, 2-16 (default 3).
          --students <n>    Students per room, 1-500 (default 8).
          --steps <n>       Random steps per schedule, 1-1000000 (default 300).
          --json            Print one JSON object per schedule instead of text.
          -h, --help        Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let seed = try reader.integer("--seed", in: UInt64(0)...UInt64.max) ?? 1
        let schedules = try reader.integer("--schedules", in: 1...10_000_000) ?? 1
        var config = SimulationConfig()
        config.replicas = try reader.integer("--replicas", in: 2...16) ?? 3
        config.students = try reader.integer("--students", in: 1...500) ?? 8
        config.steps = try reader.integer("--steps", in: 1...1_000_000) ?? 300
        let json = reader.flag("--json")
        try reader.finish()

        var failed: [UInt64] = []
        for offset in 0..<UInt64(schedules) {
            let report = Simulation.run(seed: seed &+ offset, config: config)
            if !report.converged { failed.append(report.seed) }
            if json {
                print("{\"seed\":\(report.seed),\"writes\":\(report.writes),\"refused_at_origin\":\(report.refusedAtOrigin),"
                    + "\"rejected_by_merge\":\(report.rejectedByMerge),\"messages\":\(report.messagesSent),"
                    + "\"dropped\":\(report.messagesDropped),\"duplicated\":\(report.messagesDuplicated),"
                    + "\"partitions\":\(report.partitions),\"delivery_digest\":\"\(String(report.deliveryDigest, radix: 16))\","
                    + "\"converged\":\(report.converged)}")
            } else if schedules == 1 || !report.converged {
                print(report)
                if let roster = report.finalRoster, schedules == 1 {
                    print("")
                    print(PlainRoster.render(roster))
                }
            }
        }
        if !json && schedules > 1 {
            print("\(schedules - failed.count) of \(schedules) schedules converged with every invariant held")
        }
        if !failed.isEmpty {
            throw .failure("\(failed.count) schedule(s) diverged; replay with: homeroom simulate --seed \(failed[0])")
        }
    }
}
