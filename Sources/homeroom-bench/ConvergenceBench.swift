@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport

/// Convergence after a heal, five in-process nodes on tcp loopback with the default
/// timings (heartbeat 200 ms, suspect 1 s, down 2 s). Each round a seeded fault
/// (two halves, one node isolated, a bridge node that sees both halves, or 25% loss)
/// holds for 3 s while a writer spreads writes over 10 rooms on every node; the writes
/// stop at the heal. Measured per round: until every write acknowledged before the
/// heal is on every node, and until every room is identical on every node (a full
/// read). The baseline is the same writes with no fault, in the same run, measured
/// from the last write. Downs are counted: in the fault-free rounds any down is false.
///
/// Faults are the nodes' own fault policy (messages dropped at the node), so TCP stays
/// up: this is the protocol's repair time. Real partitions (network namespaces, TCP
/// backoff) are homeroom-chaos's after-heal figures (docs/CHAOS.md).
enum ConvergenceBench {
    static let rooms = (0..<10).map { "conv-\($0)" }

    enum Fault: CaseIterable {
        case halves, isolate, bridge, loss
        var name: String {
            switch self {
            case .halves: "partition-halves"
            case .isolate: "isolate"
            case .bridge: "partition-bridge"
            case .loss: "packet-loss-25"
            }
        }
    }

