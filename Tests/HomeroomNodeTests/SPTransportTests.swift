@preconcurrency import Glibc
import Foundation
import Synchronization
import Testing
@testable import HomeroomNode
import HomeroomNNG
import HomeroomTestSupport

// Every test uses its own system-picked tcp port or ipc path and closes what it opens
// (Swift Testing runs tests in parallel).

private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

private func ipcPath(_ tag: String) -> String {
    "ipc:///tmp/homeroom-test-\(tag)-\(UInt32.random(in: 0...UInt32.max)).sock"
}

/// Collects what a subscriber's handler gets.
private final class Inbox: Sendable {
    private let messages = Mutex<[[UInt8]]>([])
    func add(_ message: [UInt8]) { messages.withLock { $0.append(message) } }
    var all: [[UInt8]] { messages.withLock { $0 } }
    func count(where predicate: ([UInt8]) -> Bool) -> Int { messages.withLock { $0.filter(predicate).count } }
}

/// Publishes `probe` until the subscriber got one (a subscriber attaches a little after
/// its dial, and what is published before is not for it).
private func connect(_ publisher: SPPublisher, _ inbox: Inbox, probe: [UInt8]) -> Bool {
    eventually(5) {
        try? publisher.send(probe)
        usleep(5_000)
        return inbox.count { $0 == probe } > 0
    }
}

private func port(of url: String) -> UInt16 { UInt16(url.split(separator: ":").last!)! }

@Suite("SP transport")
struct SPTransportTests {

    /// A backlog of posted work (a publisher far behind, broadcasting to thousands of
    /// subscribers) runs a slice per turn: the loop keeps turning, so it still accepts and
    /// reads, and is never taken as wedged. Drained in one turn, 400 items of 5 ms each
    /// keep it from turning for two seconds (more on a loaded machine, never less).
    @Test func aBacklogOfPostedWorkRunsASlicePerTurn() throws {
        let loop = try SPLoop(name: "hr-test-backlog", protocolKind: .pub, limits: SPLimits(), role: PublishRole())
        defer { loop.close() }
        let ran = Atomic<Int>(0)
        for _ in 0..<400 {
            loop.post { _ in
                usleep(5_000)
                ran.add(1, ordering: .relaxed)
            }
        }
        var longestSilence: UInt64 = 0
        let deadline = WallClock.monotonicMillis() + 30_000
        while ran.load(ordering: .relaxed) < 400 && WallClock.monotonicMillis() < deadline {
            longestSilence = max(longestSilence, loop.stats.silenceMillis)
            usleep(2_000)
        }
        #expect(ran.load(ordering: .relaxed) == 400, "every item runs, in the end")
        // A slice is about 20 ms; 1 s is generous for a loaded machine, half the 2 s of one turn.
        #expect(longestSilence < 1_000, "the loop did not turn for \(longestSilence) ms")
    }

    // MARK: Protocol pieces

    @Test("SP headers, framing and backtraces as nng writes them")
    func protocolPieces() throws {
        #expect(SPProtocol.rep.header == [0, 0x53, 0x50, 0, 0x00, 0x31, 0, 0])
        #expect(SPProtocol.peerProtocol(inHeader: SPProtocol.req.header[...]) == 0x30)
        #expect(SPProtocol.peerProtocol(inHeader: bytes("GET / HT")[...]) == nil)
        #expect(SPFraming.tcp.prefix(length: 258) == [0, 0, 0, 0, 0, 0, 1, 2])
        #expect(SPFraming.ipc.prefix(length: 1) == [1, 0, 0, 0, 0, 0, 0, 0, 1])
        #expect(SPBacktrace.length(of: [0x80, 0, 0, 7, 9][...]) == 4)
        #expect(SPBacktrace.length(of: [0, 0, 0, 1, 0x80, 0, 0, 7][...]) == 8, "one hop through a device")
        #expect(SPBacktrace.length(of: [0, 0, 0, 1][...]) == nil, "no request id")
        #expect(SPBacktrace.length(of: [0x80, 0][...]) == nil, "too short")
        #expect(SPBacktrace.replyID(SPBacktrace.requestID(5) + [1]) == 0x8000_0005)
        #expect(try SPAddress("tcp://127.0.0.1:0").framing == .tcp)
        #expect(try SPAddress("ipc:///tmp/x.sock").framing == .ipc)
        #expect(try SPAddress("tcp://[::1]:7000").withPort(7001) == "tcp://[::1]:7001")
    }

