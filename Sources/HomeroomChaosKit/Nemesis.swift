@preconcurrency import Glibc
import HomeroomCore
import HomeroomEngine
import HomeroomHarness

/// The faults the nemesis injects.
enum FaultKind: String, CaseIterable, Sendable {
    /// Two random halves that cannot reach each other.
    case halves = "partition-halves"
    /// Every node sees a majority (itself and its ring neighbours), no two the same one.
    case ring = "partition-ring"
    /// Two halves plus one node that sees both sides.
    case bridge = "partition-bridge"
    /// One node cut from every other (its clients still reach it).
    case isolate
    /// SIGKILL a minority; restart them at the heal.
    case kill
    /// SIGSTOP one node; SIGCONT at the heal.
    case pause
    /// Restart one node with its clock far off (--clock-skew-ms); restart it right at the heal.
    case clockSkew = "clock-skew"
    /// Drop a share of cluster packets (iptables in netns; the node's --fault-drop-percent on loopback).
    case loss = "packet-loss"
    /// Hold cluster messages (the node's --fault-delay-ms and --fault-jitter-ms).
    case latency
    /// A planned removal under way: `POST /drain` to one node, which hands its rooms to
    /// the others and stops by itself; at the heal it joins again, on its own store or
    /// (half the seeds) on an empty one, a replacement machine with the same name, so
    /// the room moves back to it. Needs placement (`--replicas`).
    case drain
    /// A member under a name the cluster has never seen joins (on an empty store), so
    /// the room moves to it from one of its owners while clients write; at the heal it
    /// is drained and leaves, and the room moves back. Needs placement (`--replicas`).
    case join

    var needsLinkCuts: Bool { self == .halves || self == .ring || self == .bridge }

    /// Only with placement: without it every node holds every room, and nothing moves.
    var needsPlacement: Bool { self == .drain || self == .join }

    /// A drain or a join overlaps no other fault: the moving node hands rooms only to
    /// owners it hears, and the heal waits for that (a cut would fail it for the cut's sake).
    var overlapsNothing: Bool { self == .drain || self == .join }

    /// Faults of the network and faults of processes can overlap in a soak.
    var isNetworkFault: Bool { needsLinkCuts || self == .isolate || self == .loss }
}

/// One fault of the schedule, fully decided by the seed before the run starts.
struct PlannedFault: Sendable {
    var kind: FaultKind
    var startMillis: UInt64
    var durationMillis: UInt64
    /// Nodes in the order the kind uses them (shuffled): the halves, the ring, the
    /// bridge first, or the target(s).
    var nodes: [Int]
    /// How many of `nodes` a kill or a restart with flags takes.
    var targets: Int
    /// Skew (ms, signed), loss (%), or delay (ms).
    var amount: Int
    var jitter: Int
    var faultSeed: UInt64

    var endMillis: UInt64 { startMillis + durationMillis }

    func describe(nodeCount: Int) -> String {
        func names(_ list: [Int]) -> String { list.map { "n\($0 + 1)" }.joined(separator: ",") }
        switch kind {
        case .halves:
            let half = nodeCount / 2
            return "{\(names(Array(nodes.prefix(half))))} | {\(names(Array(nodes.dropFirst(half))))}"
        case .ring: return "ring \(names(nodes)), each sees its neighbours"
        case .bridge:
            let rest = Array(nodes.dropFirst())
            let half = rest.count / 2
            return "{\(names(Array(rest.prefix(half))))} | {\(names(Array(rest.dropFirst(half))))}, bridge n\(nodes[0] + 1)"
        case .isolate: return "n\(nodes[0] + 1) alone"
        case .kill: return "SIGKILL \(names(Array(nodes.prefix(targets))))"
        case .pause: return "SIGSTOP n\(nodes[0] + 1)"
        case .clockSkew: return "n\(nodes[0] + 1) clock \(amount > 0 ? "+" : "")\(amount) ms"
        case .loss: return "\(amount)% of cluster packets dropped" + (targets > 0 ? " at \(names(Array(nodes.prefix(targets))))" : "")
        case .latency: return "cluster messages held \(amount)+0..\(jitter) ms at \(names(Array(nodes.prefix(targets))))"
        case .drain: return "n\(nodes[0] + 1) drained, then back " + (amount == 1 ? "on an empty store" : "on its store")
        case .join: return "a new member joins on an empty store, drained at the heal"
        }
    }
}

