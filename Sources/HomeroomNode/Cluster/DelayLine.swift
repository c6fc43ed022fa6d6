import Synchronization
import HomeroomSupport

/// Holds cluster messages for a while before they are processed (the delay fault):
/// a sorted queue and one thread that releases what is due. The thread runs only while
/// messages are held (and a second after): a node without the fault, nearly every node,
/// pays nothing for it (it used to wake every millisecond for good).
final class DelayLine: Sendable {
    private struct Held {
        var due: UInt64
        var order: UInt64
        var message: [UInt8]
    }

    private struct State {
        var items: [Held] = []
        var counter: UInt64 = 0
        var running = false
        /// A release thread is running (or starting).
        var releasing = false
        var release: (@Sendable ([UInt8]) -> Void)?
    }

    private let queue = Mutex<State>(State())
    private let thread = Mutex<OSThread?>(nil)
    /// How long the release thread stays once the queue is empty.
    static let lingerMillis: UInt64 = 1_000

    func start(_ release: @escaping @Sendable ([UInt8]) -> Void) {
        queue.withLock { state in
            state.running = true
            state.release = release
        }
    }

    func hold(_ message: [UInt8], forMillis delay: Int) {
        let due = WallClock.monotonicMillis() + UInt64(delay)
        let startThread = queue.withLock { state -> Bool in
            state.counter += 1
            let held = Held(due: due, order: state.counter, message: message)
            let index = state.items.firstIndex { ($0.due, $0.order) > (held.due, held.order) } ?? state.items.count
            state.items.insert(held, at: index)
            guard state.running, !state.releasing else { return false }
            state.releasing = true
            return true
        }
        if startThread { startReleasing() }
    }

    /// Not under `queue`: the previous thread (finished, or about to) is joined here. The
    /// new one is made and stored under `thread`, after a look at `running`, so `stop()`
    /// (which clears `running`, then takes `thread`) joins every thread ever started.
    private func startReleasing() {
        let previous = thread.withLock { slot -> OSThread? in
            guard queue.withLock({ $0.running }) else {
                queue.withLock { $0.releasing = false }
                return nil
            }
            guard let started = try? OSThread(name: "hr-delay", { [weak self] in self?.releaseUntilIdle() }) else {
                // No thread: the next message held tries again.
                queue.withLock { $0.releasing = false }
                return nil
            }
            let previous = slot
            slot = started
            return previous
        }
        previous?.join()
    }

    private func releaseUntilIdle() {
        var emptySince: UInt64?
        while true {
            let now = WallClock.monotonicMillis()
            let (due, release, done) = queue.withLock { state -> ([[UInt8]], (@Sendable ([UInt8]) -> Void)?, Bool) in
                guard state.running else {
                    state.releasing = false
                    return ([], nil, true)
                }
                let ready = state.items.prefix { $0.due <= now }
                state.items.removeFirst(ready.count)
                if !state.items.isEmpty || !ready.isEmpty {
                    emptySince = nil
                } else if let since = emptySince, now &- since >= Self.lingerMillis {
                    state.releasing = false
                    return ([], nil, true)
                } else if emptySince == nil {
                    emptySince = now
                }
                return (ready.map(\.message), state.release, false)
            }
            if done { return }
            for message in due { release?(message) }
            Sleep.milliseconds(1)
        }
    }

    /// Whether a release thread runs now.
    var isReleasing: Bool { queue.withLock { $0.releasing } }

    func stop() {
        queue.withLock { $0.running = false }
        thread.withLock { $0 }?.join()
    }
}
