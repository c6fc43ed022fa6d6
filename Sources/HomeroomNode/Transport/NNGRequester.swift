@preconcurrency import Glibc
import CNNG
import Synchronization

/// The client side of REQ/REP, safe to use from many threads and tasks at once.
///
/// A REQ socket has one request outstanding per context, so every call takes its own
/// nng context from a small pool (opened on demand, reused after success or timeout).
/// `request(_:timeout:)` blocks the calling thread; the `async` overload waits on an
/// nng aio callback instead, so it never blocks a thread of the concurrency pool, and
/// it honours task cancellation.
public final class NNGRequester: Sendable {
    public let socket: NNGSocket

    private struct Pool {
        var closed = false
        var idle: [UInt32] = []
        var active: Set<UInt32> = []
        var inFlight = 0
    }
    private let pool = Mutex(Pool())
    private static let maxIdleContexts = 64

    public init() throws(NNGError) {
        socket = try NNGSocket(.req)
    }

    deinit { close() }

    /// Dials a replier; see `NNGSocket.dial`. Requests made before the connection is
    /// up wait for it (within their timeout).
    public func dial(_ url: String, blocking: Bool = false) throws(NNGError) {
        try socket.dial(url, blocking: blocking)
    }

    /// Listens for repliers that dial in; returns the bound URL.
    @discardableResult
    public func listen(_ url: String) throws(NNGError) -> String {
        try socket.listen(url)
    }

    /// Sends `bytes` and waits for the reply, for at most `timeout` in total.
    /// Throws `.timedOut` when no reply came in time and `.closed` after `close()`.
    public func request(_ bytes: [UInt8], timeout: Duration) throws(NNGError) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        let ctx = try checkOut()
        var reusable = false
        defer { checkIn(ctx, reusable: reusable) }

        var aio: OpaquePointer? = nil
        try nngCheck(nng_aio_alloc(&aio, nil, nil), "allocate request aio")
        defer { nng_aio_free(aio) }

        let msg = try makeMessage(bytes)
        nng_aio_set_msg(aio, msg)
        nng_aio_set_timeout(aio, nngMilliseconds(timeout))
        nng_ctx_send(nng_ctx(id: ctx), aio)
        nng_aio_wait(aio)
        var rv = nng_aio_result(aio)
        if rv != 0 {
            nng_msg_free(nng_aio_get_msg(aio))
            reusable = rv == .nngTimedOut
            throw NNGError(rv, "send request of \(bytes.count) bytes")
        }

        nng_aio_set_timeout(aio, nngMilliseconds(deadline - ContinuousClock.now))
        nng_ctx_recv(nng_ctx(id: ctx), aio)
        nng_aio_wait(aio)
        rv = nng_aio_result(aio)
        if rv != 0 {
            reusable = rv == .nngTimedOut
            throw NNGError(rv, "wait \(timeout) for the reply to a \(bytes.count)-byte request")
        }
        reusable = true
        return nngTakeBody(nng_aio_get_msg(aio))
    }

    /// Sends `bytes` and suspends until the reply comes, for at most `timeout`.
    /// Cancelling the task ends the wait with `.canceled`.
    public func request(_ bytes: [UInt8], timeout: Duration) async throws(NNGError) -> [UInt8] {
        if Task.isCancelled { throw NNGError(.nngCanceled, "request of \(bytes.count) bytes") }
        let ctx = try checkOut()
        let op: AsyncRequest
        do {
            op = try AsyncRequest(context: ctx, requestSize: bytes.count, timeout: timeout)
        } catch {
            checkIn(ctx, reusable: true)
            throw error
        }
        let msg: OpaquePointer
        do {
            msg = try makeMessage(bytes)
        } catch {
            op.free()
            checkIn(ctx, reusable: true)
            throw error
        }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                op.start(message: msg, continuation: continuation)
            }
        } onCancel: {
            op.cancel()
        }
        op.free()
        switch result {
        case .success:
            checkIn(ctx, reusable: true)
        case .failure(let error):
            checkIn(ctx, reusable: error.code == .timedOut || error.code == .canceled)
        }
        return try result.get()
    }

    /// Closes every context (in-flight requests throw `.closed`), waits briefly for
    /// them to return, then closes the socket. Idempotent. Returns false if
    /// `nng_close` stalled (see `NNGSocket.close(timeout:)`).
    @discardableResult
    public func close() -> Bool {
        let contexts: [UInt32]? = pool.withLock { pool in
            if pool.closed { return nil }
            pool.closed = true
            let all = pool.idle + Array(pool.active)
            pool.idle = []
            pool.active = []
            return all
        }
        guard let contexts else { return true }
        for ctx in contexts { _ = nng_ctx_close(nng_ctx(id: ctx)) }
        // Let aborted calls unwind before the socket goes (orderly close, nng issue 1543).
        let giveUp = ContinuousClock.now + .seconds(2)
        while pool.withLock({ $0.inFlight }) > 0 && ContinuousClock.now < giveUp {
            usleep(1_000)
        }
        return socket.close()
    }

    // MARK: Context pool

    private func checkOut() throws(NNGError) -> UInt32 {
        let pooled: UInt32?? = pool.withLock { pool in
            if pool.closed { return .none }
            pool.inFlight += 1
            guard let ctx = pool.idle.popLast() else { return .some(nil) }
            pool.active.insert(ctx)
            return .some(ctx)
        }
        guard let pooled else { throw NNGError.closed("request on a closed requester") }
        if let ctx = pooled { return ctx }

        var ctx = nng_ctx()
        let rv = nng_ctx_open(&ctx, socket.raw)
        if rv != 0 {
            pool.withLock { $0.inFlight -= 1 }
            throw NNGError(rv, "open a request context")
        }
        let accepted = pool.withLock { pool in
            if pool.closed { pool.inFlight -= 1; return false }
            pool.active.insert(ctx.id)
            return true
        }
        guard accepted else {
            _ = nng_ctx_close(ctx)
            throw NNGError.closed("request on a closed requester")
        }
        return ctx.id
    }

    private func checkIn(_ ctx: UInt32, reusable: Bool) {
        let closeIt = pool.withLock { pool -> Bool in
            pool.inFlight -= 1
            // If close() already took the context, it also closed it.
            guard pool.active.remove(ctx) != nil else { return false }
            if reusable && !pool.closed && pool.idle.count < Self.maxIdleContexts {
                pool.idle.append(ctx)
                return false
            }
            return true
        }
        if closeIt { _ = nng_ctx_close(nng_ctx(id: ctx)) }
    }

    private func makeMessage(_ bytes: [UInt8]) throws(NNGError) -> OpaquePointer {
        var msg: OpaquePointer? = nil
        try nngCheck(nng_msg_alloc(&msg, bytes.count), "allocate a \(bytes.count)-byte request")
        if !bytes.isEmpty {
            bytes.withUnsafeBytes { _ = memcpy(nng_msg_body(msg), $0.baseAddress!, $0.count) }
        }
        return msg!
    }
}

