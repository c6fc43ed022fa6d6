@preconcurrency import Glibc
import HomeroomNode
import HomeroomHarness

/// What one chaos run does, read from the command line.
struct ChaosOptions: Sendable {
    enum Mode: String, Sendable { case short, soak }

    var mode = Mode.short
    /// Soak length in seconds (the nemesis phase; startup and the final check come on top).
    var durationSeconds = 60
    var seed: UInt64 = 0
    var seedGiven = false
    var nodes = 5
    var netns = false
    /// The /24 the namespaces use: node i gets PREFIX.(10+i), the harness PREFIX.1.
    var subnetPrefix = "10.77.0"
    var basePort = 0
    var binary: String?
    var runDirectory: String?
    var reportPath: String?
    var teachers = 2
    var students = 6
    /// Assistants that race on the compare-and-set key (CompareAndSetRace.swift).
    var racers = 3
    /// Each writer aims at this many writes per second.
    var writesPerSecond = 6.0
    /// After the last heal every replica must be identical within this bound, or the run fails.
    var convergenceBoundMillis: UInt64 = 10_000
    /// The target that is reported (met or missed); it fails the run only with --strict.
    var convergenceTargetMillis: UInt64 = 1_000
    /// How long after the final heal the checker waits for every connected writer to be
    /// online (refutations and reclaimed sessions are writes made after the heal).
    var presenceBoundMillis: UInt64 = 5_000
    /// After every heal, writes acknowledged before it must be on every node within this
    /// (p99 over the heals), or the run fails. Measured on a 2-core VM (short runs, netns):
    /// p99 0.28-0.62 s; 0.87-1.11 s before links were renewed from suspicion on (CHAOS.md).
    var healBoundMillis: UInt64 = 2_500
    /// Of the writes a writer attempted, at least this share must be acknowledged, or the
    /// run fails (a cluster that refuses everything passes no other check). Measured: 99.8%.
    var minimumAcknowledgedRatio = 0.5
    var strict = false
    /// Nodes with a token key and a cluster key: sealed topics, keys that rotate at the ban.
    var closed = false
    var heartbeatMillis: UInt64?
    /// Passed to every node: a short window makes the nodes fold rewards during the run.
    var rewardWindowMillis: UInt64?
    /// Passed to every node: placement (`--replicas`): the room on that many nodes; the
    /// observers of the others follow `not-owner` to its owners.
    var replicas: Int?
    /// What the nodes run with: `--replicas`, else `homeroom node`'s default (3).
    var effectiveReplicas: Int { replicas ?? NodeConfig.commandDefaultReplicas }
    /// Passed to every node (`--probe-helpers`): how many other nodes a probe asks, or
    /// "off" (silence alone declares a peer down), to compare downs with and without.
    var probeHelpers: String?
    var onlyKinds: [FaultKind] = []
    /// Overrides how long each fault lasts (ms), e.g. to hold partitions past TCP's backoff.
    var faultMillis: ClosedRange<UInt64>?
    var keepRunDirectory = false
    var verbose = false
    /// Everything, startup and teardown included, ends within this many seconds.
    var hardLimitSeconds = 0
    /// Internal: the exact arguments, for the replay line.
    var replayArguments: [String] = []

