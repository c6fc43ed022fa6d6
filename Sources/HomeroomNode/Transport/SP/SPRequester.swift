import Dispatch
import Synchronization
import HomeroomSupport

/// The client side of REQ/REP over SP, safe to use from many threads and tasks at once:
/// every request carries its own id, so many may be outstanding on one connection and
/// replies are matched by id. A request made while no connection is up waits for one
/// (within its timeout); one whose connection drops after it was sent fails at once with
/// `.connectionLost` rather than being sent again behind the caller's back (unlike nng's
/// REQ): only the caller knows whether doing it twice is safe. The dialer reconnects.
public final class SPRequester: Sendable {
    private let loop: SPLoop
    private let role: RequestRole
    private let target = Mutex<String>("")
    private let dialers = Mutex<[UInt64]>([])

    public init(limits: SPLimitsConfig = SPLimitsConfig(), name: String = "hr-req") throws(TransportError) {
        role = RequestRole()
        loop = try SPLoop(name: name, protocolKind: .req, limits: limits.limits, role: role)
    }

    deinit { close() }

    /// Dials a replier (in the background; requests wait for the connection within their timeout).
    public func dial(_ url: String) throws(TransportError) {
        let id = try loop.dial(url)
        dialers.withLock { $0.append(id) }
        target.withLock { $0 = $0.isEmpty ? url : $0 + "," + url }
    }

    /// Drops the connection and dials again at once (after a partition, a fresh attempt
    /// gets through sooner than TCP's own retries): an open connection, and an attempt
    /// still connecting once it is `youngMillis` old (a SYN lost in the partition is
    /// otherwise first retried a second after it was sent, then after three).
    public func reconnect(keepingAttemptsYoungerThan youngMillis: UInt64 = 0) {
        for id in dialers.withLock({ $0 }) { loop.redial(id, keepingAttemptsYoungerThan: youngMillis) }
    }

    /// Replaces an attempt still connecting with a fresh one at once, and leaves an open
    /// connection alone: for a peer just heard again, whose path works now while the SYN
    /// of the attempt made before may have been lost.
    public func retryStalledAttempt() {
        for id in dialers.withLock({ $0 }) { loop.redial(id, keepingOpen: true) }
    }

    /// True while a connection to the replier is up.
    public var isConnected: Bool { loop.stats.open.load(ordering: .relaxed) > 0 }

    /// Sends `bytes` and waits for the reply, for at most `timeout`.
    /// Throws `.timedOut` when no reply came in time and `.closed` after `close()`.
    public func request(_ bytes: [UInt8], timeout: Duration) throws(TransportError) -> [UInt8] {
        let waiter = SPWaiter()
        try start(bytes, timeout: timeout) { result in waiter.complete(result) }
        return try waiter.wait(longest: timeout + .seconds(2)).get()
    }

    /// Sends `bytes` without waiting: `completion` gets the reply or the failure, at most
    /// `timeout` later, on the requester's loop thread (keep it short).
    public func send(_ bytes: [UInt8], timeout: Duration, completion: @escaping @Sendable (Result<[UInt8], TransportError>) -> Void) {
        do throws(TransportError) {
            try start(bytes, timeout: timeout, completion: completion)
        } catch {
            completion(.failure(error))
        }
    }

