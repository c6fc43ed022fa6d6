@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import Synchronization

/// Room messages fanned out to a whole 10,000-member lecture hall: three in-process
/// nodes, every member joined, and 10,000 real SUB sockets on the room topic living in
/// child processes (500 each, `SubscriberProcesses`), so nothing is modelled. Beside it,
/// raw nng in the same topology and the same children: three PUB sockets, each to a
/// third of the subscribers, the same size and pacing. Both count messages delivered.
enum ProcessFanOutBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let members = 10_000
        let subscribers = quick ? 1_500 : 10_000
        let messages = quick ? 20 : 50
        let intervalMicros = 100_000   // 10 messages/s
        let name = "fanout-lecture-hall-10k-3-nodes-\(subscribers)-subscribers-in-processes"
        let cluster = measureCluster(members: members, subscribers: subscribers, messages: messages, intervalMicros: intervalMicros)
        guard case let .success(run) = cluster else {
            if case let .failure(problem) = cluster { emit(BenchRow(suite: "messaging", name: name, n: 0, note: "INCOMPLETE: \(problem.reason)")) }
            return
        }
        let raw = measureRaw(subscribers: subscribers, messages: messages, messageBytes: run.messageBytes, intervalMicros: intervalMicros)
        let complete = run.delivered == run.expected ? "" : "INCOMPLETE: \(run.delivered) of \(run.expected) delivered; "
        emit(BenchRow(suite: "messaging", name: name, n: run.delivered, opsPerSecond: run.deliveredPerSecond, bytesPerOp: Double(run.messageBytes),
                      p50Micros: run.p50, p99Micros: run.p99, seconds: run.seconds,
                      ratioVsRaw: (try? raw.get()).map { run.p99 / max($0.p99, 1) }, target: "p99 < 50 ms",
                      note: complete + "measured, not modelled: \(members) members joined over 3 nodes; \(subscribers) real SUB sockets on the "
                          + "room topic in \(children(subscribers)) child processes (started one after another); \(messages) room messages at 10/s through node 1, timed from "
                          + "submit to each subscriber (CLOCK_MONOTONIC); messages delivered per second; ratio is p99 vs raw"))
        switch raw {
        case let .success(baseline):
            emit(BenchRow(suite: "raw-nng", name: "pubsub-fanout-tcp-\(subscribers)-subscribers-in-processes-\(run.messageBytes)B", n: baseline.delivered,
                          opsPerSecond: baseline.deliveredPerSecond, bytesPerOp: Double(run.messageBytes), p50Micros: baseline.p50,
                          p99Micros: baseline.p99, seconds: baseline.seconds,
                          note: "three raw PUB sockets (as three nodes), each to a third of the same child processes' subscribers, same size "
                              + "and pacing, same run; messages delivered per second"
                              + (baseline.delivered == baseline.expected ? "" : "; \(baseline.expected - baseline.delivered) not delivered")))
        case let .failure(problem):
            emit(BenchRow(suite: "raw-nng", name: "pubsub-fanout-tcp-\(subscribers)-subscribers-in-processes", n: 0, note: "INCOMPLETE: \(problem.reason)"))
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

    static func measureCluster(members: Int, subscribers: Int, messages: Int, intervalMicros: Int) -> Result<MessagingBench.Run, MessagingBench.Problem> {
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
        guard let children = SubscriberProcesses.startOneByOne(shares(nodes.map(\.publishAddress), subscribers: subscribers), topic: Topics.clientRoom(room),
                                                              timeoutSeconds: 20, probe: { send(UInt64.max) }) else {
            return .failure(.init(reason: "a subscriber process did not start or attach within 60 s"))
        }
        usleep(200_000)
        let (sentAt, start) = paced(messages: messages, intervalMicros: intervalMicros) { send(UInt64($0)) }
        // Let the last messages arrive (a subscriber process notes arrivals as they come).
        usleep(3_000_000)
        let arrivals = SubscriberProcesses.finish(children)
        var run = summary(arrivals, sentAt: sentAt, start: start, expected: messages * subscribers)
        let sample = Delta(sequence: 1, clock: HybridTimestamp(millis: 1, logical: 0, replica: nodes[0].replica), author: "teacher",
                           authorRole: .teacher, authorCounter: counter,
                           operation: .sendMessage(type: "chat", payload: [UInt8](repeating: 0, count: payloadBytes), previous: counter - 1))
        let envelope = WireEnvelope(roomID: room, sender: nodes[0].replica, sequence: 1, clock: sample.clock,
                                    message: .deltaBatch(WireMessage.DeltaBatch(origin: nodes[0].replica, deltas: [sample])))
        run.messageBytes = WireCodec.encode(envelope).count + Topics.clientRoom(room).count
        if arrivals.childrenFailed > 0 { return .failure(.init(reason: "\(arrivals.childrenFailed) subscriber processes did not report")) }
        return .success(run)
    }

    static func measureRaw(subscribers: Int, messages: Int, messageBytes: Int, intervalMicros: Int) -> Result<MessagingBench.Run, MessagingBench.Problem> {
        var pubs: [NNGSocket] = []
        var urls: [String] = []
        defer { for pub in pubs { pub.close() } }
        do {
            for _ in 0..<3 {
                let pub = try NNGSocket(.pub)
                pubs.append(pub)
                try pub.setSendBuffer(8192)
                urls.append(try pub.listen("tcp://127.0.0.1:0"))
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
        guard let children = SubscriberProcesses.startOneByOne(shares(urls, subscribers: subscribers), topic: [], timeoutSeconds: 20,
                                                              probe: { send(UInt64.max) }) else {
            return .failure(.init(reason: "a subscriber process did not start or attach within 60 s"))
        }
        usleep(200_000)
        let (sentAt, start) = paced(messages: messages, intervalMicros: intervalMicros) { send(UInt64($0)) }
        usleep(3_000_000)
        let arrivals = SubscriberProcesses.finish(children)
        if arrivals.childrenFailed > 0 { return .failure(.init(reason: "\(arrivals.childrenFailed) subscriber processes did not report")) }
        var run = summary(arrivals, sentAt: sentAt, start: start, expected: messages * subscribers)
        run.messageBytes = message.count
        return .success(run)
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
