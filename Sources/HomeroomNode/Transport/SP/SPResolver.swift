import Dispatch
import Synchronization

/// Host name lookups for dials, off the event loops: `getaddrinfo` blocks for as long as
/// the system's resolver takes (seconds, when a DNS server is slow or gone), and a loop
/// blocked that long stops serving every other connection.
///
/// Bounded: `threads` lookups run at once, on threads of their own started on first use;
/// at most `maxWaiting` wait, and one more fails at once ("too many lookups waiting").
/// A lookup whose dialer went away (`Ticket.cancel`) is skipped when its turn comes.
enum SPResolver {
    static let threads = 4
    static let maxWaiting = 256

    /// Cancels a lookup that has not started yet.
    final class Ticket: Sendable {
        private let cancelled = Atomic<Bool>(false)
        func cancel() { cancelled.store(true, ordering: .releasing) }
        var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
    }

    private struct Job: Sendable {
        let address: SPAddress
        let ticket: Ticket
        let done: @Sendable (Result<[SPSocketAddress], TransportError>) -> Void
    }

    private struct Queue {
        var waiting: [Job] = []
        var started = 0
    }

    private static let queue = Mutex(Queue())
    private static let ready = DispatchSemaphore(value: 0)

    /// Looks `address` up on a resolver thread and calls `done` there (not at all once
    /// the ticket is cancelled before the lookup starts).
    static func lookUp(_ address: SPAddress, done: @escaping @Sendable (Result<[SPSocketAddress], TransportError>) -> Void) -> Ticket {
        let ticket = Ticket()
        let (accepted, startThread) = queue.withLock { q -> (Bool, Bool) in
            guard q.waiting.count < maxWaiting else { return (false, false) }
            q.waiting.append(Job(address: address, ticket: ticket, done: done))
            let start = q.started < threads
            if start { q.started += 1 }
            return (true, start)
        }
        guard accepted else {
            done(.failure(TransportError(.other, "resolve \(address.url)", reason: "too many lookups waiting (\(maxWaiting)): the system's resolver is slow")))
            return ticket
        }
        if startThread {
            do {
                _ = try OSThread(name: "hr-resolve") { serve() }
            } catch {
                // No thread to run them: with none at all, what waits fails now.
                let stranded = queue.withLock { q -> [Job] in
                    q.started -= 1
                    guard q.started == 0 else { return [] }
                    defer { q.waiting.removeAll() }
                    return q.waiting
                }
                for job in stranded { job.done(.failure(TransportError(.other, "resolve \(job.address.url)", reason: error.description))) }
                return ticket
            }
        }
        ready.signal()
        return ticket
    }

    /// A resolver thread: lookups in arrival order, for the life of the process.
    private static func serve() {
        while true {
            ready.wait()
            guard let job = queue.withLock({ q -> Job? in q.waiting.isEmpty ? nil : q.waiting.removeFirst() }) else { continue }
            if job.ticket.isCancelled { continue }
            do throws(TransportError) {
                job.done(.success(try job.address.resolve(passive: false)))
            } catch {
                job.done(.failure(error))
            }
        }
    }
}