    static let usage = """
        OVERVIEW: Jepsen-style partition and chaos runs against real `homeroom node` processes, with a checker.

        USAGE: homeroom-chaos [--short | --duration <seconds>] [--seed <n>] [--netns] [options]

        MODES:
          --short                 CI run: every fault kind once, about 2 minutes, at most 5 (default).
          --duration <seconds>    Soak: random faults, sometimes two at once, for this long.

        OPTIONS:
          --seed <n>              Seed of the fault schedule and the workload (default: random, printed).
          --nodes <n>             Cluster size, 3 to 9 (default 5).
          --netns                 One node per network namespace (needs root, ip, iptables): real partitions,
                                  packet loss with iptables. Without it: loopback, where only isolation
                                  (SIGUSR1) can cut links, so halves, ring and bridge partitions are skipped.
          --subnet <a.b.c>        The /24 inside the namespaces (default 10.77.0).
          --base-port <port>      Loopback: first port (node i uses base+10i .. base+10i+2; default: free ones).
          --binary <path>         The homeroom binary (default: next to this one, or HOMEROOM_BIN).
          --run-dir <path>        Where node data, logs and pid files go (default .build/chaos/run-<seed>).
          --report <file>         JSON report (default .build/chaos/report-<seed>.json).
          --teachers <n>          Teacher writers (default 2).   --students <n>  Student writers (default 6).
          --racers <n>            Assistants racing on one compare-and-set key, 0 to 6 (default 3; below 2
                                  there is no contention and no floor for it).
          --rate <n>              Writes per second per writer (default 6).
          --kinds <a,b,...>       Only these fault kinds: \(FaultKind.allCases.map(\.rawValue).joined(separator: ", ")).
          --fault-ms <a-b>        Each fault lasts a..b ms (default 3000-4500 short, 2000-8000 soak).
          --heartbeat-ms <n>      Passed to every node (default: the node's own).
          --reward-window-ms <n>  Passed to every node: with a short one (e.g. 3000) the nodes fold
                                  rewards during the run, under the faults (default: the node's 60000).
          --replicas <n>          Passed to every node: each room on n nodes (the node's default: 3; 0: every
                                  node holds every room, and no drain is planned); the observer of a
                                  node that does not keep the room reads it through the owners it names.
          --probe-helpers <n|off> Passed to every node: other nodes a probe of a silent peer asks (default
                                  the node's 3; off: silence alone declares down), to compare the downs.
          --convergence-bound-ms <n>   Fail when replicas differ this long after the last heal (default 10000).
          --heal-bound-ms <n>     Fail when writes acknowledged before a heal reach every node later than this, p99 over the heals (default 2500).
          --convergence-target-ms <n>  Reported target for heal-to-converged p99 (default 1000).
          --presence-bound-ms <n> Wait this long after the last heal for every connected writer to be online (default 5000).
          --strict                Also fail when a target is missed.
          --closed                Closed rooms: nodes with a token key and a cluster key (sealed
                                  topics, keys rotated by the mid-run ban), clients with tokens.
          --hard-limit <seconds>  Kill everything and fail past this (default: 300 short, twice the duration + 180 soak).
          --keep                  Keep the run directory (data, logs) after a passing run.
          --verbose               Narrate every step on stderr.
          -h, --help              Show help information.

        Exit: 0 when the checker passes, 1 when it fails, 64 on a usage error, 77 when --netns cannot run here.
        """

