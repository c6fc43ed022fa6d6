@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomNNG
import HomeroomWire
import Synchronization

/// Room messages fanned out to a whole lecture hall at its real size (5,000 and 10,000
/// members; 1,500 quick): three in-process nodes, every member joined, and one real
/// SUB socket per member living in child processes (500 each, `SubscriberProcesses`),
/// so nothing is modelled. The subscribers follow the room as clients do: libnng SUB
/// sockets dialled to the room stream (`RoomStreams.url`, ws://H:P/v1/rooms/hall),
/// a third on each node. Beside it, raw nng in the same topology with the same
/// children: three PUB sockets, each to a third of the subscribers, the same size and
/// pacing, over tcp:// and over ws://. Every row counts deliveries exactly and says
/// how many are missing and at how many subscribers; the CPU of this process (the nodes,
/// or the raw PUB sockets: the subscribers live in the children) per delivered message.
enum ProcessFanOutBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        // HOMEROOM_FANOUT_SIZES=10000 runs one size; HOMEROOM_FANOUT_RAW=0 leaves raw nng out
        // (for profiling the nodes alone).
        let sizes = getenv("HOMEROOM_FANOUT_SIZES").map { String(cString: $0).split(separator: ",").compactMap { Int($0) } }
        for subscribers in sizes ?? (quick ? [1_500] : [5_000, 10_000]) {
            run(subscribers: subscribers, messages: quick ? 20 : 50, raw: getenv("HOMEROOM_FANOUT_RAW").map { String(cString: $0) } != "0", emit: emit)
        }
    }

    static func run(subscribers: Int, messages: Int, raw: Bool, emit: (BenchRow) -> Void) {
        let members = subscribers
        let intervalMicros = 100_000   // 10 messages/s
        let name = "fanout-lecture-hall-\(members)-3-nodes-\(subscribers)-room-streams-in-processes"
        let cluster = measureCluster(members: members, subscribers: subscribers, messages: messages, intervalMicros: intervalMicros)
        guard case let .success(run) = cluster else {
            if case let .failure(problem) = cluster { emit(BenchRow(suite: "messaging", name: name, n: 0, note: "INCOMPLETE: \(problem.reason)")) }
            return
        }
        guard raw else {
            emit(BenchRow(suite: "messaging", name: name, n: run.run.delivered, opsPerSecond: run.run.deliveredPerSecond, bytesPerOp: Double(run.run.messageBytes),
                          p50Micros: run.run.p50, p99Micros: run.run.p99, seconds: run.run.seconds, note: run.lossNote + "; no raw baseline; " + run.cpuNote))
            return
        }
        let rawTCP = measureRaw(scheme: "tcp", subscribers: subscribers, messages: messages, messageBytes: run.run.messageBytes, intervalMicros: intervalMicros)
        let rawWS = measureRaw(scheme: "ws", subscribers: subscribers, messages: messages, messageBytes: run.run.messageBytes, intervalMicros: intervalMicros)
        let baseline = (try? rawTCP.get())?.run
        let met = baseline.map { run.run.p99 <= 2 * $0.p99 } ?? false
        emit(BenchRow(suite: "messaging", name: name, n: run.run.delivered, opsPerSecond: run.run.deliveredPerSecond, bytesPerOp: Double(run.run.messageBytes),
                      p50Micros: run.run.p50, p99Micros: run.run.p99, seconds: run.run.seconds,
                      ratioVsRaw: baseline.map { run.run.p99 / max($0.p99, 1) },
                      target: "p99 <= 2x raw nng tcp (\(met ? "met" : "not met")), < 100 ms at 5,000 (\(run.run.p99 < 100_000 ? "met" : "not met")), 0 lost",
                      note: run.lossNote + "; measured, not modelled: \(members) members joined over 3 nodes; \(subscribers) libnng SUB sockets "
                          + "dialled to the room stream (ws://<node publish>/v1/rooms/hall, a third per node) in \(children(subscribers)) child processes "
                          + "(started one after another); \(messages) room messages at 10/s through node 1, timed from submit to each subscriber "
                          + "(CLOCK_MONOTONIC); n: deliveries (subscriber x message, first arrival); deliveries per second; ratio is p99 vs raw nng tcp; "
                          + run.cpuNote))
        for (scheme, raw) in [("tcp", rawTCP), ("ws", rawWS)] {
            switch raw {
            case let .success(measured):
                emit(BenchRow(suite: "raw-nng", name: "pubsub-fanout-\(scheme)-\(subscribers)-subscribers-in-processes-\(run.run.messageBytes)B", n: measured.run.delivered,
                              opsPerSecond: measured.run.deliveredPerSecond, bytesPerOp: Double(run.run.messageBytes), p50Micros: measured.run.p50,
                              p99Micros: measured.run.p99, seconds: measured.run.seconds,
                              note: measured.lossNote + "; three raw libnng PUB sockets listening on \(scheme):// (as three nodes), each to a third of the same "
                                  + "child processes' SUB sockets, same size and pacing, same run; deliveries per second; " + measured.cpuNote))
            case let .failure(problem):
                emit(BenchRow(suite: "raw-nng", name: "pubsub-fanout-\(scheme)-\(subscribers)-subscribers-in-processes", n: 0, note: "INCOMPLETE: \(problem.reason)"))
            }
        }
    }

    /// A run with what it lost and what it cost.
    struct Measured {
        var run: MessagingBench.Run
        var subscribers: Int
        var messages: Int
        /// Subscribers that missed at least one message, and the most one missed.
        var subscribersMissing = 0
        var mostMissed = 0
        /// CPU seconds of this process in the window (first send to 3 s after the last),
        /// and per second while idle just before.
        var cpuSeconds = 0.0
        var idleCPUPerSecond = 0.0
        /// The subscriber processes' CPU seconds in the same window.
        var childrenCPUSeconds = 0.0
        var others = 0
        /// Seconds waited after the last send (until all came, or none for 2 s).
        var drainSeconds = 0.0
        var fromSchedule = (0.0, 0.0, 0.0)

        var lossNote: String {
            let missing = run.expected - run.delivered
            return "\(run.delivered) of \(run.expected) deliveries, \(missing) missing (waited \(format(drainSeconds)) s after the last send: until all came or none came for 2 s)"
                + (missing == 0 ? "" : " (\(subscribersMissing) of \(subscribers) subscribers missed at least one message, one missed \(mostMissed) of \(messages))")
        }

        var cpuNote: String {
            let perMessage = run.delivered > 0 ? cpuSeconds / Double(run.delivered) * 1e6 : 0
            return "CPU of this process (getrusage, user+system; the subscribers are in the children) from the first send to the end of that wait: "
                + "\(format(cpuSeconds)) s, \(format(perMessage)) µs per delivery; idle just before: \(format(idleCPUPerSecond)) CPU-s/s; "
                + "timed from each message's slot in the schedule instead (10/s): p50 \(format(fromSchedule.0 / 1_000)) ms, p99 \(format(fromSchedule.1 / 1_000)) ms, "
                + "the last send \(format(fromSchedule.2)) ms behind its slot; "
                + "the subscriber processes used \(format(childrenCPUSeconds)) CPU-s in the same window; messages other than the benchmark's at the subscribers: \(others)"
        }

        func format(_ value: Double) -> String {
            value >= 100 ? String(Int(value.rounded())) : String(Double(Int((value * 100).rounded())) / 100)
        }
    }

    static let perChild = 500

    static func children(_ subscribers: Int) -> Int { (subscribers + perChild - 1) / perChild }

    /// `subscribers` spread evenly over `urls`, in children of at most `perChild`.
    static func shares(_ urls: [String], subscribers: Int) -> [(url: String, subscribers: Int)] {
        var shares: [(url: String, subscribers: Int)] = []
        for (index, url) in urls.enumerated() {
            var left = subscribers * (index + 1) / urls.count - subscribers * index / urls.count
            while left > 0 {
                shares.append((url, min(left, perChild)))
                left -= min(left, perChild)
            }
        }
        return shares
    }

    static func measureCluster(members: Int, subscribers: Int, messages: Int, intervalMicros: Int) -> Result<Measured, MessagingBench.Problem> {
        guard let nodes = ClusterBench.makeCluster(3, clusterPublish: true) else { return .failure(.init(reason: "the cluster did not start")) }
        defer { for node in nodes { node.stop() } }
        let room = "hall"
        MessagingBench.joinHall(nodes, room: room, members: members)
        var counter: UInt64 = 100
        var payloadBytes = 0
        func send(_ index: UInt64) {
            counter += 1
            var payload = MessagingBench.marker
            withUnsafeBytes(of: index.littleEndian) { payload.append(contentsOf: $0) }
            payload.append(contentsOf: Array("a question about fractions".utf8))
            let ack = nodes[0].submit(room: room, Write(author: "teacher", authorRole: .teacher, authorCounter: counter,
                                                        operation: .sendMessage(type: "chat", payload: payload, previous: counter - 1)))
            if ack.status == .accepted { payloadBytes = payload.count }
        }
        let urls = nodes.compactMap { RoomStreams.url(publishAddress: $0.publishAddress, room: room) }
        guard urls.count == nodes.count else { return .failure(.init(reason: "a publish address has no ws:// form")) }
        fputs("messaging-processes: \(members) members joined; starting \(children(subscribers)) subscriber processes on \(urls.joined(separator: ", "))\n", stderr)
        guard let children = SubscriberProcesses.startOneByOne(shares(urls, subscribers: subscribers), topic: Topics.clientRoom(room),
                                                              timeoutSeconds: 60, probe: { send(UInt64.max) }) else {
            return .failure(.init(reason: "a subscriber process did not start or attach within 60 s"))
        }
        let (run, cpu, idle, arrivals) = window(children, subscribers: subscribers, messages: messages, intervalMicros: intervalMicros, label: "nodes") { send(UInt64($0)) }
        var result = run
        let sample = Delta(sequence: 1, clock: HybridTimestamp(millis: 1, logical: 0, replica: nodes[0].replica), author: "teacher",
                           authorRole: .teacher, authorCounter: counter,
                           operation: .sendMessage(type: "chat", payload: [UInt8](repeating: 0, count: payloadBytes), previous: counter - 1))
        let envelope = WireEnvelope(roomID: room, sender: nodes[0].replica, sequence: 1, clock: sample.clock,
                                    message: .deltaBatch(WireMessage.DeltaBatch(origin: nodes[0].replica, deltas: [sample])))
        result.messageBytes = WireCodec.encode(envelope).count + Topics.clientRoom(room).count
        if arrivals.childrenFailed > 0 { return .failure(.init(reason: "\(arrivals.childrenFailed) subscriber processes did not report")) }
        return .success(measured(result, arrivals, subscribers: subscribers, messages: messages, cpu: cpu, idle: idle))
    }

    /// Raw libnng: three PUB sockets listening on `scheme`:// (tcp or ws), a third of the
    /// subscribers each.
    static func measureRaw(scheme: String, subscribers: Int, messages: Int, messageBytes: Int, intervalMicros: Int) -> Result<Measured, MessagingBench.Problem> {
        var pubs: [NNGSocket] = []
        var urls: [String] = []
        defer { for pub in pubs { pub.close() } }
        do {
            for _ in 0..<3 {
                let pub = try NNGSocket(.pub)
                pubs.append(pub)
                try pub.setSendBuffer(8192)
                urls.append(try pub.listen(scheme == "ws" ? "ws://127.0.0.1:0/v1/rooms/hall" : "tcp://127.0.0.1:0"))
            }
        } catch {
            return .failure(.init(reason: "raw PUB sockets: \(error)"))
        }
        var message = MessagingBench.marker + [UInt8](repeating: 0, count: 8)
        message += [UInt8](repeating: 0x5A, count: max(0, messageBytes - message.count))
        func send(_ index: UInt64) {
            withUnsafeBytes(of: index.littleEndian) { raw in for offset in 0..<8 { message[MessagingBench.marker.count + offset] = raw[offset] } }
            for pub in pubs { try? pub.send(message) }
        }
        guard let children = SubscriberProcesses.startOneByOne(shares(urls, subscribers: subscribers), topic: [], timeoutSeconds: 60,
                                                              probe: { send(UInt64.max) }) else {
            return .failure(.init(reason: "a subscriber process did not start or attach within 60 s"))
        }
        let (run, cpu, idle, arrivals) = window(children, subscribers: subscribers, messages: messages, intervalMicros: intervalMicros, label: "raw \(scheme)") { send(UInt64($0)) }
        if arrivals.childrenFailed > 0 { return .failure(.init(reason: "\(arrivals.childrenFailed) subscriber processes did not report")) }
        var result = run
        result.messageBytes = message.count
        return .success(measured(result, arrivals, subscribers: subscribers, messages: messages, cpu: cpu, idle: idle))
    }

    /// One second idle (its CPU noted), the paced messages, three seconds for the last to
    /// arrive, then the children's arrivals.
    static func window(_ children: [SubscriberProcesses.Child], subscribers: Int, messages: Int, intervalMicros: Int, label: String,
                       send: (Int) -> Void) -> (MessagingBench.Run, Double, Double, SubscriberProcesses.Arrivals) {
        let idleStart = processCPUSeconds()
        usleep(1_000_000)
        let idle = processCPUSeconds() - idleStart
        fputs("messaging-processes: \(label): \(subscribers) subscribers attached; sending (pid \(getpid()))\n", stderr)
        func childrenCPU() -> Double { children.reduce(0) { $0 + (NodeProcesses.cpuSeconds($1.pid) ?? 0) } }
        let cpuStart = processCPUSeconds(), childrenStart = childrenCPU()
        let (sentAt, start) = paced(messages: messages, intervalMicros: intervalMicros, send: send)
        // Let the last messages arrive: until every delivery came, or none for 2 s (what has
        // not come by then is lost; a subscriber process notes arrivals as they come).
        usleep(500_000)
        lastDrainSeconds = 0.5 + SubscriberProcesses.drain(children, expected: messages * subscribers, quietSeconds: 2, maxSeconds: 60)
        let cpu = processCPUSeconds() - cpuStart
        lastChildrenCPU = childrenCPU() - childrenStart
        fputs("messaging-processes: \(label): sent; collecting\n", stderr)
        let arrivals = SubscriberProcesses.finish(children)
        // The same arrivals timed from each message's slot in the schedule: a sender that
        // falls behind its schedule (a raw nng_send fans out in the caller's thread) hides
        // that delay from send-to-arrival times.
        let scheduled = (0..<messages).map { start + UInt64($0) * UInt64(intervalMicros) * 1_000 }
        let fromSchedule = summary(arrivals, sentAt: scheduled, start: start, expected: messages * subscribers)
        lastFromSchedule = (fromSchedule.p50, fromSchedule.p99, Double(sentAt.last.map { $0 &- scheduled[messages - 1] } ?? 0) / 1e6)
        return (summary(arrivals, sentAt: sentAt, start: start, expected: messages * subscribers), cpu, idle, arrivals)
    }

    /// The subscriber processes' CPU seconds in the last window (all children together).
    nonisolated(unsafe) static var lastChildrenCPU = 0.0
    /// How long the last window waited after the last send.
    nonisolated(unsafe) static var lastDrainSeconds = 0.0
    /// p50 and p99 (µs) from the schedule, and how far the last send was behind it (ms).
    nonisolated(unsafe) static var lastFromSchedule = (0.0, 0.0, 0.0)

    static func measured(_ run: MessagingBench.Run, _ arrivals: SubscriberProcesses.Arrivals, subscribers: Int, messages: Int,
                         cpu: Double, idle: Double) -> Measured {
        var result = Measured(run: run, subscribers: subscribers, messages: messages, cpuSeconds: cpu, idleCPUPerSecond: idle, childrenCPUSeconds: lastChildrenCPU,
                              drainSeconds: lastDrainSeconds, fromSchedule: lastFromSchedule)
        result.others = arrivals.others
        for got in arrivals.perSubscriber where got < messages {
            result.subscribersMissing += 1
            result.mostMissed = max(result.mostMissed, messages - got)
        }
        return result
    }

    /// User and system CPU of this whole process (every thread), in seconds.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// Sends `messages` at the pace, noting each send time (monotonic ns).
    static func paced(messages: Int, intervalMicros: Int, send: (Int) -> Void) -> (sentAt: [UInt64], start: UInt64) {
        var sentAt = [UInt64](repeating: 0, count: messages)
        let start = monotonicNanos()
        for index in 0..<messages {
            sentAt[index] = monotonicNanos()
            send(index)
            let next = start + UInt64(index + 1) * UInt64(intervalMicros) * 1_000
            let after = monotonicNanos()
            if next > after { usleep(UInt32((next - after) / 1_000)) }
        }
        return (sentAt, start)
    }

    static func summary(_ arrivals: SubscriberProcesses.Arrivals, sentAt: [UInt64], start: UInt64, expected: Int) -> MessagingBench.Run {
        var latencies: [Double] = []
        var last: UInt64 = start
        for arrival in arrivals.arrivals where arrival.index < UInt64(sentAt.count) {
            latencies.append(Double(arrival.nanos &- sentAt[Int(arrival.index)]) / 1_000)
            last = max(last, arrival.nanos)
        }
        latencies.sort()
        let seconds = Double(last &- start) / 1e9
        func percentile(_ q: Double) -> Double { latencies.isEmpty ? 0 : latencies[min(latencies.count - 1, Int(Double(latencies.count) * q))] }
        return MessagingBench.Run(deliveredPerSecond: seconds > 0 ? Double(latencies.count) / seconds : 0, p50: percentile(0.5), p99: percentile(0.99),
                                  delivered: latencies.count, expected: expected, seconds: seconds, messageBytes: 0)
    }
}
