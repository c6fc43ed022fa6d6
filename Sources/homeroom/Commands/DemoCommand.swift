import HomeroomCore

/// `homeroom demo`: until the node and the live UI land, the demo is the Core
/// simulation: a three-replica room through loss, partitions and restarts,
/// then many seeded schedules, all checked for convergence.
enum DemoCommand {
    static let usage = """
        OVERVIEW: Run the Homeroom demo: one narrated simulated lesson, then a convergence sweep.

        USAGE: homeroom demo [--students <n>] [--schedules <n>] [--seed <n>]

        OPTIONS:
          --students <n>    Students in the lesson, 1-200 (default 12).
          --schedules <n>   Schedules in the sweep (default 2000).
          --seed <n>        Seed of the lesson (default 2026).
          -h, --help        Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let students = try reader.integer("--students", in: 1...200) ?? 12
        let schedules = try reader.integer("--schedules", in: 1...1_000_000) ?? 2_000
        let seed = try reader.integer("--seed", in: UInt64(0)...UInt64.max) ?? 2026
        try reader.finish()

        var config = SimulationConfig()
        config.replicas = 3
        config.students = students
        config.steps = 40 * students
        config.stageLimit = 4
        print("Homeroom demo: one room on 3 replicas, \(students) students, a teacher, an assistant and an observer.")
        print("Messages are dropped (\(config.dropPercent)%), duplicated (\(config.duplicatePercent)%) and reordered;")
        print("partitions come and go, nodes restart, \(config.forgedPercent)% of writes are forged past the admission check.\n")
        let lesson = Simulation.run(seed: seed, config: config)
        print(lesson)
        if let roster = lesson.finalRoster {
            print("")
            print(PlainRoster.render(roster))
        }
        print("\nConvergence sweep over \(schedules) seeded schedules (2-5 replicas each)...")
        var failed: [UInt64] = []
        var writes = 0
        for offset in 0..<UInt64(schedules) {
            var sweep = SimulationConfig()
            var rng = SplitMix64(seed: seed &+ offset)
            sweep.replicas = Int.random(in: 2...5, using: &rng)
            sweep.students = Int.random(in: 2...10, using: &rng)
            sweep.steps = Int.random(in: 50...250, using: &rng)
            let report = Simulation.run(seed: seed &+ offset, config: sweep)
            writes += report.writes
            if !report.converged { failed.append(report.seed) }
        }
        print("\(schedules - failed.count) of \(schedules) schedules (\(writes) writes) converged to identical replicas with every invariant held.")
        if !lesson.converged || !failed.isEmpty {
            throw .failure("divergence found; replay with: homeroom simulate --seed \(failed.first ?? seed)")
        }
    }
}