    static func parse(_ arguments: [String]) -> ChaosOptions {
        var options = ChaosOptions()
        options.replayArguments = []
        var index = 0
        func fail(_ message: String) -> Never {
            fputs("Error: \(message)\n\n\(usage)\n", stderr)
            exit(64)
        }
        func value(_ name: String) -> String {
            guard index + 1 < arguments.count else { fail("missing value for '\(name)'") }
            index += 1
            return arguments[index]
        }
        func integer<T: FixedWidthInteger>(_ name: String, _ range: ClosedRange<T>) -> T {
            let text = value(name)
            guard let number = T(text), range.contains(number) else {
                fail("'\(name)' must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
            }
            return number
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "-h", "--help":
                print(usage)
                exit(0)
            case "--short": options.mode = .short
            case "--duration":
                options.mode = .soak
                options.durationSeconds = integer(argument, 10...604_800)
            case "--seed":
                options.seed = integer(argument, UInt64(0)...UInt64.max)
                options.seedGiven = true
            case "--nodes": options.nodes = integer(argument, 3...9)
            case "--netns": options.netns = true
            case "--subnet":
                let text = value(argument)
                let parts = text.split(separator: ".")
                guard parts.count == 3, parts.allSatisfy({ UInt8($0) != nil }) else { fail("--subnet takes the first three octets, e.g. 10.77.0") }
                options.subnetPrefix = text
            case "--base-port": options.basePort = integer(argument, 1024...60_000)
            case "--binary": options.binary = value(argument)
            case "--run-dir": options.runDirectory = value(argument)
            case "--report": options.reportPath = value(argument)
            case "--teachers": options.teachers = integer(argument, 1...4)
            case "--students": options.students = integer(argument, 1...30)
            case "--racers": options.racers = integer(argument, 0...6)
            case "--rate": options.writesPerSecond = Double(integer(argument, 1...50) as Int)
            case "--kinds":
                let names = value(argument).split(separator: ",").map(String.init)
                options.onlyKinds = names.map { name in
                    guard let kind = FaultKind(rawValue: name) else {
                        fail("unknown fault kind '\(name)': use \(FaultKind.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    return kind
                }
            case "--fault-ms":
                let text = value(argument)
                let parts = text.split(separator: "-").compactMap { UInt64($0) }
                guard (1...2).contains(parts.count), parts.allSatisfy({ (500...600_000).contains($0) }), parts.first! <= parts.last! else {
                    fail("--fault-ms takes a length or a range in ms from 500 to 600000, e.g. 20000 or 5000-30000")
                }
                options.faultMillis = parts.first!...parts.last!
            case "--heartbeat-ms": options.heartbeatMillis = integer(argument, 10...10_000)
            case "--reward-window-ms": options.rewardWindowMillis = integer(argument, 1_000...3_600_000)
            case "--replicas": options.replicas = integer(argument, 0...9)
            case "--probe-helpers":
                let text = value(argument)
                guard text == "off" || Int(text).map({ (0...16).contains($0) }) == true else {
                    fail("--probe-helpers takes a number of nodes from 0 to 16, or off")
                }
                options.probeHelpers = text
            case "--convergence-bound-ms": options.convergenceBoundMillis = integer(argument, 100...600_000)
            case "--convergence-target-ms": options.convergenceTargetMillis = integer(argument, 10...600_000)
            case "--presence-bound-ms": options.presenceBoundMillis = integer(argument, 0...600_000)
            case "--heal-bound-ms": options.healBoundMillis = integer(argument, 100...600_000)
            case "--strict": options.strict = true
            case "--closed": options.closed = true
            case "--hard-limit": options.hardLimitSeconds = integer(argument, 30...1_000_000)
            case "--keep": options.keepRunDirectory = true
            case "--verbose": options.verbose = true
            default: fail("unknown argument '\(argument)'")
            }
            index += 1
        }
        if !options.seedGiven {
            options.seed = UInt64.random(in: 1...999_999_999)
        }
        if options.hardLimitSeconds == 0 {
            // A soak's drains and joins push the faults after them back by their heals (20 s
            // or more each), so a soak can run up to about twice its duration.
            options.hardLimitSeconds = options.mode == .short ? 300 : options.durationSeconds * 2 + 180
            if let range = options.faultMillis, options.mode == .short {
                // Each fault once, each up to the longest length plus its quiet period.
                options.hardLimitSeconds += FaultKind.allCases.count * Int(range.upperBound / 1000 + 5)
            }
        }
        // The replay line: the same schedule, whatever the run directory or report path.
        var replay = [options.mode == .short ? "--short" : "--duration \(options.durationSeconds)", "--seed \(options.seed)",
                      "--nodes \(options.nodes)"]
        if options.netns { replay.append("--netns") }
        if !options.onlyKinds.isEmpty { replay.append("--kinds \(options.onlyKinds.map(\.rawValue).joined(separator: ","))") }
        if options.teachers != 2 { replay.append("--teachers \(options.teachers)") }
        if options.students != 6 { replay.append("--students \(options.students)") }
        if options.racers != 3 { replay.append("--racers \(options.racers)") }
        if options.writesPerSecond != 6 { replay.append("--rate \(Int(options.writesPerSecond))") }
        if let heartbeat = options.heartbeatMillis { replay.append("--heartbeat-ms \(heartbeat)") }
        if let window = options.rewardWindowMillis { replay.append("--reward-window-ms \(window)") }
        if let replicas = options.replicas { replay.append("--replicas \(replicas)") }
        if let helpers = options.probeHelpers { replay.append("--probe-helpers \(helpers)") }
        if options.closed { replay.append("--closed") }
        if let range = options.faultMillis { replay.append("--fault-ms \(range.lowerBound)-\(range.upperBound)") }
        options.replayArguments = replay
        return options
    }
}

extension FaultKind {
    /// Why a kind was skipped: the harness option it needs.
    var needs: String { needsPlacement ? "placement: --replicas 1 or more" : "--netns" }

    /// "a, b (need --netns); c (need placement: ...)" for the skipped kinds.
    static func describeSkipped(_ kinds: [FaultKind]) -> String {
        Dictionary(grouping: kinds, by: \.needs).sorted { $0.key < $1.key }
            .map { "\($0.value.map(\.rawValue).joined(separator: ", ")) (need \($0.key))" }.joined(separator: "; ")
    }
}