    /// Sends `bytes` and suspends until the reply comes, for at most `timeout`.
    /// Cancelling the task ends the wait with `.canceled`.
    public func request(_ bytes: [UInt8], timeout: Duration) async throws(TransportError) -> [UInt8] {
        if Task.isCancelled { throw TransportError(.canceled, "request of \(bytes.count) bytes") }
        let once = SPOnce()
        let id = role.nextRequestID()
        let result: Result<[UInt8], TransportError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<[UInt8], TransportError>, Never>) in
                once.set(continuation)
                do throws(TransportError) {
                    try start(bytes, timeout: timeout, id: id) { result in once.resume(result) }
                } catch {
                    once.resume(.failure(error))
                }
            }
        } onCancel: {
            let role = self.role
            let size = bytes.count
            loop.post { _ in role.cancel(id, TransportError(.canceled, "request of \(size) bytes")) }
        }
        return try result.get()
    }

    private func start(_ bytes: [UInt8], timeout: Duration, id: UInt32? = nil,
                       completion: @escaping @Sendable (Result<[UInt8], TransportError>) -> Void) throws(TransportError) {
        guard !loop.isStopping else { throw TransportError(.closed, "request on a closed requester") }
        let millis = UInt64(max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        let role = self.role
        let requestID = id ?? role.nextRequestID()
        let target = self.target.withLock { $0 }
        loop.post { loop in
            role.begin(id: requestID, body: bytes, deadlineMillis: WallClock.monotonicMillis() + millis,
                       target: target, timeout: timeout, completion: completion, loop: loop)
        }
        // A loop stopped after the check above never runs the closure: its close fails everything.
        if loop.isStopping { role.failAllFromOutside() }
    }

    /// Fails every outstanding request with `.closed` and closes the connection.
    public func close() {
        loop.close()
        role.failAllFromOutside()
    }
}

/// The REQ role on the loop thread.
final class RequestRole: SPRole, @unchecked Sendable {
    private struct Pending {
        let frame: [UInt8]
        let deadlineMillis: UInt64
        let failure: TransportError
        let completion: @Sendable (Result<[UInt8], TransportError>) -> Void
        var sentOn: UInt64?
    }
    private let ids = Atomic<UInt32>(UInt32.random(in: 0...0x3fff_ffff))
    // Guarded by a lock (not only loop-confined) so `close()` can fail what is left
    // after the loop has ended.
    private let table = Mutex<[UInt32: Pending]>([:])
    // Loop-confined.
    private var open: [UInt64: SPConnection] = [:]
    /// Requests cancelled before they began (both arrive through the mailbox, in order).
    private var cancelledEarly: [UInt32: TransportError] = [:]

    func nextRequestID() -> UInt32 { ids.add(1, ordering: .relaxed).newValue & 0x7fff_ffff }

    func begin(id: UInt32, body: [UInt8], deadlineMillis: UInt64, target: String, timeout: Duration,
               completion: @escaping @Sendable (Result<[UInt8], TransportError>) -> Void, loop: SPLoop) {
        let failure = TransportError(.timedOut, "no reply from \(target.isEmpty ? "the replier" : target) within \(timeout) to a \(body.count)-byte request")
        if let error = cancelledEarly.removeValue(forKey: id) {
            completion(.failure(error))
            return
        }
        var pending = Pending(frame: SPBacktrace.requestID(id) + body, deadlineMillis: deadlineMillis, failure: failure,
                              completion: completion, sentOn: nil)
        if let c = open.values.first, loop.send(pending.frame, on: c) { pending.sentOn = c.id }
        table.withLock { $0[id] = pending }
    }

    /// Ends a request with `error`; one not begun yet ends as soon as it begins.
    func cancel(_ id: UInt32, _ error: TransportError) {
        if table.withLock({ $0[id] }) == nil {
            cancelledEarly[id] = error
            return
        }
        finish(id, .failure(error))
    }

    func finish(_ id: UInt32, _ result: Result<[UInt8], TransportError>) {
        guard let pending = table.withLock({ $0.removeValue(forKey: id) }) else { return }
        pending.completion(result)
    }

    func opened(_ c: SPConnection, loop: SPLoop) {
        open[c.id] = c
        let unsent = table.withLock { t in t.filter { $0.value.sentOn == nil }.map { ($0.key, $0.value.frame) } }
        for (id, frame) in unsent where loop.send(frame, on: c) {
            table.withLock { $0[id]?.sentOn = c.id }
        }
    }

    func closed(_ c: SPConnection, loop: SPLoop) {
        open.removeValue(forKey: c.id)
        let lost = table.withLock { t in t.filter { $0.value.sentOn == c.id }.map(\.key) }
        // Closing the requester drops its connections too: that is `.closed`, not a loss.
        let error = loop.isStopping ? TransportError(.closed, "request on a closed requester")
                                    : TransportError(.connectionLost, "request to \(c.peerName)")
        for id in lost { finish(id, .failure(error)) }
    }

