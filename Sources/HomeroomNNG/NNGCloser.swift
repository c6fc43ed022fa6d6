@preconcurrency import Glibc
import CNNG
import HomeroomNode
import Synchronization

/// Runs `nng_close` on a helper thread and waits for it for a bounded time, because
/// nng 1.5.2 can hang in `nng_close` forever (see `NNGSocket.close(timeout:)`).
enum NNGCloser {
    /// Closes still stuck after their timeout.
    static let stalled = Atomic<Int>(0)

    /// Once one close is stuck, the nng reaper is stuck and every later close will be
    /// too, so those get only this long.
    static let timeoutWhileStalled: Duration = .milliseconds(100)

    private final class Attempt: Sendable {
        struct State { var done = false; var abandoned = false }
        let state = Mutex(State())
    }

    /// Returns true when `nng_close` returned within `timeout`.
    static func close(_ socket: nng_socket, timeout: Duration) -> Bool {
        run(timeout: timeout) { _ = nng_close(socket) }
    }

    /// Closes one dialer and its connection: the same hazard as a socket (its pipe is
    /// reaped the same way), so the same bound.
    static func close(_ dialer: nng_dialer, timeout: Duration) -> Bool {
        run(timeout: timeout) { _ = nng_dialer_close(dialer) }
    }

    /// Runs one closing call on a helper thread; true when it returned within `timeout`.
    private static func run(timeout: Duration, _ closing: @escaping @Sendable () -> Void) -> Bool {
        let attempt = Attempt()
        let closer: OSThread
        do {
            closer = try OSThread(name: "hr-close") {
                closing()
                attempt.state.withLock { state in
                    state.done = true
                    if state.abandoned { NNGCloser.stalled.subtract(1, ordering: .relaxed) }
                }
            }
        } catch {
            // No thread to spare: close inline and hope.
            closing()
            return true
        }
        let limit = stalled.load(ordering: .relaxed) > 0 ? min(timeout, timeoutWhileStalled) : timeout
        let deadline = ContinuousClock.now + limit
        var pause: UInt32 = 20
        while ContinuousClock.now < deadline {
            if attempt.state.withLock({ $0.done }) {
                closer.join()
                return true
            }
            usleep(pause)
            pause = min(pause * 2, 5_000)
        }
        let finished = attempt.state.withLock { state -> Bool in
            if state.done { return true }
            state.abandoned = true
            NNGCloser.stalled.add(1, ordering: .relaxed)
            return false
        }
        if finished { closer.join() }
        return finished
    }
}
