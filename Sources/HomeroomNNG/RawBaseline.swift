@preconcurrency import Glibc
import CNNG
import HomeroomNode
import Synchronization

/// Measurements of bare nng (C calls only, none of the Swift wrappers), so the
/// benchmarks can show what the transport layer adds on top of nng itself.
/// Times come from `ContinuousClock`; speed is claimed only from `homeroom-bench`.
public enum RawBaseline {
    /// Publishes `count` messages of `messageSize` bytes (at least 8: a sequence number
    /// leads each payload) from a PUB to one SUB as fast as PUB accepts them, and counts
    /// what arrives. Ends when the last message arrives or nothing has arrived for
    /// 500 ms. Throughput is messages delivered per second from the first send to the
    /// last arrival; `lost` is what PUB or SUB dropped (`count - delivered`).
    ///
    /// - Parameters:
    ///   - url: where the PUB listens, e.g. `tcp://127.0.0.1:0` (port picked by the system).
    ///   - sendBuffer: `NNG_OPT_SENDBUF` of the PUB (nng default 16, at most 8192).
    ///   - receiveBuffer: `NNG_OPT_RECVBUF` of the SUB (nng default 128, at most 8192).
    public static func pubSubThroughput(url: String = "tcp://127.0.0.1:0", messageSize: Int, count: Int,
                                        sendBuffer: Int = 16, receiveBuffer: Int = 128)
        throws(NNGError) -> (messagesPerSecond: Double, delivered: Int, lost: Int)
    {
        precondition(count > 0, "count must be positive")
        let size = max(messageSize, 8)
        let probeMark = UInt64.max, stopMark = UInt64.max - 1

        var pub = nng_socket()
        try nngCheck(nng_pub0_open(&pub), "open pub socket")
        defer { _ = NNGCloser.close(pub, timeout: .seconds(2)) }
        var sub = nng_socket()
        try nngCheck(nng_sub0_open(&sub), "open sub socket")
        defer { _ = NNGCloser.close(sub, timeout: .seconds(2)) }

        try nngCheck(nng_socket_set_int(pub, NNG_OPT_SENDBUF, Int32(sendBuffer)), "set pub send buffer to \(sendBuffer)")
        try nngCheck(nng_socket_set_int(sub, NNG_OPT_RECVBUF, Int32(receiveBuffer)), "set sub receive buffer to \(receiveBuffer)")
        try nngCheck(nng_socket_set(sub, NNG_OPT_SUB_SUBSCRIBE, nil, 0), "subscribe to everything")
        let bound = try nngListen(pub, url)
        try nngCheck(nng_dial(sub, bound, nil, 0), "dial \(bound)", addressOperation: true)

        var message = [UInt8](repeating: 0xA5, count: size)
        func send(_ seq: UInt64) -> Int32 {
            message.withUnsafeMutableBytes { buffer in
                buffer.storeBytes(of: seq.littleEndian, as: UInt64.self)
                return nng_send(pub, buffer.baseAddress, buffer.count, 0)
            }
        }

        // The dial is up, but PUB attaches the pipe a little later: probe until one arrives.
        // Non-blocking polls, not receive timeouts (nng 1.5.2 issue 1523).
        let connectBy = ContinuousClock.now + .seconds(2)
        var connected = false
        while !connected && ContinuousClock.now < connectBy {
            try nngCheck(send(probeMark), "send probe")
            for _ in 0..<5 where !connected {
                var buffer: UnsafeMutableRawPointer? = nil
                var got = 0
                let rv = withUnsafeMutablePointer(to: &buffer) {
                    nng_recv(sub, $0, &got, Int32(NNG_FLAG_ALLOC | NNG_FLAG_NONBLOCK))
                }
                if rv == 0 { nng_free(buffer, got); connected = true } else { usleep(1_000) }
            }
        }
        guard connected else {
            throw NNGError(.nngTimedOut, "wait 2 s for the subscriber to attach to \(bound)")
        }

        let progress = NNGCounter()
        let outcome = Mutex<(delivered: Int, last: ContinuousClock.Instant?)>((0, nil))
        let subID = sub.id
        let receiver = try thread(name: "hr-bench-sub") {
            let sub = nng_socket(id: subID)
            var seen = [Bool](repeating: false, count: count)
            var delivered = 0
            var last: ContinuousClock.Instant? = nil
            receiving: while true {
                var buffer: UnsafeMutableRawPointer? = nil
                var got = 0
                let rv = withUnsafeMutablePointer(to: &buffer) { nng_recv(sub, $0, &got, Int32(NNG_FLAG_ALLOC)) }
                if rv == .nngClosed { break }
                if rv != 0 { continue }
                let seq = got >= 8 ? UInt64(littleEndian: buffer!.loadUnaligned(as: UInt64.self)) : probeMark
                nng_free(buffer, got)
                switch seq {
                case stopMark:
                    break receiving
                case let s where s < UInt64(count):
                    if !seen[Int(s)] {
                        seen[Int(s)] = true
                        delivered += 1
                        last = .now
                        progress.value.store(delivered, ordering: .relaxed)
                    }
                    if s == UInt64(count - 1) { break receiving }
                default:
                    continue // a late probe
                }
            }
            outcome.withLock { $0 = (delivered, last) }
        }

        let start = ContinuousClock.now
        for seq in 0..<UInt64(count) {
            try nngCheck(send(seq), "publish message \(seq)")
        }

        // Wait for the last message, or until arrivals stop for 500 ms.
        var seenProgress = -1
        var lastChange = ContinuousClock.now
        while !receiver.isFinished {
            let now = progress.value.load(ordering: .relaxed)
            if now != seenProgress { seenProgress = now; lastChange = .now }
            if ContinuousClock.now - lastChange > .milliseconds(500) { break }
            usleep(200)
        }
        // Stop the receiver by message rather than by closing under it (nng issue 1543);
        // close only as a last resort.
        let stopBy = ContinuousClock.now + .seconds(2)
        while !receiver.isFinished && ContinuousClock.now < stopBy {
            _ = send(stopMark)
            usleep(5_000)
        }
        if !receiver.isFinished { _ = NNGCloser.close(sub, timeout: .seconds(2)) }
        receiver.join()

        let (delivered, last) = outcome.withLock { $0 }
        var perSecond = 0.0
        if let last, delivered > 0 {
            let seconds = (last - start).seconds
            perSecond = seconds > 0 ? Double(delivered) / seconds : 0
        }
        return (perSecond, delivered, count - delivered)
    }