/// The fault schedule: a pure function of the seed and the options.
enum Schedule {
    /// A drain lasts until the node has handed every room off and stopped: its clients'
    /// sessions there lapse (`--session-timeout-ms`, 10 s) once they have moved, then the
    /// owners' settle period (`--handoff-settle-ms`, 10 s) runs; its fault is planned that long.
    static let drainMillis: ClosedRange<UInt64> = 20_000...24_000

    /// How far off the clock-skew fault sets a node's clock (either way). The nodes' drift
    /// limit is set just above it (`ChaosRun`), so a skewed node's deltas are still taken
    /// and reward folds, which wait for the drift limit, come during the run.
    static let clockSkewMillis: ClosedRange<Int> = 2_000...20_000

    /// The newcomer of the join fault: the first name after the members' (`n<nodes+1>`,
    /// then on) that is the room's first owner once it joins, so the room moves to it and
    /// clients sent on by a `not-owner` answer (owners best first) write there.
    static func newcomerName(nodes: Int, replicas: Int) -> String {
        let members = (1...nodes).map { "n\($0)" }
        for number in (nodes + 1)...(nodes + 64) {
            let candidate = "n\(number)"
            if Placement(replicas: replicas, members: members + [candidate]).owners(of: ChaosRun.room).first == candidate {
                return candidate
            }
        }
        return "n\(nodes + 1)"
    }

    static func make(options: ChaosOptions, cutsLinks: Bool) -> (faults: [PlannedFault], skipped: [FaultKind]) {
        var rng = SplitMix64(seed: options.seed ^ 0x6E656D6573697321)
        let n = options.nodes
        let requested = options.onlyKinds.isEmpty ? FaultKind.allCases : options.onlyKinds
        let placed = options.effectiveReplicas > 0
        let available = requested.filter { (cutsLinks || !$0.needsLinkCuts) && (placed || !$0.needsPlacement) }
        let skipped = requested.filter { !available.contains($0) }
        guard !available.isEmpty else { return ([], skipped) }

        func plan(_ kind: FaultKind, at start: UInt64, duration: UInt64) -> PlannedFault {
            let order = Array(0..<n).shuffled(using: &rng)
            var fault = PlannedFault(kind: kind, startMillis: start, durationMillis: duration, nodes: order, targets: 1,
                                     amount: 0, jitter: 0, faultSeed: rng.next() % 1_000_000)
            let minority = max(1, (n - 1) / 2)
            switch kind {
            case .kill: fault.targets = Int.random(in: 1...minority, using: &rng)
            case .clockSkew:
                let magnitude = Int.random(in: clockSkewMillis, using: &rng)
                fault.amount = Bool.random(using: &rng) ? magnitude : -magnitude
            case .loss:
                fault.amount = Int.random(in: 10...35, using: &rng)
                // Loopback drops at the nodes themselves (a restart with flags), netns on the links.
                fault.targets = cutsLinks ? 0 : Int.random(in: 1...minority, using: &rng)
            case .latency:
                fault.amount = Int.random(in: 30...250, using: &rng)
                fault.jitter = Int.random(in: 0...150, using: &rng)
                fault.targets = Int.random(in: 1...minority, using: &rng)
            case .drain:
                // One of the room's owners, so its copy is handed off and comes back.
                let owners = Placement(replicas: options.effectiveReplicas, members: (1...n).map { "n\($0)" })
                    .owners(of: ChaosRun.room).compactMap { Int($0.dropFirst()).map { $0 - 1 } }
                if let target = owners.randomElement(using: &rng) {
                    fault.nodes = [target] + order.filter { $0 != target }
                }
                // 1: back on an empty store (a new replica id, the same name).
                fault.amount = Int.random(in: 0...1, using: &rng)
            case .join:
                // The newcomer's index comes after the members'.
                fault.nodes = [n] + order
            default: break
            }
            return fault
        }
        func length(_ kind: FaultKind, _ range: ClosedRange<UInt64>) -> UInt64 {
            UInt64.random(in: kind.overlapsNothing && options.faultMillis == nil ? drainMillis : options.faultMillis ?? range, using: &rng)
        }

        var faults: [PlannedFault] = []
        var clock: UInt64 = 0
        switch options.mode {
        case .short:
            // Every available kind once, in a seeded order.
            for kind in available.shuffled(using: &rng) {
                let duration = length(kind, 3_000...4_500)
                faults.append(plan(kind, at: clock, duration: duration))
                clock += duration + UInt64.random(in: 3_000...4_000, using: &rng)
            }
        case .soak:
            let end = UInt64(options.durationSeconds) * 1000
            var round = 0
            let firstRound = available.shuffled(using: &rng)
            while clock < end {
                // Every kind once first, then at random; a third of the time a network
                // fault and a process fault overlap.
                let kind = round < firstRound.count ? firstRound[round] : available.randomElement(using: &rng)!
                let duration = length(kind, 2_000...8_000)
                faults.append(plan(kind, at: clock, duration: duration))
                if Int.random(in: 0..<3, using: &rng) == 0 && !kind.overlapsNothing {
                    let others = available.filter { $0.isNetworkFault != kind.isNetworkFault && !$0.overlapsNothing }
                    if let second = others.randomElement(using: &rng) {
                        let offset = UInt64.random(in: 0...(duration / 2), using: &rng)
                        faults.append(plan(second, at: clock + offset, duration: duration - offset))
                    }
                }
                clock += duration + UInt64.random(in: 2_500...5_000, using: &rng)
                round += 1
            }
        }
        return (faults, skipped)
    }
}

