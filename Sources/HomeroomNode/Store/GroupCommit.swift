import Dispatch
import Synchronization

/// Group commit: writers that arrive while another one is committing wait, and the next
/// of them commits everything waiting in one transaction (one fsync with `--sync full`),
/// so writers in different rooms share a commit instead of queueing for one each.
/// Every writer returns only once its own entry is committed, or with the error that kept
/// it out (`commit` says per entry: a batch that fails as a whole is tried entry by entry).
///
/// A batch holds at most one entry per waiting thread.
final class GroupCommit<Entry: Sendable>: Sendable {
    private final class Ticket: Sendable {
        let entry: Entry
        let wake = DispatchSemaphore(value: 0)
        /// Set before `wake` by the writer that committed this ticket's batch; still nil
        /// when `wake` comes: this writer commits the next batch.
        let outcome = Mutex<Result<Void, StoreError>?>(nil)

        init(_ entry: Entry) { self.entry = entry }
    }

    private struct Queue {
        var waiting: [Ticket] = []
        var committing = false
    }

    private let queue = Mutex(Queue())

    /// Batches committed and entries in them, for the metrics.
    let batches = Atomic<UInt64>(0)
    let entries = Atomic<UInt64>(0)

    /// Commits `entry`, alone or with others; `commit` stores a batch and says, per entry
    /// in order, whether it is stored.
    func submit(_ entry: Entry, commit: ([Entry]) -> [Result<Void, StoreError>]) throws(StoreError) {
        let ticket = Ticket(entry)
        let leads = queue.withLock { queue -> Bool in
            queue.waiting.append(ticket)
            if queue.committing { return false }
            queue.committing = true
            return true
        }
        if !leads {
            ticket.wake.wait()
            if let outcome = ticket.outcome.withLock({ $0 }) { return try outcome.get() }
        }
        // This writer commits: everything waiting now, its own entry among it.
        let batch = queue.withLock { queue -> [Ticket] in
            defer { queue.waiting.removeAll(keepingCapacity: true) }
            return queue.waiting
        }
        let outcomes = commit(batch.map(\.entry))
        precondition(outcomes.count == batch.count, "a group commit must say what became of every entry")
        batches.add(1, ordering: .relaxed)
        entries.add(UInt64(batch.count), ordering: .relaxed)
        var outcome: Result<Void, StoreError> = .success(())
        for (other, result) in zip(batch, outcomes) {
            if other === ticket {
                outcome = result
                continue
            }
            other.outcome.withLock { $0 = result }
            other.wake.signal()
        }
        // Hand the next batch to the first writer that came meanwhile, or stop committing.
        let next = queue.withLock { queue -> Ticket? in
            if let first = queue.waiting.first { return first }
            queue.committing = false
            return nil
        }
        next?.wake.signal()
        try outcome.get()
    }
}