    @Test("malformed URLs are invalid-address errors with advice", arguments: [
        "tcp://127.0.0.1", "tcp://127.0.0.1:99999", "udp://127.0.0.1:7000", "nonsense", "tcp://no-such-host.invalid:7000",
    ])
    func invalidAddress(url: String) throws {
        let replier = try SPReplier()
        defer { replier.close() }
        let error = #expect(throws: TransportError.self) { try replier.listen(url) }
        #expect(error?.code == .addressInvalid)
        #expect(error?.description.contains("tcp://127.0.0.1:7000") == true)
    }

    @Test("listening twice on one address is address-in-use, with advice")
    func addressInUse() throws {
        let first = try SPReplier()
        let second = try SPReplier()
        defer { first.close(); second.close() }
        let bound = try first.listen("tcp://127.0.0.1:0")
        let error = #expect(throws: TransportError.self) { try second.listen(bound) }
        #expect(error?.code == .addressInUse)
        #expect(error?.description.contains("pick another port") == true)
    }

    // MARK: Request/reply

    @Test("req/rep round trips over tcp and ipc, from threads and tasks at once", arguments: ["tcp://127.0.0.1:0", "ipc"])
    func requestReply(url: String) async throws {
        let replier = try SPReplier()
        let requester = try SPRequester()
        defer { requester.close(); replier.close() }
        let bound = try replier.listen(url == "ipc" ? ipcPath("rr") : url)
        try replier.serve(workers: 3) { request in request.reversed() }
        try requester.dial(bound)
        let first: [UInt8] = try await requester.request(bytes("abc"), timeout: .seconds(5))
        #expect(first == bytes("cba"))
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<100 {
                group.addTask {
                    let body = bytes("request \(i)")
                    let reply = try? await requester.request(body, timeout: .seconds(10))
                    return reply == body.reversed()
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 100 && results.allSatisfy { $0 }, "every request got its own reply")
        let threaded = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 50) { i in
            let body = bytes("thread \(i)")
            if (try? requester.request(body, timeout: .seconds(10))) == body.reversed() { threaded.add(1, ordering: .relaxed) }
        }
        #expect(threaded.load(ordering: .relaxed) == 50)
        if url == "ipc", case .ipc(let path) = try SPAddress(bound).kind { unlink(path) }
    }