/// Carries out the schedule against the running cluster, and heals.
final class Nemesis {
    struct Event {
        var atMillis: UInt64
        var action: String
        var kind: FaultKind?
        var detail: String
    }

    let cluster: Cluster
    private(set) var events: [Event] = []
    /// The times the cluster became whole again (no fault active), for convergence samples.
    private(set) var fullHeals: [(at: UInt64, kinds: String)] = []
    /// Kinds active since the cluster was last whole.
    private var sinceWhole: [FaultKind] = []
    private(set) var kindsExercised: [FaultKind: Int] = [:]
    private(set) var failures: [String] = []
    /// Each fault's time span and the nodes it touches (nil: every pair may be cut), for
    /// telling the downs a fault explains from false ones (`FalseDowns`).
    private(set) var spans: [FaultSpan] = []
    /// Set once the run is interrupted: a drain still running is not waited for.
    var hurry = false
    /// The run's interruption (a signal): waits in a heal end at once too.
    private let interrupted: Flag
    private var hurrying: Bool { hurry || interrupted.isSet }

    // Active faults.
    private var cuts: [Set<Int>]
    private var lossPercent = 0
    private var isolatedBySignal: Set<Int> = []
    private var killed: Set<Int> = []
    private var paused: Set<Int> = []
    /// Nodes asked to drain, until they join again.
    private var drained: Set<Int> = []
    /// Drains that ran to the end (the node handed its rooms off and stopped by itself).
    private(set) var drainsCompleted = 0
    /// Joins whose newcomer was drained out at the heal and stopped by itself.
    private(set) var joinsCompleted = 0
    /// Client writes the newcomers accepted.
    private(set) var newcomerWrites = 0
    /// Joins a client through the newcomer and has it write, recorded in the history;
    /// true when the newcomer itself acknowledged the write (set by the run).
    var writeThroughNewcomer: ((NodeHandle) -> Bool)?
    /// Nodes running with fault flags, to be restarted plain at the heal.
    private var flagged: Set<Int> = []
    private var active = 0

    init(cluster: Cluster, interrupted: Flag = Flag()) {
        self.cluster = cluster
        self.interrupted = interrupted
        cuts = Array(repeating: [], count: cluster.nodes.count)
    }

    func log(_ action: String, _ kind: FaultKind?, _ detail: String) {
        events.append(Event(atMillis: Clock.now, action: action, kind: kind, detail: detail))
        say("nemesis: \(action) \(kind?.rawValue ?? "") \(detail)")
    }