    /// Sends `count` requests of `messageSize` bytes (at least 1) one after another from
    /// a REQ to a REP that echoes them, after 100 unmeasured warm-up round trips, and
    /// reports round-trip latency percentiles in microseconds and round trips per second.
    public static func requestReplyLatency(url: String = "tcp://127.0.0.1:0", messageSize: Int, count: Int)
        throws(NNGError) -> (p50Micros: Double, p99Micros: Double, perSecond: Double)
    {
        precondition(count > 0, "count must be positive")
        let size = max(messageSize, 1)

        var rep = nng_socket()
        try nngCheck(nng_rep0_open(&rep), "open rep socket")
        defer { _ = NNGCloser.close(rep, timeout: .seconds(2)) }
        var req = nng_socket()
        try nngCheck(nng_req0_open(&req), "open req socket")
        defer { _ = NNGCloser.close(req, timeout: .seconds(2)) }
        try nngCheck(nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5_000), "set req receive timeout")
        try nngCheck(nng_socket_set_ms(req, NNG_OPT_SENDTIMEO, 5_000), "set req send timeout")

        let bound = try nngListen(rep, url)
        let repID = rep.id
        // Echo server; an empty request means "stop" and is answered before it stops.
        let server = try thread(name: "hr-bench-rep") {
            let rep = nng_socket(id: repID)
            while true {
                var msg: OpaquePointer? = nil
                let rv = nng_recvmsg(rep, &msg, 0)
                if rv == .nngClosed { return }
                if rv != 0 { continue }
                let stop = nng_msg_len(msg) == 0
                if nng_sendmsg(rep, msg, 0) != 0 { nng_msg_free(msg) }
                if stop { return }
            }
        }
        var serverStopped = false
        defer {
            if !serverStopped {
                _ = NNGCloser.close(rep, timeout: .seconds(2))
                server.join()
            }
        }
        try nngCheck(nng_dial(req, bound, nil, 0), "dial \(bound)", addressOperation: true)

