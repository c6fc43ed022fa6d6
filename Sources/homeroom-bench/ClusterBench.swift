@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomNNG
import HomeroomWire
import Synchronization
import HomeroomSupport

/// Cluster suites: delivered deltas/s and propagation latency between in-process
/// nodes on tcp loopback, each beside raw nng pub/sub of the same message size
/// measured in the same run; convergence after a healed partition.
enum ClusterBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let sample = sampleMessageSize()
        let rawCount = quick ? 50_000 : 200_000
        let raw = try? RawBaseline.pubSubThroughput(messageSize: sample, count: rawCount, sendBuffer: 8192, receiveBuffer: 8192)
        if let raw {
            emit(BenchRow(suite: "raw-nng", name: "pubsub-tcp-\(sample)B", n: rawCount, opsPerSecond: raw.messagesPerSecond,
                          bytesPerOp: Double(sample), note: "messages/s of one-delta messages, one PUB to one SUB; \(raw.lost) lost"))
        }
        let rawLatency = rawOneWayLatency(messageSize: sample, count: quick ? 1_000 : 5_000)
        if let rawLatency {
            emit(BenchRow(suite: "raw-nng", name: "pubsub-tcp-latency-\(sample)B", n: rawLatency.count,
                          p50Micros: rawLatency.p50, p99Micros: rawLatency.p99))
        }
        // The same hop over Homeroom's own SP transport (what the nodes use), same pacing.
        if let sp = spOneWayLatency(messageSize: sample, count: quick ? 1_000 : 5_000) {
            emit(BenchRow(suite: "sp-transport", name: "pubsub-tcp-latency-\(sample)B", n: sp.count, p50Micros: sp.p50, p99Micros: sp.p99,
                          ratioVsRaw: rawLatency.map { sp.p99 / $0.p99 }, note: "Homeroom's SP PUB to one SP SUB; ratio is p99 vs raw nng p99 of this run"))
        }
        for size in quick ? [2, 3] : [2, 3, 5] {
            throughput(nodes: size, writes: quick ? 50_000 : 200_000, emit: emit)
            latency(nodes: size, writes: quick ? 1_000 : 5_000, raw: rawLatency, emit: emit)
        }
        convergence(users: quick ? 2_000 : 10_000, changes: quick ? 20_000 : 100_000, emit: emit)
    }

    /// The size of a one-delta batch envelope, the unit a lightly loaded node sends.
    static func sampleMessageSize() -> Int { batchMessageSize(deltas: 1) }

    /// The size of a batch envelope of `count` device deltas (what a busy node sends per publish).
    static func batchMessageSize(deltas count: Int) -> Int {
        var sequencer = Sequencer(replica: ReplicaID(name: "bench#1"))
        let now = WallClock.nowMillis()
        let deltas = (0..<max(1, count)).map { index in
            sequencer.stamp(Write(author: "student-\(1000 + index)", authorRole: .student, authorCounter: UInt64(index + 1),
                                  operation: .setDevice(user: "student-\(1000 + index)", device: .camera, on: true)), nowMillis: now)
        }
        let envelope = WireEnvelope(roomID: "bench", sender: sequencer.replica, sequence: 1, clock: deltas[0].clock,
                                    message: .deltaBatch(WireMessage.DeltaBatch(origin: sequencer.replica, deltas: deltas)))
        return WireCodec.encode(envelope).count + Topics.nodeRoom("bench").count
    }

    static func makeCluster(_ size: Int, heartbeatMillis: UInt64 = 200, clusterPublish: Bool = false) -> [ClusterNode]? {
        let logger = Logger(label: "bench", level: .error)
        var nodes: [ClusterNode] = []
        for index in 0..<size {
            var config = NodeConfig(name: "bench-\(size)-\(index)-\(UInt32.random(in: 0...UInt32.max))", listen: "tcp://127.0.0.1:0",
                                    publish: "tcp://127.0.0.1:0", seeds: nodes.first.map { [$0.listenAddress] } ?? [])
            config.heartbeatMillis = heartbeatMillis
            config.suspectMillis = heartbeatMillis * 5
            config.downMillis = heartbeatMillis * 15
            if clusterPublish { config.clusterPublish = "tcp://127.0.0.1:0" }
            guard let node = try? ClusterNode(config: config, logger: logger) else { return nil }
            nodes.append(node)
        }
        let deadline = WallClock.monotonicMillis() + 10_000
        while WallClock.monotonicMillis() < deadline && !nodes.allSatisfy({ $0.alivePeers.count == size - 1 }) { usleep(10_000) }
        return nodes
    }

    static func joinUsers(_ node: ClusterNode, room: String, users: Int) {
        _ = node.join(room: room, user: "teacher", role: .teacher, session: "teacher-1", name: "Teacher")
        for index in 0..<users {
            _ = node.join(room: room, user: "student-\(index)", role: .student, session: "s-\(index)", name: "Student \(index)")
        }
    }

    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = WallClock.monotonicMillis() + UInt64(seconds * 1000)
        while WallClock.monotonicMillis() < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return condition()
    }

    /// Acknowledged writes per second until every other node has them, in deltas; the
    /// baseline is raw nng sending the same deltas the same way the nodes did (batches of
    /// the mean size the receivers applied, one batch per message), also in deltas.
    static func throughput(nodes size: Int, writes: Int, emit: (BenchRow) -> Void) {
        guard let nodes = makeCluster(size) else { return }
        defer { for node in nodes { node.stop() } }
        let room = "tp"
        joinUsers(nodes[0], room: room, users: 1_000)
        _ = waitUntil(seconds: 10) { nodes.allSatisfy { $0.room(room)?.seen == nodes[0].room(room)?.seen } }
        let received = (1..<size).map { _ in Counter() }
        let batches = (1..<size).map { _ in Counter() }
        for (index, node) in nodes.dropFirst().enumerated() {
            let counter = received[index], batchCounter = batches[index]
            node.observeRemoteDeltas { _, deltas in
                counter.add(deltas.count)
                batchCounter.add(1)
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<writes {
            let user = "student-\(index % 1_000)"
            _ = nodes[0].submit(room: room, Write(author: user, authorRole: .student, authorCounter: UInt64(index + 1),
                                                  operation: .setDevice(user: user, device: .camera, on: index & 1 == 0)))
        }
        // Delivered: every other node has every delta (by pub/sub, or repaired by sync).
        let target = nodes[0].room(room)!.seen
        let done = waitUntil(seconds: 60) { nodes.dropFirst().allSatisfy { $0.room(room)?.seen.dominates(target) ?? false } }
        let viaPubSub = received.map(\.value).min() ?? 0
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(writes) / seconds
        // The same deltas raw: batches of the size the receivers applied, to one SUB (the
        // nodes sent to size - 1 subscribers, so the baseline has less to do).
        let busiest = (0..<(size - 1)).min { received[$0].value < received[$1].value } ?? 0
        let perBatch = max(1, received[busiest].value / max(1, batches[busiest].value))
        let batchBytes = batchMessageSize(deltas: perBatch)
        let raw = try? RawBaseline.pubSubThroughput(messageSize: batchBytes, count: max(1, writes / perBatch), sendBuffer: 8192, receiveBuffer: 8192)
        let rawDeltas = raw.map { $0.messagesPerSecond * Double(perBatch) }
        emit(BenchRow(suite: "cluster", name: "throughput-\(size)-nodes-tcp", n: writes, opsPerSecond: rate, seconds: seconds,
                      ratioVsRaw: rawDeltas.map { rate / $0 }, target: ">= raw nng deltas/s in the same batches (ratio >= 1)",
                      note: done ? "deltas/s: acknowledged writes at one node until every other node has them; \(viaPubSub) by pub/sub "
                                     + "(in batches of \(perBatch) on average), the rest repaired by sync; ratio vs the raw row of this size"
                                 : "INCOMPLETE: not every delta arrived within 60 s"))
        if let raw, let rawDeltas {
            emit(BenchRow(suite: "raw-nng", name: "pubsub-tcp-batches-for-\(size)-nodes", n: max(1, writes / perBatch) * perBatch, opsPerSecond: rawDeltas,
                          bytesPerOp: Double(batchBytes) / Double(perBatch),
                          note: "deltas/s: \(perBatch)-delta batches (\(batchBytes) B, the nodes' mean batch) from one raw PUB to one SUB, "
                              + "one batch per message, same run; \(raw.lost) messages lost"))
        }
    }

    static func latency(nodes size: Int, writes: Int, raw: (p50: Double, p99: Double, count: Int)?, emit: (BenchRow) -> Void) {
        guard let nodes = makeCluster(size) else { return }
        defer { for node in nodes { node.stop() } }
        let room = "lat"
        joinUsers(nodes[0], room: room, users: 100)
        _ = waitUntil(seconds: 10) { nodes.allSatisfy { $0.room(room)?.seen == nodes[0].room(room)?.seen } }
        let sentAt = Mutex<[UInt64: UInt64]>([:])
        let samples = Mutex<[Double]>([])
        let last = nodes[size - 1]
        last.observeRemoteDeltas { _, deltas in
            let now = monotonicNanos()
            for delta in deltas {
                if let sent = sentAt.withLock({ $0[delta.sequence] }) {
                    samples.withLock { $0.append(Double(now - sent) / 1000) }
                }
            }
        }
        for index in 0..<writes {
            let user = "student-\(index % 100)"
            let write = Write(author: user, authorRole: .student, authorCounter: UInt64(index + 1),
                              operation: .setDevice(user: user, device: .microphone, on: index & 1 == 0))
            let before = monotonicNanos()
            let ack = nodes[0].submit(room: room, write)
            if let dot = ack.dot { sentAt.withLock { $0[dot.sequence] = before } }
            usleep(200)
        }
        _ = waitUntil(seconds: 5) { samples.withLock { $0.count } >= writes }
        let sorted = samples.withLock { $0 }.sorted()
        guard !sorted.isEmpty else { return }
        let p50 = sorted[sorted.count / 2], p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
        emit(BenchRow(suite: "cluster", name: "propagation-latency-\(size)-nodes-tcp", n: sorted.count, p50Micros: p50, p99Micros: p99,
                      ratioVsRaw: raw.map { p99 / $0.p99 }, target: "p99 <= 1000 us",
                      note: "write at node 1 to applied at node \(size), paced every 200 us; ratio is p99 vs raw pub/sub p99"))
    }

    static func convergence(users: Int, changes: Int, emit: (BenchRow) -> Void) {
        guard let nodes = makeCluster(2) else { return }
        defer { for node in nodes { node.stop() } }
        let room = "conv"
        joinUsers(nodes[0], room: room, users: users)
        _ = waitUntil(seconds: 20) { nodes[1].room(room)?.seen == nodes[0].room(room)?.seen }
        var cut = FaultPolicy()
        cut.isolated = true
        nodes[1].faults = cut
        usleep(300_000)
        let deltas = MergeBench.liveDeltas(count: changes, users: users, origins: 1, seed: 9)
        for (index, delta) in deltas.enumerated() {
            var write = Write(author: delta.author, authorRole: delta.authorRole, authorCounter: UInt64(index + 1), operation: delta.operation)
            if case .setStage = delta.operation { write.operation = .setBoard(user: delta.operation.target!, granted: true) }
            _ = nodes[0].submit(room: room, write)
        }
        usleep(300_000)
        guard let ahead = nodes[0].room(room), let behind = nodes[1].room(room) else { return }
        let missingBytes = WireCodec.encodePatch(ahead.missing(since: behind.seen)).count
        let syncBefore = nodes[1].metrics["sync_bytes_total"]
        let clock = ContinuousClock()
        let start = clock.now
        nodes[1].faults = FaultPolicy()
        let converged = waitUntil(seconds: 30) { nodes[1].room(room)?.seen.dominates(ahead.seen) ?? false }
        let elapsed = clock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sent = nodes[1].metrics["sync_bytes_total"] - syncBefore
        // Raw: the same bytes as one REQ/REP reply (the heal also waits for the next sync round).
        let raw = RawTransfer.requestReply(replyBytes: Int(sent), count: 3)
        if let raw {
            emit(BenchRow(suite: "raw-nng", name: "reqrep-tcp-\(Int(sent) / 1000)kB-reply-for-convergence", n: raw.count, bytesPerOp: Double(sent),
                          p50Micros: raw.median * 1e6, seconds: raw.best,
                          note: "REQ/REP on tcp loopback, a small request answered with the sync bytes of the heal, nothing decoded"))
        }
        emit(BenchRow(suite: "cluster", name: "convergence-after-heal-\(users / 1000)k-users-\(changes / 1000)k-changes", n: changes,
                      bytesPerOp: Double(sent) / Double(changes), seconds: seconds, ratioVsRaw: raw.map { seconds / $0.best },
                      target: "<= 1 s, bytes <= 2x missing",
                      note: converged ? "sync bytes \(sent), missing patch \(missingBytes) (x\(String(format2(Double(sent) / Double(max(1, missingBytes)))))); ratio is the heal vs a raw reply of the sync bytes"
                                      : "INCOMPLETE: not converged within 30 s"))
    }

    /// One-way pub/sub latency of raw nng, paced like the cluster latency case.
    static func rawOneWayLatency(messageSize: Int, count: Int) -> (p50: Double, p99: Double, count: Int)? {
        guard let pub = try? NNGSocket(.pub), let sub = try? NNGSocket(.sub) else { return nil }
        defer { sub.close(); pub.close() }
        guard let url = try? pub.listen("tcp://127.0.0.1:0") else { return nil }
        try? pub.setSendBuffer(8192)
        try? sub.setReceiveBuffer(8192)
        try? sub.subscribe([UInt8]())
        try? sub.setReceiveTimeout(.milliseconds(20))
        guard (try? sub.dial(url, blocking: true)) != nil else { return nil }
        // Wait until the subscription is really attached.
        var probe = [UInt8](repeating: 0, count: max(messageSize, 16))
        var attached = false
        for _ in 0..<200 where !attached {
            try? pub.send(probe)
            if (try? sub.receive()) != nil { attached = true }
        }
        while (try? sub.receive()) != nil {}
        var latencies: [Double] = []
        for index in 0..<count {
            let now = monotonicNanos()
            withUnsafeBytes(of: now) { raw in for offset in 0..<8 { probe[offset] = raw[offset] } }
            probe[8] = UInt8(truncatingIfNeeded: index)
            try? pub.send(probe)
            if let message = try? sub.receive(), message.count >= 8 {
                var sent: UInt64 = 0
                withUnsafeMutableBytes(of: &sent) { raw in for offset in 0..<8 { raw[offset] = message[offset] } }
                latencies.append(Double(monotonicNanos() - sent) / 1000)
            }
            usleep(200)
        }
        latencies.sort()
        guard !latencies.isEmpty else { return nil }
        return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, latencies.count * 99 / 100)], latencies.count)
    }
}