    private func addCuts(_ groups: [[Int]]) {
        // Nodes in different groups cannot talk; a node in several groups (the bridge) talks to all of them.
        let n = cluster.nodes.count
        for a in 0..<n {
            for b in 0..<n where a != b {
                let together = groups.contains { $0.contains(a) && $0.contains(b) }
                if !together { cuts[a].insert(b) }
            }
        }
    }

    func begin(_ fault: PlannedFault) {
        let n = cluster.nodes.count
        let detail = fault.describe(nodeCount: n)
        spans.append(FaultSpan(kind: fault.kind, plannedAt: fault.startMillis, affected: Self.affected(by: fault, cutsLinks: cluster.network.cutsLinks),
                               from: Clock.now, to: nil))
        kindsExercised[fault.kind, default: 0] += 1
        active += 1
        sinceWhole.append(fault.kind)
        do throws(SpawnError) {
            switch fault.kind {
            case .halves:
                let half = n / 2
                addCuts([Array(fault.nodes.prefix(half)), Array(fault.nodes.dropFirst(half))])
                try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
            case .ring:
                // Each node sees itself and `reach` neighbours on either side: a majority, a different one per node.
                let majority = n / 2 + 1
                let reach = max(1, majority / 2)
                // Cut a pair unless they are ring neighbours within reach.
                for a in 0..<n {
                    for b in 0..<n where a != b {
                        let pa = fault.nodes.firstIndex(of: a)!, pb = fault.nodes.firstIndex(of: b)!
                        let distance = min((pa - pb + n) % n, (pb - pa + n) % n)
                        if distance > reach { cuts[a].insert(b) }
                    }
                }
                try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
            case .bridge:
                let bridge = fault.nodes[0]
                let rest = Array(fault.nodes.dropFirst())
                let half = rest.count / 2
                addCuts([Array(rest.prefix(half)) + [bridge], Array(rest.dropFirst(half)) + [bridge]])
                try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
            case .isolate:
                let target = fault.nodes[0]
                if cluster.network.cutsLinks {
                    for other in 0..<n where other != target {
                        cuts[target].insert(other)
                        cuts[other].insert(target)
                    }
                    try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
                } else {
                    cluster.nodes[target].signal(SIGUSR1)
                    isolatedBySignal.insert(target)
                }
            case .kill:
                // Not a draining node: its drain would end unfinished (it is not kept across a restart).
                for target in fault.nodes.prefix(fault.targets) where cluster.nodes[target].isRunning && !drained.contains(target) {
                    cluster.crash(target)
                    killed.insert(target)
                }
            case .pause:
                let target = fault.nodes[0]
                if !killed.contains(target) && !drained.contains(target) && cluster.nodes[target].isRunning {
                    cluster.nodes[target].signal(SIGSTOP)
                    paused.insert(target)
                }
            case .clockSkew:
                let target = fault.nodes[0]
                try restartWithFlags(target, ["--clock-skew-ms", "\(fault.amount)"])
            case .loss:
                if cluster.network.cutsLinks {
                    lossPercent = fault.amount
                    try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
                } else {
                    for target in fault.nodes.prefix(fault.targets) {
                        try restartWithFlags(target, ["--fault-seed", "\(fault.faultSeed)", "--fault-drop-percent", "\(fault.amount)",
                                                      "--fault-duplicate-percent", "10"])
                    }
                }
            case .latency:
                for target in fault.nodes.prefix(fault.targets) {
                    try restartWithFlags(target, ["--fault-seed", "\(fault.faultSeed)", "--fault-delay-ms", "\(fault.amount)",
                                                  "--fault-jitter-ms", "\(fault.jitter)"])
                }
            case .drain:
                try startDrain(fault.nodes[0])
            case .join:
                try cluster.startNewcomer()
            }
            log("start", fault.kind, detail)
        } catch {
            failures.append("could not inject \(fault.kind.rawValue) (\(detail)): \(error)")
            log("failed", fault.kind, "\(detail): \(error)")
        }
    }

    private func restartWithFlags(_ target: Int, _ flags: [String]) throws(SpawnError) {
        guard !killed.contains(target), !paused.contains(target), !drained.contains(target) else { return }
        cluster.stop(target)
        try cluster.start(target, faultFlags: flags)
        flagged.insert(target)
        if isolatedBySignal.contains(target) { cluster.nodes[target].signal(SIGUSR1) }
    }

