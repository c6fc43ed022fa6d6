import Dispatch
import Synchronization

/// One gate per room that has a write in flight: a write holds its room's gate from the
/// engine's decision to its commit, and leaves the state lock while the store takes it,
/// so rooms do not wait for each other's store commits. Whatever reads a room's log
/// position together with its state (a compaction) or removes the room (a handoff)
/// holds the gate too, so it never sees a write stored but not yet applied.
///
/// Waiters are served in order of arrival, except that an urgent one (a teacher's
/// control: the teacher lane) goes ahead of every ordinary one waiting: in a hall that
/// floods its room with chat, a "mute all" waits for the write holding the gate, not
/// for every message queued behind it.
///
/// Lock order: `compacting`, then a room gate, then the state lock, then the store's.
/// Never two gates at once. A gate lives only while someone holds or waits for it, so
/// the table holds at most one entry per thread.
final class RoomWriteGates: Sendable {
    private final class Gate: Sendable {
        private struct Line {
            var held = false
            var urgent: [DispatchSemaphore] = []
            var ordinary: [DispatchSemaphore] = []
        }
        private let line = Mutex(Line())

        /// Waits for the gate; returns holding it.
        func enter(urgent: Bool) {
            let wake = line.withLock { line -> DispatchSemaphore? in
                if !line.held {
                    line.held = true
                    return nil
                }
                let wake = DispatchSemaphore(value: 0)
                if urgent { line.urgent.append(wake) } else { line.ordinary.append(wake) }
                return wake
            }
            // Handed over by `leave`, which keeps `held` set for this waiter.
            wake?.wait()
        }

        /// Callers queued for the gate (not the holder): for tests.
        var queued: Int { line.withLock { $0.urgent.count + $0.ordinary.count } }

        /// Hands the gate to the next waiter (urgent first), or opens it; true when an
        /// urgent waiter went ahead of ordinary ones.
        @discardableResult
        func leave() -> Bool {
            var overtook = false
            let next = line.withLock { line -> DispatchSemaphore? in
                if !line.urgent.isEmpty {
                    overtook = !line.ordinary.isEmpty
                    return line.urgent.removeFirst()
                }
                if !line.ordinary.isEmpty { return line.ordinary.removeFirst() }
                line.held = false
                return nil
            }
            next?.signal()
            return overtook
        }
    }

    private struct Entry {
        let gate: Gate
        var holders: Int
    }

    private let table = Mutex<[String: Entry]>([:])
    /// Urgent writers that went ahead of ordinary ones waiting at a gate (the teacher lane at work).
    let overtakes = Atomic<Int>(0)

    /// Runs `body` holding `room`'s gate; an `urgent` caller goes ahead of the ordinary ones waiting.
    func withGate<Value: Sendable>(_ room: String, urgent: Bool = false, _ body: () -> Value) -> Value {
        let gate = table.withLock { table -> Gate in
            if var entry = table[room] {
                entry.holders += 1
                table[room] = entry
                return entry.gate
            }
            let gate = Gate()
            table[room] = Entry(gate: gate, holders: 1)
            return gate
        }
        defer {
            table.withLock { table in
                guard var entry = table[room] else { return }
                entry.holders -= 1
                table[room] = entry.holders == 0 ? nil : entry
            }
        }
        gate.enter(urgent: urgent)
        defer { if gate.leave() { overtakes.add(1, ordering: .relaxed) } }
        return body()
    }

    /// Callers holding or waiting for `room`'s gate: for tests.
    func holders(of room: String) -> Int { table.withLock { $0[room]?.holders ?? 0 } }

    /// Callers queued at `room`'s gate, behind its holder: for tests.
    func queued(at room: String) -> Int { table.withLock { $0[room]?.gate }?.queued ?? 0 }

    /// Rooms with a gate now (held or waited for): for tests.
    var count: Int { table.withLock { $0.count } }
}
