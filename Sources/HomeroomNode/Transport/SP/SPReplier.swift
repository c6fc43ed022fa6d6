import Dispatch
import Synchronization

/// The server side of REQ/REP over SP: an event loop reads requests from every
/// connection, worker threads run the handler, the loop writes the replies back.
///
/// Bounded everywhere: at most `maxPendingPerConnection` requests of one connection are
/// read and not yet answered (past that its socket is not read, so a client that
/// pipelines thousands of requests holds only that many); at most `maxQueued` wait for
/// a worker in all. A frame without a request id drops its connection, as nng does.
public final class SPReplier: Sendable {
    private let loop: SPLoop
    private let role: ReplyRole
    private let queue: SPJobQueue
    private let workers = Mutex<[OSThread]>([])

    /// `urgent` (run on the loop thread as each request arrives: keep it cheap) picks the
    /// requests that workers take before any other waiting (the teacher lane).
    public init(limits: SPLimitsConfig = SPLimitsConfig(), maxPendingPerConnection: Int = 16, maxQueued: Int = 1_024,
                urgent: (@Sendable ([UInt8]) -> Bool)? = nil) throws(TransportError) {
        queue = SPJobQueue()
        role = ReplyRole(queue: queue, maxPendingPerConnection: max(1, maxPendingPerConnection), maxQueued: max(1, maxQueued), urgent: urgent)
        loop = try SPLoop(name: "hr-rep-loop", protocolKind: .rep, limits: limits.limits, role: role)
    }

    deinit { close() }

    /// Listens; returns the bound URL (`tcp://127.0.0.1:0` gets its port).
    @discardableResult
    public func listen(_ url: String) throws(TransportError) -> String {
        try loop.listen(url)
    }

    /// Starts `count` worker threads that call `handler` for each request (concurrently,
    /// so it must be thread-safe) and send back what it returns. Requests that came
    /// before wait in the queue.
    public func serve(workers count: Int = 2, handler: @escaping @Sendable ([UInt8]) -> [UInt8]) throws(TransportError) {
        try serveConnections(workers: count) { body, _ in handler(body) }
    }

    /// `serve`, with the id of the connection each request came on (unique for the
    /// replier's life), so the handler can keep per-connection limits.
    public func serveConnections(workers count: Int = 2, handler: @escaping @Sendable ([UInt8], UInt64) -> [UInt8]) throws(TransportError) {
        try serveDeferring(workers: count) { body, connection in .now(handler(body, connection)) }
    }

    /// `serveConnections`, where the handler may answer later: `.later(start)` frees the
    /// worker at once, and `start` is given the function that sends the reply (from any
    /// thread, once; later calls are ignored). The connection's request stays pending,
    /// and counts against its limit, until then.
    public func serveDeferring(workers count: Int = 2, handler: @escaping @Sendable ([UInt8], UInt64) -> SPReply) throws(TransportError) {
        precondition(count > 0, "serve needs at least one worker")
        for index in 0..<count {
            let queue = self.queue
            let loop = self.loop
            let role = self.role
            let thread: OSThread
            do {
                thread = try OSThread(name: "hr-rep-\(index)") {
                    while let job = queue.take() {
                        switch handler(job.body, job.connection) {
                        case let .now(reply):
                            loop.post { loop in role.answer(job, reply: reply, loop: loop) }
                        case let .later(start):
                            let once = Atomic<Bool>(false)
                            start { reply in
                                guard !once.exchange(true, ordering: .acquiringAndReleasing) else { return }
                                loop.post { loop in role.answer(job, reply: reply, loop: loop) }
                            }
                        }
                    }
                }
            } catch {
                throw TransportError(.other, "start request worker \(index)", reason: error.reason)
            }
            workers.withLock { $0.append(thread) }
        }
    }

    /// Replies that found their connection gone (the client left or timed out first).
    public var failedReplies: Int { role.failures.load(ordering: .relaxed) }
    /// Connections dropped for a request without a request id.
    public var malformedRequests: Int { role.malformed.load(ordering: .relaxed) }
    /// Urgent requests a worker took ahead of ordinary ones waiting (the teacher lane at work).
    public var urgentOvertakes: Int { queue.overtaken }
    var stats: SPLoopStats { loop.stats }