    /// `POST /drain`: the node hands its rooms off and stops by itself (see `finishDrain`).
    /// Refused (409) only while no other node is alive to take them: in a soak, a network
    /// fault that cut it off; with none running, a refusal fails the run.
    private func startDrain(_ target: Int) throws(SpawnError) {
        let node = cluster.nodes[target]
        guard !killed.contains(target), !paused.contains(target), !flagged.contains(target), node.isRunning else {
            log("skip", .drain, "n\(target + 1) is not running plainly: not drained")
            return
        }
        guard let (status, body) = node.request("POST", "/drain", headers: ["X-Homeroom-Action: drain"]) else {
            throw SpawnError("n\(target + 1) did not answer POST /drain")
        }
        switch status {
        case 202, 200:
            cluster.expectDrain(target)
            drained.insert(target)
        case 409 where cuts[target].count > 0 || isolatedBySignal.contains(target) || lossPercent > 0:
            log("refused", .drain, "n\(target + 1): no other node alive to take its rooms (it is cut off): \(body)")
        default:
            throw SpawnError("POST /drain to n\(target + 1) answered \(status): \(body)")
        }
    }

    /// Waits (bounded) until a drained node has stopped by itself, then starts it again:
    /// a member once more, so the rooms it owns come back to it. On an empty store
    /// (`fresh`) it is a replacement machine with the same name and a new replica id.
    private func finishDrain(_ target: Int, fresh: Bool) throws(SpawnError) {
        guard drained.contains(target) else { return }
        drained.remove(target)
        let node = cluster.nodes[target]
        if node.isRunning {
            let deadline = Clock.now + (hurrying ? 0 : Self.drainBoundMillis)
            while node.isRunning && Clock.now < deadline && !interrupted.isSet {
                cluster.reapDrained(target)
                if node.isRunning { Clock.sleep(millis: 50) }
            }
        }
        let completed = !node.isRunning
        if node.isRunning && hurrying {
            cluster.stop(target)
        } else if node.isRunning {
            failures.append("n\(target + 1) was still draining \(Self.drainBoundMillis / 1000) s after its fault's planned end (a drain must end once the others hold its rooms); log tail:\n\(node.logTail(10))")
            cluster.stop(target)
        } else {
            drainsCompleted += 1
        }
        cluster.endDrain(target)
        // Only a store whose rooms all went to their owners is thrown away.
        if fresh && completed { removeTree(node.dataDirectory) }
        try cluster.start(target, faultFlags: [])
    }

    /// How long after its planned end a drain may still run.
    static let drainBoundMillis: UInt64 = 30_000

    /// How long the heal waits (polling) for the newcomer to hold the room.
    static let newcomerHoldsBoundMillis: UInt64 = 10_000

    private func waitUntilNewcomerHoldsRoom(_ newcomer: NodeHandle) -> Bool {
        let deadline = Clock.now + Self.newcomerHoldsBoundMillis
        while Clock.now < deadline && !interrupted.isSet && newcomer.isRunning {
            if (newcomer.metrics()["homeroom_rooms"] ?? 0) >= 1 { return true }
            Clock.sleep(millis: 200)
        }
        return false
    }

    /// How long the newcomer's drain, asked at its fault's planned end, may run: its
    /// clients' sessions lapse and the owners settle (about 20 s), with the same margin.
    static let newcomerDrainBoundMillis: UInt64 = 50_000