/// Copies a message body into an array and frees the message.
func nngTakeBody(_ msg: OpaquePointer?) -> [UInt8] {
    guard let msg else { return [] }
    defer { nng_msg_free(msg) }
    return [UInt8](UnsafeRawBufferPointer(start: nng_msg_body(msg), count: nng_msg_len(msg)))
}

/// One asynchronous request on one context, driven by an nng aio callback.
///
/// `@unchecked Sendable` because it holds the `nng_aio` pointer. Safety:
/// - the aio is freed once, by `free()`, under `live`; `cancel()` touches it only under
///   `live`, so never after it is freed;
/// - the callback never takes `live`, so `nng_aio_free` (which waits for a running
///   callback) cannot deadlock with it; it takes only `state`, which no one holds while
///   calling into nng;
/// - the owner keeps the object alive until `free()` returns, so the unretained pointer
///   the callback gets is always valid, and the callback never frees the aio itself
///   (freeing an aio from its own callback deadlocks).
private final class AsyncRequest: @unchecked Sendable {
    typealias Continuation = CheckedContinuation<Result<[UInt8], NNGError>, Never>

    private enum Phase { case idle, sending, receiving, done }
    private struct State {
        var phase = Phase.idle
        var cancelled = false
        var continuation: Continuation?
    }

    private let context: UInt32
    private let requestSize: Int
    private let timeout: Duration
    private let deadline: ContinuousClock.Instant
    private var aio: OpaquePointer?
    private let live = Mutex(false)
    private let state = Mutex(State())

    init(context: UInt32, requestSize: Int, timeout: Duration) throws(NNGError) {
        self.context = context
        self.requestSize = requestSize
        self.timeout = timeout
        self.deadline = ContinuousClock.now + timeout
        let rv = nng_aio_alloc(&aio, { arg in
            Unmanaged<AsyncRequest>.fromOpaque(arg!).takeUnretainedValue().completed()
        }, Unmanaged.passUnretained(self).toOpaque())
        try nngCheck(rv, "allocate request aio")
        live.withLock { $0 = true }
    }

    func start(message: OpaquePointer, continuation: Continuation) {
        let go = state.withLock { state -> Bool in
            state.continuation = continuation
            if state.cancelled { return false }
            state.phase = .sending
            return true
        }
        guard go else {
            nng_msg_free(message)
            finish(.failure(NNGError(.nngCanceled, "request of \(requestSize) bytes")))
            return
        }
        nng_aio_set_msg(aio, message)
        nng_aio_set_timeout(aio, nngMilliseconds(timeout))
        nng_ctx_send(nng_ctx(id: context), aio)
        cancelIfAsked()
    }

    /// A `cancel()` that ran just before an operation started found nothing to cancel;
    /// checking the flag after starting closes that window.
    private func cancelIfAsked() {
        if state.withLock({ $0.cancelled }) { nng_aio_cancel(aio) }
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
        live.withLock { alive in
            if alive { nng_aio_cancel(aio) }
        }
    }

    func free() {
        live.withLock { alive in
            if alive { nng_aio_free(aio) }
            alive = false
        }
    }

    /// Runs on an nng thread when the send or the receive finishes.
    private func completed() {
        let rv = nng_aio_result(aio)
        switch state.withLock({ $0.phase }) {
        case .sending:
            if rv != 0 {
                nng_msg_free(nng_aio_get_msg(aio))
                finish(.failure(NNGError(rv, "send request of \(requestSize) bytes")))
                return
            }
            let go = state.withLock { state -> Bool in
                if state.cancelled { return false }
                state.phase = .receiving
                return true
            }
            guard go else {
                finish(.failure(NNGError(.nngCanceled, "request of \(requestSize) bytes")))
                return
            }
            nng_aio_set_timeout(aio, nngMilliseconds(deadline - ContinuousClock.now))
            nng_ctx_recv(nng_ctx(id: context), aio)
            cancelIfAsked()
        case .receiving:
            if rv != 0 {
                finish(.failure(NNGError(rv, "wait \(timeout) for the reply to a \(requestSize)-byte request")))
            } else {
                finish(.success(nngTakeBody(nng_aio_get_msg(aio))))
            }
        case .idle, .done:
            return
        }
    }

    private func finish(_ result: Result<[UInt8], NNGError>) {
        let continuation = state.withLock { state -> Continuation? in
            state.phase = .done
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: result)
    }
}