    /// Stops accepting, lets the workers finish what they run, closes every connection.
    public func close() {
        queue.close()
        let threads = workers.withLock { w in
            defer { w.removeAll() }
            return w
        }
        for thread in threads { thread.join() }
        loop.close()
    }
}

/// What a request handler gives back: the reply, or how to send it later (without
/// holding a worker while, for instance, other nodes are asked).
public enum SPReply: Sendable {
    case now([UInt8])
    case later(@Sendable (_ reply: @escaping @Sendable ([UInt8]) -> Void) -> Void)
}

/// A request taken from a connection, waiting for or held by a worker.
struct SPJob: Sendable {
    let connection: UInt64
    let backtrace: [UInt8]
    let body: [UInt8]
    var urgent = false
}

/// The requests waiting for a worker: two locked lanes and a counting semaphore. A
/// worker takes the urgent lane's oldest job first, then the ordinary lane's.
final class SPJobQueue: Sendable {
    private struct Lane {
        var jobs: [SPJob] = []
        var head = 0
        var count: Int { jobs.count - head }

        mutating func pop() -> SPJob? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            // Taken jobs are let go at once when the lane empties (an urgent lane rarely
            // reaches the batch below, and its bodies would stay held, uncounted).
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 256 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    private struct State {
        var urgent = Lane()
        var ordinary = Lane()
        var bytes = 0
        var closed = false
        /// Jobs taken from the urgent lane while the ordinary one had some waiting.
        var overtaken = 0
        /// Urgent jobs taken in a row while ordinary ones waited: bounded, so a flood of
        /// (forged) control writes slows the rest down but never stops it.
        var urgentRun = 0
    }

    /// At most this many urgent jobs in a row go ahead of ordinary ones waiting.
    static let maxUrgentRun = 8
    private let state = Mutex(State())
    private let ready = DispatchSemaphore(value: 0)
    private let waiters = Atomic<Int>(0)

    var count: Int { state.withLock { $0.urgent.count + $0.ordinary.count } }
    /// Bytes of the requests waiting.
    var bytes: Int { state.withLock { $0.bytes } }
    /// Urgent jobs that went ahead of ordinary ones waiting (metrics).
    var overtaken: Int { state.withLock { $0.overtaken } }

    func push(_ job: SPJob) {
        let accepted = state.withLock { s -> Bool in
            if s.closed { return false }
            if job.urgent { s.urgent.jobs.append(job) } else { s.ordinary.jobs.append(job) }
            s.bytes += job.body.count
            return true
        }
        if accepted { ready.signal() }
    }

    /// The next job, or nil once closed.
    func take() -> SPJob? {
        while true {
            ready.wait()
            let next = state.withLock { s -> SPJob?? in
                if s.closed { return .some(nil) }
                let waitingOrdinary = s.ordinary.count > 0
                if s.urgentRun < Self.maxUrgentRun || !waitingOrdinary, let job = s.urgent.pop() {
                    if waitingOrdinary {
                        s.overtaken += 1
                        s.urgentRun += 1
                    } else {
                        s.urgentRun = 0
                    }
                    s.bytes -= job.body.count
                    return .some(job)
                }
                s.urgentRun = 0
                guard let job = s.ordinary.pop() else { return .none }
                s.bytes -= job.body.count
                return .some(job)
            }
            if let next { return next }
        }
    }

    func close() {
        let wasOpen = state.withLock { s -> Bool in
            defer { s.closed = true; s.urgent = Lane(); s.ordinary = Lane() }
            return !s.closed
        }
        // Wake every worker: each sees `closed`.
        if wasOpen { for _ in 0..<256 { ready.signal() } }
    }
}

/// The REP role on the loop thread.
final class ReplyRole: SPRole, @unchecked Sendable {
    let failures = Atomic<Int>(0)
    let malformed = Atomic<Int>(0)
    private let queue: SPJobQueue
    private let maxPendingPerConnection: Int
    private let maxQueued: Int
    // Loop-confined: connections paused because the shared queue was full.
    private var waitingForQueue: [UInt64] = []
    private let urgent: (@Sendable ([UInt8]) -> Bool)?