    /// The join's heal: `POST /drain` to the newcomer, which hands the rooms it took back
    /// and stops by itself (bounded); its store then goes, so a later join is a new machine.
    private func finishJoin() throws(SpawnError) {
        guard let newcomer = cluster.newcomer, newcomer.isRunning else { return }
        // The join moved the room: the newcomer, its first owner, holds it by now and
        // serves it: a client that joins through it writes there, and that write must
        // outlive the newcomer's departure on every replica (the checker holds them to it).
        if !hurrying && !waitUntilNewcomerHoldsRoom(newcomer) {
            failures.append("the newcomer \(newcomer.name), \(ChaosRun.room)'s first owner, did not hold it at its join's heal (waited \(Self.newcomerHoldsBoundMillis / 1000) s)")
        } else if let writeThroughNewcomer, !hurrying, !writeThroughNewcomer(newcomer) {
            failures.append("the newcomer \(newcomer.name), \(ChaosRun.room)'s first owner, acknowledged no write of a client that joined through it")
        }
        newcomerWrites += Int(newcomer.metrics()["homeroom_writes_accepted_total"] ?? 0)
        guard let (status, body) = newcomer.request("POST", "/drain", headers: ["X-Homeroom-Action: drain"]) else {
            cluster.stopNewcomer()
            throw SpawnError("the newcomer \(newcomer.name) did not answer POST /drain")
        }
        guard status == 202 || status == 200 else {
            cluster.stopNewcomer()
            throw SpawnError("POST /drain to the newcomer \(newcomer.name) answered \(status): \(body)")
        }
        newcomer.draining = true
        let deadline = Clock.now + (hurrying ? 0 : Self.newcomerDrainBoundMillis)
        var cleanExit = false
        while newcomer.isRunning && Clock.now < deadline && !interrupted.isSet {
            cleanExit = cluster.reapNewcomer() == true
            if newcomer.isRunning { Clock.sleep(millis: 50) }
        }
        let completed = !newcomer.isRunning && cleanExit
        if completed {
            joinsCompleted += 1
        } else if !hurrying && newcomer.isRunning {
            failures.append("the newcomer \(newcomer.name) was still draining \(Self.newcomerDrainBoundMillis / 1000) s after its join's heal (a drain must end once the others hold its rooms); log tail:\n\(newcomer.logTail(10))")
        }
        cluster.stopNewcomer()
        newcomer.draining = false
        // Only a store whose rooms all went to their owners is thrown away.
        if completed { removeTree(newcomer.dataDirectory) }
    }

    /// The nodes a fault touches: whoever it kills, pauses, isolates or restarts; nil when
    /// it may cut any pair (partitions, loss on every link).
    static func affected(by fault: PlannedFault, cutsLinks: Bool) -> Set<Int>? {
        switch fault.kind {
        case .halves, .ring, .bridge: return nil
        case .isolate, .pause, .drain, .join: return [fault.nodes[0]]
        case .kill, .clockSkew, .latency: return Set(fault.nodes.prefix(fault.targets))
        case .loss: return cutsLinks ? nil : Set(fault.nodes.prefix(fault.targets))
        }
    }

    /// Ends one fault (restoring only what it did); when none is left, heals whatever remains.
    func end(_ fault: PlannedFault) {
        active -= 1
        // The fault lasts until its heal is done: a drain's node stops during the heal's
        // wait, and its silence from then on is the fault's.
        defer {
            if let open = spans.lastIndex(where: { $0.kind == fault.kind && $0.plannedAt == fault.startMillis && $0.to == nil }) {
                spans[open].to = Clock.now
            }
        }
        do throws(SpawnError) {
            switch fault.kind {
            case .halves, .ring, .bridge, .isolate:
                if fault.kind == .isolate && !cluster.network.cutsLinks {
                    let target = fault.nodes[0]
                    cluster.nodes[target].signal(SIGUSR2)
                    isolatedBySignal.remove(target)
                } else {
                    cuts = Array(repeating: [], count: cluster.nodes.count)
                    try cluster.network.apply(cuts: cuts, lossPercent: lossPercent)
                }
            case .kill:
                for target in fault.nodes.prefix(fault.targets) where killed.contains(target) {
                    try cluster.start(target, faultFlags: [])
                    killed.remove(target)
                    if isolatedBySignal.contains(target) { cluster.nodes[target].signal(SIGUSR1) }
                }
            case .pause:
                let target = fault.nodes[0]
                if paused.contains(target) {
                    cluster.nodes[target].signal(SIGCONT)
                    paused.remove(target)
                }
            case .clockSkew, .latency:
                for target in fault.nodes.prefix(fault.targets) where flagged.contains(target) {
                    try restartPlain(target)
                }
            case .loss:
                if cluster.network.cutsLinks {
                    lossPercent = 0
                    try cluster.network.apply(cuts: cuts, lossPercent: 0)
                } else {
                    for target in fault.nodes.prefix(fault.targets) where flagged.contains(target) { try restartPlain(target) }
                }
            case .drain:
                try finishDrain(fault.nodes[0], fresh: fault.amount == 1)
            case .join:
                try finishJoin()
            }
            log("heal", fault.kind, fault.describe(nodeCount: cluster.nodes.count))
        } catch {
            failures.append("could not heal \(fault.kind.rawValue): \(error)")
            log("failed", fault.kind, "heal: \(error)")
        }
        if active == 0 {
            healAll()
            fullHeals.append((Clock.now, sinceWhole.map(\.rawValue).joined(separator: "+")))
            sinceWhole = []
        }
    }