extension ClusterBench {
    /// One-way pub/sub latency of the SP transport alone, paced like `rawOneWayLatency`.
    static func spOneWayLatency(messageSize: Int, count: Int) -> (p50: Double, p99: Double, count: Int)? {
        let latencies = Mutex<[Double]>([])
        let attached = Atomic<Bool>(false)
        guard let pub = try? SPPublisher(), let url = try? pub.listen("tcp://127.0.0.1:0"),
              let sub = try? SPSubscriber(handler: { message in
                  guard message.count >= 9 else { return }
                  if message[8] == 0xff { attached.store(true, ordering: .relaxed); return }
                  var sent: UInt64 = 0
                  withUnsafeMutableBytes(of: &sent) { raw in for offset in 0..<8 { raw[offset] = message[offset] } }
                  let micros = Double(monotonicNanos() - sent) / 1000
                  latencies.withLock { $0.append(micros) }
              }) else { return nil }
        defer { sub.close(); pub.close() }
        sub.subscribe([UInt8]())
        guard (try? sub.dial(url)) != nil else { return nil }
        var probe = [UInt8](repeating: 0, count: max(messageSize, 16))
        probe[8] = 0xff
        for _ in 0..<2_000 where !attached.load(ordering: .relaxed) {
            try? pub.send(probe)
            usleep(1_000)
        }
        for index in 0..<count {
            let now = monotonicNanos()
            withUnsafeBytes(of: now) { raw in for offset in 0..<8 { probe[offset] = raw[offset] } }
            probe[8] = UInt8(truncatingIfNeeded: index % 255)
            try? pub.send(probe)
            usleep(200)
        }
        usleep(200_000)
        let sorted = latencies.withLock { $0 }.sorted()
        guard !sorted.isEmpty else { return nil }
        return (sorted[sorted.count / 2], sorted[min(sorted.count - 1, sorted.count * 99 / 100)], sorted.count)
    }
}

final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add(_ amount: Int) { count.add(amount, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}

func monotonicNanos() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
}

func format2(_ value: Double) -> String { String((value * 100).rounded() / 100) }