    init(queue: SPJobQueue, maxPendingPerConnection: Int, maxQueued: Int, urgent: (@Sendable ([UInt8]) -> Bool)?) {
        self.urgent = urgent
        self.queue = queue
        self.maxPendingPerConnection = maxPendingPerConnection
        self.maxQueued = maxQueued
    }

    /// At most `maxQueued` requests, and 256 MiB of them, wait for a worker.
    private var queueFull: Bool { queue.count >= maxQueued || queue.bytes >= Self.maxQueuedBytes }
    static let maxQueuedBytes = 256 << 20

    func opened(_ connection: SPConnection, loop: SPLoop) {}

    func received(_ message: [UInt8], on c: SPConnection, loop: SPLoop) {
        guard let length = SPBacktrace.length(of: message[...]) else {
            malformed.add(1, ordering: .relaxed)
            loop.drop(c)
            return
        }
        c.pending += 1
        let body = Array(message[length...])
        // One urgent request per connection at a time: a client cannot fill the lane alone.
        let urgent = c.urgentPending == 0 && (self.urgent?(body) ?? false)
        if urgent { c.urgentPending += 1 }
        queue.push(SPJob(connection: c.id, backtrace: Array(message[..<length]), body: body, urgent: urgent))
        if c.pending >= maxPendingPerConnection {
            loop.pauseReading(c)
        } else if queueFull {
            loop.pauseReading(c)
            waitingForQueue.append(c.id)
        }
    }

    func closed(_ connection: SPConnection, loop: SPLoop) {}

    func answer(_ job: SPJob, reply: [UInt8], loop: SPLoop) {
        if let c = loop.connections[job.connection] {
            c.pending -= 1
            if job.urgent { c.urgentPending -= 1 }
            loop.send(job.backtrace + reply, on: c)
            if c.pending < maxPendingPerConnection && !queueFull { loop.resumeReading(c) }
        } else {
            failures.add(1, ordering: .relaxed)
        }
        guard !waitingForQueue.isEmpty, !queueFull else { return }
        let resumable = waitingForQueue
        waitingForQueue.removeAll()
        for id in resumable {
            if let c = loop.connections[id], c.pending < maxPendingPerConnection { loop.resumeReading(c) }
        }
    }
}

/// Transport limits as a public value (the loop's own type stays internal).
public struct SPLimitsConfig: Sendable {
    public var maxMessageBytes: Int
    public var handshakeMillis: UInt64
    public var maxConnections: Int
    public var sendQueueMessages: Int
    public var reconnectMinMillis: UInt64
    public var reconnectMaxMillis: UInt64
    /// Unparsed bytes all connections of a socket may hold together (see `SPLimits`).
    public var maxBufferedBytes: Int

    public init(maxMessageBytes: Int = 16 << 20, handshakeMillis: UInt64 = 5_000, maxConnections: Int = 4_096,
                sendQueueMessages: Int = 8_192, reconnectMinMillis: UInt64 = 50, reconnectMaxMillis: UInt64 = 500,
                maxBufferedBytes: Int = 256 << 20) {
        self.maxMessageBytes = maxMessageBytes
        self.handshakeMillis = handshakeMillis
        self.maxConnections = maxConnections
        self.sendQueueMessages = sendQueueMessages
        self.reconnectMinMillis = reconnectMinMillis
        self.reconnectMaxMillis = reconnectMaxMillis
        self.maxBufferedBytes = maxBufferedBytes
    }

    var limits: SPLimits {
        var l = SPLimits()
        l.maxMessageBytes = maxMessageBytes
        l.handshakeMillis = handshakeMillis
        l.maxConnections = maxConnections
        l.sendQueueMessages = sendQueueMessages
        l.reconnectMinMillis = reconnectMinMillis
        l.reconnectMaxMillis = reconnectMaxMillis
        l.maxBufferedBytes = maxBufferedBytes
        return l
    }
}