    private func restartPlain(_ target: Int) throws(SpawnError) {
        cluster.stop(target)
        try cluster.start(target, faultFlags: [])
        flagged.remove(target)
        if isolatedBySignal.contains(target) { cluster.nodes[target].signal(SIGUSR1) }
    }

    /// Removes every fault: links, loss, isolation, pauses; restarts crashed and flagged
    /// nodes; lets drains end and starts the drained nodes again.
    func healAll() {
        do throws(SpawnError) {
            if cuts.contains(where: { !$0.isEmpty }) || lossPercent > 0 {
                cuts = Array(repeating: [], count: cluster.nodes.count)
                lossPercent = 0
                try cluster.network.apply(cuts: cuts, lossPercent: 0)
            }
        } catch {
            failures.append("could not heal the network: \(error)")
        }
        for target in isolatedBySignal { cluster.nodes[target].signal(SIGUSR2) }
        isolatedBySignal = []
        for target in paused { cluster.nodes[target].signal(SIGCONT) }
        paused = []
        for target in flagged.union(killed).sorted() {
            do throws(SpawnError) {
                cluster.stop(target)
                try cluster.start(target, faultFlags: [])
            } catch {
                failures.append("could not restart n\(target + 1): \(error)")
            }
        }
        flagged = []
        killed = []
        for target in drained.sorted() {
            do throws(SpawnError) {
                try finishDrain(target, fresh: false)
            } catch {
                failures.append("could not start n\(target + 1) after its drain: \(error)")
            }
        }
        if cluster.newcomer?.isRunning == true {
            do throws(SpawnError) {
                try finishJoin()
            } catch {
                failures.append("could not drain the newcomer: \(error)")
            }
        }
        for index in cluster.nodes.indices where !cluster.nodes[index].isRunning {
            do throws(SpawnError) {
                try cluster.start(index, faultFlags: [])
            } catch {
                failures.append("could not restart n\(index + 1): \(error)")
            }
        }
    }

    /// Runs the schedule on this thread; `tick` is called about every 50 ms (crash
    /// watch, interruption). Returns false when interrupted.
    func run(_ schedule: [PlannedFault], tick: () -> Bool) -> Bool {
        var origin = Clock.now
        var pendingStarts = schedule.sorted { $0.startMillis < $1.startMillis }
        var running: [PlannedFault] = []
        while !pendingStarts.isEmpty || !running.isEmpty {
            guard tick() else { return false }
            let elapsed = Clock.now - origin
            if let index = running.firstIndex(where: { $0.endMillis <= elapsed }) {
                let fault = running.remove(at: index)
                end(fault)
                // A drain's or a join's heal waits for a node to hand its rooms off (20 s or
                // more): the schedule after it moves on by as much, so the next faults keep
                // their planned lengths instead of starting late and ending on time.
                let late = Clock.now - origin
                if fault.kind.overlapsNothing && late > fault.endMillis { origin += late - fault.endMillis }
                continue
            }
            if let next = pendingStarts.first, next.startMillis <= elapsed {
                pendingStarts.removeFirst()
                begin(next)
                running.append(next)
                continue
            }
            Clock.sleep(millis: 50)
        }
        // The quiet period after the last heal.
        let quietUntil = Clock.now + 3_000
        while Clock.now < quietUntil {
            guard tick() else { return false }
            Clock.sleep(millis: 50)
        }
        return true
    }
}
