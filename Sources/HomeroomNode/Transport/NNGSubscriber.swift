@preconcurrency import Glibc
import CNNG
import Synchronization

/// A receive loop on its own thread: takes a SUB socket (already subscribed, listening
/// or dialing as needed) and calls `handler` with each message until `close()`.
/// The subscriber owns the socket from then on and closes it when it stops.
///
/// Stopping is orderly, because nng 1.5.2 has two hazards here:
/// - `nng_close` can deadlock while messages are still arriving (nng issues 1543,
///   1813); `NNGSocket.close(timeout:)` bounds that wait;
/// - cancelling or timing out a SUB receive can crash in `sub0_ctx_cancel`
///   (nng issue 1523, also 1682).
/// So the loop waits with no timeout, and `close()` neither cancels its receive nor
/// closes the socket under it: it sets a flag and publishes a private wake-up
/// message on an inproc PUB that the SUB also dials. The loop sees the flag once its
/// receive returns, stops, and closes both sockets itself, with nothing in flight.
public final class NNGSubscriber: Sendable {
    public let socket: NNGSocket
    private let wakePub: NNGSocket
    private let wakeToken: [UInt8]
    private let thread: NNGThread
    private let stopping: NNGFlag
    private let received: NNGCounter
    private let stalls: NNGCounter

    /// Starts the loop. `onError` gets receive errors other than `.closed` (none are
    /// expected with an infinite timeout); the loop keeps going after them.
    public init(socket: NNGSocket,
                name: String = "hr-sub",
                onError: (@Sendable (NNGError) -> Void)? = nil,
                handler: @escaping @Sendable ([UInt8]) -> Void) throws(NNGError) {
        guard socket.kind == .sub else {
            throw NNGError(Int32(bitPattern: NNG_ENOTSUP.rawValue), "run a subscriber loop on a \(socket.kind.rawValue) socket")
        }
        var token = Array("\u{0}homeroom-wake-".utf8)
        for _ in 0..<16 { token.append(UInt8.random(in: 0...255)) }
        let wakePub = try NNGSocket(.pub)
        do {
            let wakeURL = "inproc://homeroom-wake-\(UInt64.random(in: 0...UInt64.max))"
            try wakePub.listen(wakeURL)
            try socket.setReceiveTimeout(nil)
            try socket.subscribe(token)
            try socket.dial(wakeURL, blocking: true)
        } catch {
            wakePub.close()
            throw error
        }
        let wakeToken = token
        let stopping = NNGFlag()
        let received = NNGCounter()
        let stalls = NNGCounter()
        self.stalls = stalls
        self.socket = socket
        self.wakePub = wakePub
        self.wakeToken = wakeToken
        self.stopping = stopping
        self.received = received
        do {
            thread = try NNGThread(name: name) {
                defer {
                    if !socket.close() { stalls.value.add(1, ordering: .relaxed) }
                    if !wakePub.close() { stalls.value.add(1, ordering: .relaxed) }
                }
                while !stopping.isSet {
                    do throws(NNGError) {
                        let message = try socket.receive()
                        if stopping.isSet { return }
                        if message == wakeToken { continue }
                        received.value.add(1, ordering: .relaxed)
                        handler(message)
                    } catch {
                        if error.code == .closed || socket.isClosed { return }
                        onError?(error)
                        usleep(1_000) // do not spin on a persistent error
                    }
                }
            }
        } catch {
            wakePub.close()
            throw error
        }
    }

    deinit { close() }

    /// Messages handed to the handler so far.
    public var receivedCount: Int { received.value.load(ordering: .relaxed) }

    /// True until the loop has ended.
    public var isRunning: Bool { !thread.isFinished }

    /// Stops the loop and waits for it to end (a handler that is running finishes
    /// first); the loop closes the socket as it ends. Idempotent. Called from the
    /// handler, it only asks the loop to stop once the handler returns. Returns false
    /// if `nng_close` stalled (see `NNGSocket.close(timeout:)`).
    @discardableResult
    public func close() -> Bool {
        stopping.set()
        if thread.isCurrent { return true }
        // Wake the receive; PUB attaches the inproc pipe asynchronously and drops
        // when queues are full, so repeat until the loop is gone.
        let giveUp = ContinuousClock.now + .seconds(2)
        while !thread.isFinished && ContinuousClock.now < giveUp {
            try? wakePub.send(wakeToken)
            usleep(1_000)
        }
        if !thread.isFinished {
            // Last resort, with the risks described above.
            if !socket.close() { stalls.value.add(1, ordering: .relaxed) }
        }
        thread.join()
        return stalls.value.load(ordering: .relaxed) == 0
    }
}

/// A one-way flag that threads can share without sharing its owner.
final class NNGFlag: Sendable {
    private let value = Atomic<Bool>(false)
    var isSet: Bool { value.load(ordering: .acquiring) }
    func set() { value.store(true, ordering: .releasing) }
}
