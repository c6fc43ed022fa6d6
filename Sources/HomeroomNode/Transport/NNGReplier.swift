@preconcurrency import Glibc
import CNNG
import Synchronization

/// The server side of REQ/REP: worker threads, each with its own REP context, that
/// receive a request, call the handler and send back what it returns.
///
/// Stop it with `close()`: the workers' contexts are closed first (a blocked receive
/// ends with `.closed`), the threads are joined (a handler that is running finishes
/// first), and the socket is closed last, with nothing in flight, which keeps clear of
/// the nng 1.5.2 close deadlock (issue 1543).
public final class NNGReplier: Sendable {
    public let socket: NNGSocket

    private struct Workers {
        var closed = false
        var contexts: [UInt32] = []
        var threads: [NNGThread] = []
    }
    private let workers = Mutex(Workers())
    private let failures = NNGCounter()

    public init() throws(NNGError) {
        socket = try NNGSocket(.rep)
    }

    deinit { close() }

    /// Listens for requesters; returns the bound URL (`tcp://127.0.0.1:0` gets its port).
    @discardableResult
    public func listen(_ url: String) throws(NNGError) -> String {
        try socket.listen(url)
    }

    /// Dials a requester that listens; see `NNGSocket.dial`.
    public func dial(_ url: String, blocking: Bool = false) throws(NNGError) {
        try socket.dial(url, blocking: blocking)
    }

    /// How many replies could not be sent (the requester left or timed out first).
    public var failedReplies: Int { failures.value.load(ordering: .relaxed) }

    /// Starts `workers` threads that serve requests until `close()`. Requests are
    /// handled concurrently, so `handler` must be safe to call from several threads.
    /// May be called again to add workers.
    public func serve(workers count: Int = 2, handler: @escaping @Sendable ([UInt8]) -> [UInt8]) throws(NNGError) {
        precondition(count > 0, "serve needs at least one worker")
        for index in 0..<count {
            var ctx = nng_ctx()
            try nngCheck(nng_ctx_open(&ctx, socket.raw), "open reply context for worker \(index)")
            let id = ctx.id
            let accepted = workers.withLock { w -> Bool in
                if w.closed { return false }
                w.contexts.append(id)
                return true
            }
            guard accepted else {
                _ = nng_ctx_close(ctx)
                throw NNGError.closed("serve on a closed replier")
            }
            let failures = self.failures
            let thread = try NNGThread(name: "hr-rep-\(index)") {
                Self.work(context: id, handler: handler, failures: failures)
            }
            workers.withLock { $0.threads.append(thread) }
        }
    }

    /// Stops the workers and closes the socket. Idempotent; may be called from a
    /// handler. Returns false if `nng_close` stalled (see `NNGSocket.close(timeout:)`).
    @discardableResult
    public func close() -> Bool {
        let taken: ([UInt32], [NNGThread])? = workers.withLock { w in
            if w.closed { return nil }
            w.closed = true
            defer { w.contexts = []; w.threads = [] }
            return (w.contexts, w.threads)
        }
        guard let (contexts, threads) = taken else { return true }
        for ctx in contexts { _ = nng_ctx_close(nng_ctx(id: ctx)) }
        for thread in threads { thread.join() }
        return socket.close()
    }

    private static func work(context: UInt32, handler: @Sendable ([UInt8]) -> [UInt8], failures: NNGCounter) {
        let ctx = nng_ctx(id: context)
        var aio: OpaquePointer? = nil
        guard nng_aio_alloc(&aio, nil, nil) == 0 else {
            failures.value.add(1, ordering: .relaxed)
            return
        }
        defer { nng_aio_free(aio) }
        nng_aio_set_timeout(aio, NNG_DURATION_INFINITE)

        while true {
            nng_ctx_recv(ctx, aio)
            nng_aio_wait(aio)
            let rv = nng_aio_result(aio)
            if rv == .nngClosed { return }
            if rv != 0 {
                usleep(1_000) // unexpected; do not spin
                continue
            }
            guard let msg = nng_aio_get_msg(aio) else { continue }

            let request = [UInt8](UnsafeRawBufferPointer(start: nng_msg_body(msg), count: nng_msg_len(msg)))
            let reply = handler(request)

            nng_msg_clear(msg)
            let appended = reply.withUnsafeBytes { nng_msg_append(msg, $0.baseAddress, $0.count) }
            if appended != 0 {
                nng_msg_free(msg)
                failures.value.add(1, ordering: .relaxed)
                continue
            }
            nng_aio_set_msg(aio, msg)
            nng_ctx_send(ctx, aio)
            nng_aio_wait(aio)
            let sent = nng_aio_result(aio)
            if sent != 0 {
                nng_msg_free(nng_aio_get_msg(aio))
                if sent == .nngClosed { return }
                failures.value.add(1, ordering: .relaxed)
            }
        }
    }
}

/// A shared counter that threads can hold without holding its owner.
final class NNGCounter: Sendable {
    let value = Atomic<Int>(0)
}