        let request = [UInt8](repeating: 0x5A, count: size)
        func roundTrip(_ bytes: [UInt8]) throws(NNGError) {
            let sent = bytes.withUnsafeBytes { nng_send(req, UnsafeMutableRawPointer(mutating: $0.baseAddress), $0.count, 0) }
            try nngCheck(sent, "send a \(bytes.count)-byte request")
            var buffer: UnsafeMutableRawPointer? = nil
            var got = 0
            let rv = withUnsafeMutablePointer(to: &buffer) { nng_recv(req, $0, &got, Int32(NNG_FLAG_ALLOC)) }
            try nngCheck(rv, "receive the reply to a \(bytes.count)-byte request")
            nng_free(buffer, got)
        }

        for _ in 0..<min(100, count) { try roundTrip(request) }

        var samples = [Double]()
        samples.reserveCapacity(count)
        let clock = ContinuousClock()
        let start = clock.now
        for _ in 0..<count {
            let t0 = clock.now
            try roundTrip(request)
            samples.append((clock.now - t0).seconds * 1e6)
        }
        let total = (clock.now - start).seconds

        try roundTrip([])
        server.join()
        serverStopped = true

        samples.sort()
        func percentile(_ q: Double) -> Double {
            samples[min(samples.count - 1, Int((Double(samples.count - 1) * q).rounded()))]
        }
        return (percentile(0.50), percentile(0.99), total > 0 ? Double(count) / total : 0)
    }
}

extension RawBaseline {
    /// What a fan-out run measured.
    public struct FanOut: Sendable {
        /// Messages delivered to subscribers per second, from the first send to the last arrival.
        public var deliveredPerSecond: Double
        public var p50Micros: Double
        public var p99Micros: Double
        public var delivered: Int
        public var expected: Int
        public var seconds: Double

        public init(deliveredPerSecond: Double, p50Micros: Double, p99Micros: Double, delivered: Int, expected: Int, seconds: Double) {
            self.deliveredPerSecond = deliveredPerSecond
            self.p50Micros = p50Micros
            self.p99Micros = p99Micros
            self.delivered = delivered
            self.expected = expected
            self.seconds = seconds
        }
    }

