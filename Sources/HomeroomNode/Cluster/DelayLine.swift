import Synchronization
import HomeroomSupport

/// Holds cluster messages for a while before they are processed (the delay fault):
/// a sorted queue and one thread that releases what is due.
final class DelayLine: Sendable {
    private struct Held {
        var due: UInt64
        var order: UInt64
        var message: [UInt8]
    }

    private let queue = Mutex<(items: [Held], counter: UInt64, running: Bool)>(([], 0, false))
    private let thread = Mutex<NNGThread?>(nil)

    func start(_ release: @escaping @Sendable ([UInt8]) -> Void) {
        queue.withLock { $0.running = true }
        let started = try? NNGThread(name: "hr-delay") { [weak self] in
            while let self, self.queue.withLock({ $0.running }) {
                let now = WallClock.monotonicMillis()
                let due = self.queue.withLock { state -> [[UInt8]] in
                    let ready = state.items.prefix { $0.due <= now }
                    state.items.removeFirst(ready.count)
                    return ready.map(\.message)
                }
                for message in due { release(message) }
                NNGSleep.milliseconds(1)
            }
        }
        thread.withLock { $0 = started }
    }

    func hold(_ message: [UInt8], forMillis delay: Int) {
        let due = WallClock.monotonicMillis() + UInt64(delay)
        queue.withLock { state in
            state.counter += 1
            let held = Held(due: due, order: state.counter, message: message)
            let index = state.items.firstIndex { ($0.due, $0.order) > (held.due, held.order) } ?? state.items.count
            state.items.insert(held, at: index)
        }
    }

    func stop() {
        queue.withLock { $0.running = false }
        thread.withLock { $0 }?.join()
    }
}