    func received(_ message: [UInt8], on c: SPConnection, loop: SPLoop) {
        guard let id = SPBacktrace.replyID(message) else {
            loop.drop(c) // a reply without a request id: not a REP peer
            return
        }
        finish(id & 0x7fff_ffff, .success(Array(message[4...])))
    }

    func tick(nowMillis: UInt64, loop: SPLoop) -> UInt64? {
        let (expired, next) = table.withLock { t -> ([UInt32], UInt64?) in
            var expired: [UInt32] = []
            var next: UInt64? = nil
            for (id, p) in t {
                if p.deadlineMillis <= nowMillis { expired.append(id) } else { next = min(next ?? p.deadlineMillis, p.deadlineMillis) }
            }
            return (expired, next)
        }
        for id in expired {
            if let p = table.withLock({ $0[id] }) { finish(id, .failure(explained(p.failure, loop: loop))) }
        }
        return next
    }

    /// A timeout at an address that answered in another protocol names the mix-up.
    private func explained(_ failure: TransportError, loop: SPLoop) -> TransportError {
        if let why = loop.stats.lastTLSFailure.withLock({ $0 }) {
            return TransportError(.timedOut, failure.operation, reason: "TLS failed: \(why)")
        }
        let spoken = loop.stats.lastWrongPeer.load(ordering: .relaxed)
        if spoken == 0, let why = loop.stats.lastDialFailure.withLock({ $0 }) {
            return TransportError(.timedOut, failure.operation, reason: why)
        }
        guard spoken != 0 else { return failure }
        let what: String
        if spoken == SPLoopStats.closedBeforeHeader {
            return TransportError(.timedOut, failure.operation,
                                  reason: "the address is closing connections before the SP header: a tls+tcp:// node (dial it as tls+tcp://), or one at its connection limit")
        }
        switch SPProtocol(rawValue: spoken) {
        case .pub?: what = "a PUB socket (a node's --publish address?); a node's requests go to its --listen address"
        case .req?: what = "a REQ socket, not a node"
        case .sub?, .rep?: what = "an SP socket of another kind (\(SPProtocol(rawValue: spoken)!.name))"
        case nil: what = "something that is not an SP socket at all (HTTP? the metrics port?)"
        }
        return TransportError(.timedOut, failure.operation, reason: "the address is \(what)")
    }

    func failAllFromOutside() {
        let all = table.withLock { t in
            defer { t.removeAll() }
            return Array(t.values)
        }
        for p in all { p.completion(.failure(TransportError(.closed, "request on a closed requester"))) }
    }
}

/// One blocking wait for one result.
final class SPWaiter: Sendable {
    private let result = Mutex<Result<[UInt8], TransportError>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func complete(_ value: Result<[UInt8], TransportError>) {
        let first = result.withLock { r -> Bool in
            if r != nil { return false }
            r = value
            return true
        }
        if first { done.signal() }
    }

    func wait(longest: Duration) -> Result<[UInt8], TransportError> {
        let millis = Int(longest.components.seconds * 1000 + longest.components.attoseconds / 1_000_000_000_000_000)
        if done.wait(timeout: .now() + .milliseconds(millis)) == .timedOut {
            // Only if the loop itself stopped answering; its own deadline names the replier.
            complete(.failure(TransportError(.timedOut, "wait \(longest) for a reply (the requester's event loop did not answer)")))
        }
        return result.withLock { $0! }
    }
}

/// A continuation resumed at most once, whichever comes first.
final class SPOnce: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result<[UInt8], TransportError>, Never>?
        var early: Result<[UInt8], TransportError>?
        var resumed = false
    }
    private let state = Mutex(State())

    func set(_ continuation: CheckedContinuation<Result<[UInt8], TransportError>, Never>) {
        let early = state.withLock { s -> Result<[UInt8], TransportError>? in
            if let early = s.early, !s.resumed { s.resumed = true; return early }
            s.continuation = continuation
            return nil
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(_ value: Result<[UInt8], TransportError>) {
        let continuation = state.withLock { s -> CheckedContinuation<Result<[UInt8], TransportError>, Never>? in
            if s.resumed { return nil }
            guard let c = s.continuation else { s.early = value; return nil }
            s.resumed = true
            s.continuation = nil
            return c
        }
        continuation?.resume(returning: value)
    }
}