    /// Raw PUB sockets fanning out to `subscribers` SUB sockets spread evenly over them
    /// (received with one nng aio each), a `messageSize`-byte message every
    /// `intervalMicros`, sent on every PUB: deliveries per second and one-way latency
    /// (send to each arrival). The baseline for a room's fan-out: what nng alone does
    /// with the same subscribers, size and pacing, and, with `publishers` 3, the same
    /// topology as three nodes each publishing to their own members. `batch` messages go
    /// in one send (each `messageSize` bytes, back to back), as a node's outbox puts
    /// several room messages in one publish under a burst.
    public static func pubSubFanOut(url: String = "tcp://127.0.0.1:0", publishers: Int = 1, subscribers: Int, messages: Int, messageSize: Int,
                                    intervalMicros: Int, batch: Int = 1) throws(NNGError) -> FanOut {
        let size = max(messageSize, 17)
        let publisherCount = max(1, min(publishers, subscribers))
        var pubs: [NNGSocket] = []
        var groups: [NNGSubscriberGroup] = []
        let sentAt = Mutex<[UInt64]>([UInt64](repeating: 0, count: messages))
        let attached = Mutex<Set<Int>>([])
        let samples = Mutex<[Double]>([])
        let delivered = Atomic<Int>(0)
        let lastArrival = Atomic<UInt64>(0)
        // The publishers close first, so no message flows when the subscribers close
        // (closing a busy SUB socket can hang in nng 1.5.2, issue 1543).
        defer {
            for pub in pubs { pub.close() }
            usleep(50_000)
            for group in groups { group.close() }
        }
        for index in 0..<publisherCount {
            let pub = try NNGSocket(.pub)
            pubs.append(pub)
            try pub.setSendBuffer(8192)
            let bound = try pub.listen(url)
            // Subscribers `first..<first + count` listen to this publisher.
            let first = subscribers * index / publisherCount
            let count = subscribers * (index + 1) / publisherCount - first
            groups.append(try NNGSubscriberGroup(count: count, url: bound, topic: []) { member, bytes in
                let now = monotonicNanos()
                var offset = 0
                while offset + 16 <= bytes.count {
                    let index = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)
                    offset += size
                    if index == UInt64.max {
                        attached.withLock { _ = $0.insert(first + member) }
                        continue
                    }
                    guard index < UInt64(messages) else { continue }
                    let sent = sentAt.withLock { $0[Int(index)] }
                    samples.withLock { $0.append(Double(now &- sent) / 1_000) }
                    delivered.add(1, ordering: .relaxed)
                    lastArrival.store(now, ordering: .relaxed)
                }
            })
        }
        let perSend = max(1, batch)
        var message = [UInt8](repeating: 0x5A, count: size * perSend)
        /// Sends messages `indexes` (at most `perSend`) in one message on every PUB.
        func send(_ indexes: [UInt64]) {
            for (slot, index) in indexes.enumerated() {
                withUnsafeBytes(of: index.littleEndian) { raw in for offset in 0..<8 { message[slot * size + 8 + offset] = raw[offset] } }
            }
            let bytes = Array(message[0..<(indexes.count * size)])
            for pub in pubs { try? pub.send(bytes) }
        }
        // Probes until every subscriber is attached (the slow joiner).
        let attachBy = monotonicNanos() + 20_000_000_000
        while attached.withLock({ $0.count }) < subscribers && monotonicNanos() < attachBy {
            send([UInt64.max])
            usleep(5_000)
        }
        usleep(50_000)
        let start = monotonicNanos()
        for (round, first) in stride(from: 0, to: messages, by: perSend).enumerated() {
            let indexes = (first..<min(messages, first + perSend)).map { UInt64($0) }
            let now = monotonicNanos()
            sentAt.withLock { for index in indexes { $0[Int(index)] = now } }
            send(indexes)
            guard intervalMicros > 0 else { continue }
            let next = start + UInt64(round + 1) * UInt64(intervalMicros) * 1_000
            let after = monotonicNanos()
            if next > after { usleep(UInt32((next - after) / 1_000)) }
        }
        let expected = messages * subscribers
        var seen = -1
        var quietSince = monotonicNanos()
        while delivered.load(ordering: .relaxed) < expected {
            let now = delivered.load(ordering: .relaxed)
            if now != seen { seen = now; quietSince = monotonicNanos() }
            if monotonicNanos() - quietSince > 1_000_000_000 { break }
            usleep(1_000)
        }
        let count = delivered.load(ordering: .relaxed)
        let seconds = Double(lastArrival.load(ordering: .relaxed) &- start) / 1e9
        let sorted = samples.withLock { $0 }.sorted()
        func percentile(_ q: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        return FanOut(deliveredPerSecond: seconds > 0 ? Double(count) / seconds : 0, p50Micros: percentile(0.5), p99Micros: percentile(0.99),
                      delivered: count, expected: expected, seconds: seconds)
    }

    static func monotonicNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

fileprivate extension Duration {
    /// The duration in seconds as a Double.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}

/// A shared counter that threads can hold without holding its owner.
/// A thread for a baseline, its failure told as the baseline's other errors are.
private func thread(name: String, _ body: @escaping @Sendable () -> Void) throws(NNGError) -> OSThread {
    do {
        return try OSThread(name: name, body)
    } catch {
        throw NNGError(code: .other, errno: error.errno, reason: error.reason, operation: "start thread \(name)")
    }
}

private final class NNGCounter: Sendable {
    let value = Atomic<Int>(0)
}