    struct Round {
        var acknowledgedMillis: Double
        var identicalMillis: Double
        var writes: Int
        var downs: UInt64
    }

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        guard let nodes = cluster() else {
            fputs("convergence: the five nodes did not form a cluster\n", stderr)
            return
        }
        defer { for node in nodes { node.stop() } }
        for room in rooms {
            for (index, node) in nodes.enumerated() {
                node.join(room: room, user: "teacher-\(index)", role: .teacher, session: "t\(index)-\(room)", name: "Teacher \(index)")
            }
        }
        guard ClusterBench.waitUntil(seconds: 20, { identical(nodes) }) else {
            fputs("convergence: the rooms did not settle before the rounds\n", stderr)
            return
        }
        let rounds = quick ? 4 : 12
        var rng = SplitMix64(seed: 20261203)
        var baseline: [Round] = []
        var faulted: [Round] = []
        for index in 0..<(rounds * 2) {
            // Alternate: a fault-free round, then a fault round, so both see the same machine.
            let fault = index % 2 == 0 ? nil : Fault.allCases[Int(rng.next() % UInt64(Fault.allCases.count))]
            guard let round = self.round(nodes, fault: fault, rng: &rng) else {
                fputs("convergence: stopped; no rows from a run with a round that did not settle\n", stderr)
                exit(1)
            }
            if fault == nil { baseline.append(round) } else { faulted.append(round) }
        }
        func percentile(_ values: [Double], _ percent: Int) -> Double {
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, (sorted.count * percent + 99) / 100 - 1)]
        }
        let baseP99 = percentile(baseline.map(\.identicalMillis), 99)
        let falseDowns = baseline.reduce(0) { $0 + $1.downs }
        emit(BenchRow(suite: "convergence", name: "no-fault-5-nodes-10-rooms-identical", n: baseline.count,
                      p50Micros: percentile(baseline.map(\.identicalMillis), 50) * 1000, p99Micros: baseP99 * 1000,
                      note: "from the last write's acknowledgement until every room is identical on every node (polled every 2 ms); \(baseline.reduce(0) { $0 + $1.writes }) writes; downs in these rounds (false): \(falseDowns)"))
        let healedAcknowledged = faulted.map(\.acknowledgedMillis), healedIdentical = faulted.map(\.identicalMillis)
        emit(BenchRow(suite: "convergence", name: "after-heal-5-nodes-acknowledged-on-every-node", n: faulted.count,
                      p50Micros: percentile(healedAcknowledged, 50) * 1000, p99Micros: percentile(healedAcknowledged, 99) * 1000,
                      target: "p99 <= 1 s",
                      note: "from the heal until every write acknowledged before it is on every node; 3 s faults: halves, isolate, bridge, 25% loss"))
        emit(BenchRow(suite: "convergence", name: "after-heal-5-nodes-10-rooms-identical", n: faulted.count,
                      p50Micros: percentile(healedIdentical, 50) * 1000, p99Micros: percentile(healedIdentical, 99) * 1000,
                      ratioVsRaw: baseP99 > 0 ? percentile(healedIdentical, 99) / baseP99 : nil, target: "p99 <= 1 s",
                      note: "from the heal until every room is identical on every node (full read); ratio is p99 vs the no-fault row; downs during the faults: \(faulted.reduce(0) { $0 + $1.downs })"))
        emit(BenchRow(suite: "convergence", name: "false-downs-5-nodes-no-fault", n: Int(falseDowns), target: "0",
                      note: "n: peers declared down during the \(baseline.count) fault-free rounds (under the same writes)"))
    }

    static func cluster() -> [ClusterNode]? {
        let logger = Logger(label: "bench", level: .error)
        var nodes: [ClusterNode] = []
        for index in 0..<5 {
            var config = NodeConfig(name: "conv-\(index)-\(UInt32.random(in: 0...UInt32.max))", listen: "tcp://127.0.0.1:0",
                                    publish: "tcp://127.0.0.1:0", seeds: nodes.map(\.listenAddress))
            config.writesPerSecond = 1_000_000
            config.writeBytesPerSecond = 1 << 40
            guard let node = try? ClusterNode(config: config, logger: logger) else { return nil }
            nodes.append(node)
        }
        guard ClusterBench.waitUntil(seconds: 15, { nodes.allSatisfy { $0.alivePeers.count == 4 } }) else { return nil }
        return nodes
    }

    static func identical(_ nodes: [ClusterNode]) -> Bool {
        rooms.allSatisfy { room in
            guard let first = nodes[0].room(room) else { return false }
            return nodes.dropFirst().allSatisfy { $0.room(room) == first }
        }
    }

    /// One round: writes for 3 s (under the fault, if any), then the heal and the waits.
    static func round(_ nodes: [ClusterNode], fault: Fault?, rng: inout SplitMix64) -> Round? {
        let order = Array(0..<5).shuffled(using: &rng)
        if let fault { apply(fault, to: nodes, order: order, seed: rng.next()) }
        let downsBefore = nodes.reduce(UInt64(0)) { $0 + $1.metrics["peers_declared_down_total"] }
        var acknowledged: [(room: String, dot: Dot)] = []
        var counter = UInt64(WallClock.nowMillis()) * 1000
        let deadline = WallClock.monotonicMillis() + 3_000
        var step = 0
        // Paced before each write, and the loop ends on a write: the round's clock starts
        // right after the last acknowledgement.
        repeat {
            usleep(2_000)
            step += 1
            counter += 1
            let index = step % nodes.count
            let room = rooms[(step / nodes.count) % rooms.count]
            let ack = nodes[index].submit(room: room, Write(author: "teacher-\(index)", authorRole: .teacher, authorCounter: counter,
                                                             operation: .setRoomProperty(key: "k\(step % 16)", value: Array("\(counter)".utf8), cause: "bench")))
            if ack.status == .accepted, let dot = ack.dot { acknowledged.append((room, dot)) }
        } while WallClock.monotonicMillis() < deadline
        let healedAt = monotonicNanos()
        if fault != nil { for node in nodes { node.faults = FaultPolicy() } }
        var acknowledgedAt: UInt64?
        var identicalAt: UInt64?
        let waitUntil = WallClock.monotonicMillis() + 15_000
        while WallClock.monotonicMillis() < waitUntil && identicalAt == nil {
            // One read of every room on every node, then the time: what the read shows was
            // true by then (the checks below cost nothing on the clock).
            let views = nodes.map { node in Dictionary(uniqueKeysWithValues: rooms.map { ($0, node.room($0)) }) }
            let now = monotonicNanos()
            if acknowledgedAt == nil, acknowledged.allSatisfy({ entry in views.allSatisfy { $0[entry.room]??.seen.contains(entry.dot) == true } }) {
                acknowledgedAt = now
            }
            if acknowledgedAt != nil, rooms.allSatisfy({ room in views.allSatisfy { $0[room]! != nil && $0[room]! == views[0][room]! } }) {
                identicalAt = now
            }
            usleep(2_000)
        }
        // Quiet until every node hears every other again (refutations and sessions settle),
        // so the next round starts from a whole cluster.
        guard ClusterBench.waitUntil(seconds: 10, { nodes.allSatisfy { $0.alivePeers.count == 4 } && identical(nodes) }) else {
            // Its downs would spill into the next round's count.
            fputs("convergence: the cluster did not re-form within 10 s of a round (\(fault?.name ?? "no fault"))\n", stderr)
            return nil
        }
        let downsAfter = nodes.reduce(UInt64(0)) { $0 + $1.metrics["peers_declared_down_total"] }
        guard let acknowledgedAt, let identicalAt else {
            fputs("convergence: a round (\(fault?.name ?? "no fault")) did not converge within 15 s of its heal\n", stderr)
            return nil
        }
        return Round(acknowledgedMillis: Double(acknowledgedAt - healedAt) / 1e6, identicalMillis: Double(identicalAt - healedAt) / 1e6,
                     writes: acknowledged.count, downs: downsAfter - downsBefore)
    }

    static func apply(_ fault: Fault, to nodes: [ClusterNode], order: [Int], seed: UInt64) {
        let replicas = nodes.map(\.replica)
        func block(_ side: [Int], from other: [Int]) {
            for index in side {
                var policy = nodes[index].faults
                policy.blocked.formUnion(other.map { replicas[$0] })
                nodes[index].faults = policy
            }
        }
        switch fault {
        case .halves:
            let a = Array(order.prefix(2)), b = Array(order.dropFirst(2))
            block(a, from: b)
            block(b, from: a)
        case .isolate:
            var policy = FaultPolicy()
            policy.isolated = true
            nodes[order[0]].faults = policy
            block(Array(order.dropFirst()), from: [order[0]])
        case .bridge:
            // order[0] sees both sides; the two sides do not see each other.
            let a = Array(order[1...2]), b = Array(order[3...4])
            block(a, from: b)
            block(b, from: a)
        case .loss:
            for (index, node) in nodes.enumerated() { node.faults = FaultPolicy(seed: seed &+ UInt64(index), dropPercent: 25) }
        }
    }
}
