import Dispatch
import HomeroomCore
import HomeroomWire
import Synchronization

/// Deltas waiting to be published, in the order they were sequenced or applied.
///
/// Writers enqueue under the node's lock (so per-origin order is kept) and return
/// at once; one publisher thread drains the queue. Under light load each delta
/// leaves alone, at once; under heavy load the deltas that piled up during one
/// send leave together as one batch, which is what lets the delivered delta rate
/// exceed nng's per-message rate.
final class Outbox: Sendable {
    struct Item {
        var room: String
        var deltas: [Delta]
        var toNodes: Bool
    }

    private let queue = Mutex<[Item]>([])
    private let wakeup = DispatchSemaphore(value: 0)
    static let maxBatch = 1_000

    func enqueue(room: String, deltas: [Delta], toNodes: Bool) {
        guard !deltas.isEmpty else { return }
        queue.withLock { $0.append(Item(room: room, deltas: deltas, toNodes: toNodes)) }
        wakeup.signal()
    }

    /// Waits up to `timeoutMillis` for work; returns everything queued, merged into batches.
    func take(timeoutMillis: Int) -> [Item] {
        _ = wakeup.wait(timeout: .now() + .milliseconds(timeoutMillis))
        let items = queue.withLock { queue -> [Item] in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        var batches: [Item] = []
        for item in items {
            if var last = batches.last, last.room == item.room, last.toNodes == item.toNodes,
               last.deltas[0].origin == item.deltas[0].origin, last.deltas.count + item.deltas.count <= Self.maxBatch {
                last.deltas += item.deltas
                batches[batches.count - 1] = last
            } else {
                batches.append(item)
            }
        }
        return batches
    }

    func wake() { wakeup.signal() }
}