    @Test("a request whose connection drops after it was sent fails at once as connection-lost, and is not sent again")
    func connectionLostIsNotResent() throws {
        // A raw REP that reads one request and hangs up without answering, twice over
        // (so a resend would find a second connection to go to).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
        listen(listener, 4)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        let port = UInt16(bigEndian: address.sin_port)
        let requestsSeen = Atomic<Int>(0)
        let server = Thread {
            for _ in 0..<2 {
                let fd = accept(listener, nil, nil)
                guard fd >= 0 else { return }
                var timeout = timeval(tv_sec: 3, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                _ = SPProtocol.rep.header.withUnsafeBytes { send(fd, $0.baseAddress, 8, 0) }
                var buffer = [UInt8](repeating: 0, count: 64)
                var got = 0
                while got < 8 + 8 + 4 + 4 {   // header, prefix, request id, "once"
                    let n = recv(fd, &buffer, buffer.count, 0)
                    if n <= 0 { break }
                    got += n
                }
                if got >= 8 + 8 + 4 + 4 { requestsSeen.add(1, ordering: .relaxed) }
                close(fd)
            }
        }
        server.start()
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial("tcp://127.0.0.1:\(port)")
        let started = ContinuousClock.now
        // The code says it (connectionLost, not timedOut); the clock, generously, too.
        let error = #expect(throws: TransportError.self) { try requester.request(bytes("once"), timeout: .seconds(60)) }
        #expect(error?.code == .connectionLost, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(30), "a lost request waited for its timeout")
        usleep(500_000)
        #expect(requestsSeen.load(ordering: .relaxed) == 1, "the request was sent again on the next connection")
    }

    @Test("a reply larger than the per-connection send queue still goes out")
    func hugeReply() throws {
        let replier = try SPReplier(limits: SPLimitsConfig(maxMessageBytes: 1 << 20))
        let requester = try SPRequester(limits: SPLimitsConfig(maxMessageBytes: 100 << 20))
        defer { requester.close(); replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        let big = [UInt8](repeating: 7, count: 70 << 20) // over the 64 MiB send queue
        try replier.serve { _ in big }
        try requester.dial(bound)
        let reply = try requester.request(bytes("whole room"), timeout: .seconds(20))
        #expect(reply.count == big.count)
    }

    @Test("an ipc socket file left by a dead process is replaced; a live one is not; the file goes at close")
    func ipcSocketFiles() throws {
        let url = ipcPath("stale")
        guard case .ipc(let path) = try SPAddress(url).kind else { return }
        defer { unlink(path) }
        // A socket file nobody listens on, as a crashed process leaves it.
        let dead = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in for (i, b) in path.utf8.enumerated() { raw[i] = b } }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(dead, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(dead)
        #expect(access(path, F_OK) == 0)
        let replier = try SPReplier()
        _ = try replier.listen(url)
        try replier.serve { $0 }
        let second = try SPReplier()
        defer { second.close() }
        #expect((#expect(throws: TransportError.self) { try second.listen(url) })?.code == .addressInUse, "a live listener's file was taken over")
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(url)
        #expect(try requester.request(bytes("ping"), timeout: .seconds(5)) == bytes("ping"))
        replier.close()
        #expect(access(path, F_OK) != 0, "the socket file outlived its listener")
    }

    @Test("a requester that dials first connects once the replier starts, and resends across a restart")
    func dialFirstAndResend() throws {
        let probe = try SPReplier()
        let bound = try probe.listen("tcp://127.0.0.1:0")
        probe.close()
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(bound)
        let early = #expect(throws: TransportError.self) { try requester.request(bytes("x"), timeout: .milliseconds(200)) }
        #expect(early?.code == .timedOut)
        #expect(early?.description.contains(bound) == true, "a timeout names the address")
        var replier = try SPReplier()
        _ = try replier.listen(bound)
        try replier.serve { _ in bytes("first") }
        #expect(try requester.request(bytes("x"), timeout: .seconds(5)) == bytes("first"))
        // The replier goes away and comes back on the same port: the next request waits
        // for the new connection and gets through on it.
        replier.close()
        replier = try SPReplier()
        _ = try replier.listen(bound)
        try replier.serve { _ in bytes("second") }
        defer { replier.close() }
        #expect(try requester.request(bytes("x"), timeout: .seconds(5)) == bytes("second"))
    }

    @Test("cancelling the task of an async request ends it at once; closing fails what is in flight")
    func cancelAndClose() async throws {
        let replier = try SPReplier()
        let requester = try SPRequester()
        let release = Atomic<Bool>(false)
        defer { release.store(true, ordering: .relaxed); replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        // Replies only once released (or after 700 s): nothing may end these requests but
        // the cancellation and the close. Long, because on a loaded machine the tasks below
        // can wait many seconds for the shared pool (a 20 s bound once let a reply through).
        try replier.serve(workers: 2) { request in
            for _ in 0..<70_000 where !release.load(ordering: .relaxed) { usleep(10_000) }
            return request
        }
        try requester.dial(bound)
        let task = Task { try await requester.request(bytes("slow"), timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        let cancelled = ContinuousClock.now
        task.cancel()
        let result = await task.result
        // Well before the request's 30 s timeout, and ended by the cancellation (its code,
        // not `timedOut`). Not tighter: other suites' blocking tests can hold the shared
        // pool's threads (two on this machine) for seconds before this task resumes.
        #expect(ContinuousClock.now - cancelled < .seconds(25), "the cancelled request waited for its reply")
        #expect(failureCode(result) == .canceled)
        // A timeout far beyond anything the close could take, on however loaded a machine:
        // only the close may end it (30 s once ran out first under load).
        let inFlight = Task { try await requester.request(bytes("slow"), timeout: .seconds(600)) }
        try await Task.sleep(for: .milliseconds(100))
        requester.close()
        let ended = await inFlight.result
        #expect(failureCode(ended) == .closed, "the request in flight ended with \(ended)")
        #expect((#expect(throws: TransportError.self) { try requester.request(bytes("x"), timeout: .seconds(1)) })?.code == .closed)
    }

    @Test("an nng REQ socket talks to Homeroom's REP, and Homeroom's REQ to an nng REP")
    func interoperatesWithNNG() throws {
        let replier = try SPReplier()
        defer { replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        try replier.serve { request in bytes("sp:") + request }
        let nngReq = try NNGSocket(.req)
        defer { nngReq.close() }
        try nngReq.setReceiveTimeout(.seconds(5))
        try nngReq.dial(bound, blocking: true)
        try nngReq.send(bytes("hello"))
        #expect(try nngReq.receive() == bytes("sp:hello"))

        let nngRep = try NNGSocket(.rep)
        defer { nngRep.close() }
        try nngRep.setReceiveTimeout(.seconds(5))
        let repURL = try nngRep.listen("tcp://127.0.0.1:0")
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(repURL)
        let answered = Thread { if let request = try? nngRep.receive() { try? nngRep.send(bytes("nng:") + request) } }
        answered.start()
        #expect(try requester.request(bytes("hi"), timeout: .seconds(5)) == bytes("nng:hi"))
    }

    // MARK: Hostile peers

    @Test("a connection pipelining 200 requests has at most 16 read at once, and closing it leaves the replier serving")
    func pipelinedRequestsAreBounded() throws {
        let replier = try SPReplier(maxPendingPerConnection: 16)
        defer { replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        let handled = Atomic<Int>(0)
        try replier.serve(workers: 32) { request in
            let now = running.add(1, ordering: .relaxed).newValue
            var seen = most.load(ordering: .relaxed)
            while now > seen, !most.compareExchange(expected: seen, desired: now, ordering: .relaxed).exchanged { seen = most.load(ordering: .relaxed) }
            usleep(100_000)
            running.subtract(1, ordering: .relaxed)
            handled.add(1, ordering: .relaxed)
            return request
        }
        let connection = try #require(RawConnection(port: port(of: bound)))
        connection.write(SPProtocol.req.header)
        #expect(connection.read(8) == SPProtocol.rep.header)
        var burst: [UInt8] = []
        for i in 0..<200 { burst += RawConnection.frame(SPBacktrace.requestID(UInt32(i)) + [UInt8(i % 256)]) }
        connection.write(burst)
        #expect(eventually(10) { most.load(ordering: .relaxed) >= 2 }, "the requests were handled concurrently")
        #expect(most.load(ordering: .relaxed) <= 16, "more than 16 requests of one connection were in hand at once")
        connection.close()
        // Whatever it had sent, the replier still answers everyone else at once.
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(bound)
        #expect(try requester.request(bytes("next"), timeout: .seconds(5)) == bytes("next"))
        // 16 at a time, 100 ms each: by 1.5 s all 200 would be done had the close not stopped them.
        usleep(1_500_000)
        #expect(handled.load(ordering: .relaxed) < 150, "a closed connection's unread requests were still handled")
    }

    @Test("bad headers, oversized lengths, frames without a request id and half handshakes are dropped",
          arguments: ["bad magic", "wrong protocol", "oversized", "no request id", "half handshake"])
    func hostileConnectionsAreDropped(kind: String) throws {
        let replier = try SPReplier(limits: SPLimitsConfig(maxMessageBytes: 1 << 20, handshakeMillis: 300))
        defer { replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        try replier.serve { $0 }
        let connection = try #require(RawConnection(port: port(of: bound)))
        defer { connection.close() }
        switch kind {
        case "bad magic": connection.write(bytes("GET / HTTP/1.1\r\n\r\n"))
        case "wrong protocol": connection.write(SPProtocol.pub.header)
        case "oversized": connection.write(SPProtocol.req.header + [0x10, 0, 0, 0, 0, 0, 0, 0])
        case "no request id": connection.write(SPProtocol.req.header + RawConnection.frame([0, 0, 0, 1, 7]))
        default: connection.write(Array(SPProtocol.req.header.prefix(4)))
        }
        #expect(connection.peerClosed(), "the replier kept a \(kind) connection")
        #expect(eventually(3) { replier.stats.open.load(ordering: .relaxed) == 0 })
    }

    @Test("connections holding partial messages share one byte budget, and the one nearest to done completes")
    func partialMessagesShareABudget() throws {
        // A short handshake deadline: a connection held back before its header was read is
        // the node's choice, not the peer's stall, so it must outlive that deadline.
        let replier = try SPReplier(limits: SPLimitsConfig(maxMessageBytes: 1 << 20, handshakeMillis: 300, maxBufferedBytes: 2 << 20))
        defer { replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        try replier.serve { _ in bytes("done") }
        var connections: [RawConnection] = []
        defer { for c in connections { c.close() } }
        let announced = 1 << 20
        let request = RawConnection.requestID(1)
        // Ten connections each send most of a 1 MiB request: 6 MiB against a 2 MiB budget.
        for _ in 0..<10 {
            let c = try #require(RawConnection(port: port(of: bound)))
            c.write(SPProtocol.req.header + SPFraming.tcp.prefix(length: announced) + request + [UInt8](repeating: 1, count: 600_000))
            connections.append(c)
        }
        #expect(eventually(5) { replier.stats.starved.load(ordering: .relaxed) > 0 }, "nothing was held back past the budget")
        usleep(1_000_000) // past the handshake deadline, with connections held back
        // Each finishes its request in turn: every one is answered (the budget frees as they complete).
        for c in connections { c.write([UInt8](repeating: 1, count: announced - 4 - 600_000)) }
        for (index, c) in connections.enumerated() {
            c.setReadTimeout(seconds: 30)   // 10 MiB through a 2 MiB budget, alongside the other suites
            let reply = c.read(8 + SPProtocol.headerSize + 8)
            #expect(reply.suffix(8) == Array(request + bytes("done")), "connection \(index) got no reply")
        }
    }

    // MARK: Pub/sub

    @Test("pub/sub delivers only subscribed topics, over tcp and ipc, and unsubscribe stops a topic", arguments: ["tcp://127.0.0.1:0", "ipc"])
    func pubSub(url: String) throws {
        let publisher = try SPPublisher()
        defer { publisher.close() }
        let bound = try publisher.listen(url == "ipc" ? ipcPath("ps") : url)
        let inbox = Inbox()
        let subscriber = try SPSubscriber { inbox.add($0) }
        defer { subscriber.close() }
        subscriber.subscribe(bytes("a/"))
        subscriber.subscribe(bytes("b/"))
        try subscriber.dial(bound)
        #expect(connect(publisher, inbox, probe: bytes("a/probe")))
        try publisher.send(topic: bytes("a/"), payload: bytes("one"))
        try publisher.send(topic: bytes("c/"), payload: bytes("not for us"))
        try publisher.send(topic: bytes("b/"), payload: bytes("two"))
        #expect(eventually(3) { inbox.count { $0 == bytes("b/two") } == 1 })
        #expect(inbox.count { $0 == bytes("a/one") } == 1)
        #expect(inbox.count { $0.starts(with: bytes("c/")) } == 0)
        subscriber.unsubscribe(bytes("a/"))
        try publisher.send(topic: bytes("a/"), payload: bytes("after"))
        try publisher.send(topic: bytes("b/"), payload: bytes("marker"))
        #expect(eventually(3) { inbox.count { $0 == bytes("b/marker") } == 1 })
        #expect(inbox.count { $0 == bytes("a/after") } == 0)
        if url == "ipc", case .ipc(let path) = try SPAddress(bound).kind { unlink(path) }
    }

    @Test("Homeroom's SUB reads an nng PUB, and an nng SUB reads Homeroom's PUB")
    func pubSubInteroperatesWithNNG() throws {
        let nngPub = try NNGSocket(.pub)
        defer { nngPub.close() }
        let pubURL = try nngPub.listen("tcp://127.0.0.1:0")
        let inbox = Inbox()
        let subscriber = try SPSubscriber { inbox.add($0) }
        defer { subscriber.close() }
        subscriber.subscribe(bytes("t"))
        try subscriber.dial(pubURL)
        #expect(eventually(5) { try? nngPub.send(bytes("t-probe")); usleep(5_000); return inbox.count { $0 == bytes("t-probe") } > 0 })

        let publisher = try SPPublisher()
        defer { publisher.close() }
        let bound = try publisher.listen("tcp://127.0.0.1:0")
        let nngSub = try NNGSocket(.sub)
        defer { nngSub.close() }
        try nngSub.subscribe("t")
        try nngSub.dial(bound, blocking: true)
        let got = eventually(5) {
            try? publisher.send(bytes("t-from-sp"))
            usleep(5_000)
            while let message = try? nngSub.tryReceive() { if message == bytes("t-from-sp") { return true } }
            return false
        }
        #expect(got)
    }

    @Test("a subscriber that does not read loses its oldest messages; the publisher never blocks")
    func slowSubscriberDropsOldest() throws {
        let publisher = try SPPublisher(limits: SPLimitsConfig(sendQueueMessages: 64))
        defer { publisher.close() }
        let bound = try publisher.listen("tcp://127.0.0.1:0")
        let connection = try #require(RawConnection(port: port(of: bound)))
        defer { connection.close() }
        connection.write(SPProtocol.sub.header)
        #expect(connection.read(8) == SPProtocol.pub.header)
        #expect(eventually(3) { publisher.subscribers == 1 })
        let body = [UInt8](repeating: 7, count: 16 << 10)
        // Published from a thread of its own, so a publisher that blocks fails the wait
        // below (bounded) instead of hanging the test; idle, it takes a fraction of a second.
        let published = Atomic<Int>(0), refused = Atomic<Int>(0)
        Thread {
            for _ in 0..<2_000 {
                if (try? publisher.send(body)) == nil { refused.add(1, ordering: .relaxed) }
                published.add(1, ordering: .releasing)
            }
        }.start()
        #expect(eventually(20) { published.load(ordering: .acquiring) == 2_000 },
                "publishing blocked on a subscriber that does not read (\(published.load(ordering: .acquiring)) of 2,000 sent)")
        #expect(refused.load(ordering: .relaxed) == 0, "sends failed")
        #expect(eventually(5) { publisher.dropped > 0 }, "nothing was dropped for a subscriber that reads nothing")
        #expect(publisher.subscribers == 1, "a slow subscriber is kept, with its newest messages")
    }

    @Test("a subscriber that sends (SP subscribers never do) is dropped")
    func chattySubscriberIsDropped() throws {
        let publisher = try SPPublisher()
        defer { publisher.close() }
        let bound = try publisher.listen("tcp://127.0.0.1:0")
        let connection = try #require(RawConnection(port: port(of: bound)))
        defer { connection.close() }
        connection.write(SPProtocol.sub.header + RawConnection.frame(bytes("hello")))
        #expect(connection.peerClosed())
    }

    @Test("a dialer reconnects to a publisher that restarts on the same port, and redial replaces its connection")
    func subscriberReconnects() throws {
        var publisher = try SPPublisher()
        let bound = try publisher.listen("tcp://127.0.0.1:0")
        let inbox = Inbox()
        let subscriber = try SPSubscriber { inbox.add($0) }
        defer { subscriber.close() }
        subscriber.subscribe([])
        let dialer = try subscriber.dial(bound)
        #expect(connect(publisher, inbox, probe: bytes("one")))
        publisher.close()
        publisher = try SPPublisher()
        defer { publisher.close() }
        _ = try publisher.listen(bound)
        #expect(connect(publisher, inbox, probe: bytes("two")), "no reconnection after the publisher restarted")
        let accepted = publisher.stats.accepted.load(ordering: .relaxed)
        subscriber.redial(dialer)
        #expect(eventually(3) { publisher.stats.accepted.load(ordering: .relaxed) == accepted + 1 && publisher.subscribers == 1 },
                "redial did not replace the connection with exactly one new one")
        subscriber.removeDialer(dialer)
        #expect(eventually(3) { publisher.subscribers == 0 }, "a removed dialer kept its connection")
    }

    @Test("closing is prompt and idempotent, from many threads at once, with traffic flowing")
    func closeUnderLoad() throws {
        for round in 0..<20 {
            let publisher = try SPPublisher()
            let bound = try publisher.listen("tcp://127.0.0.1:0")
            let subscriber = try SPSubscriber { _ in }
            subscriber.subscribe([])
            try subscriber.dial(bound)
            let flooding = Atomic<Bool>(true)
            let flood = Thread { while flooding.load(ordering: .relaxed) { try? publisher.send([UInt8](repeating: 1, count: 512)) } }
            flood.start()
            _ = eventually(2) { subscriber.received > 100 }
            let started = ContinuousClock.now
            DispatchQueue.concurrentPerform(iterations: 4) { _ in subscriber.close() }
            // Milliseconds when idle; 5 s leaves a loaded machine room, not a close that waits on the flood.
            #expect(ContinuousClock.now - started < .seconds(5), "round \(round): closing a busy subscriber took too long")
            flooding.store(false, ordering: .relaxed)
            publisher.close()
            publisher.close()
            #expect(publisher.subscribers == 0)
        }
    }
}

private func failureCode(_ result: Result<[UInt8], any Error>) -> TransportError.Code? {
    if case .failure(let error) = result { return (error as? TransportError)?.code }
    return nil
}
