import Synchronization

/// One gate per room that has a write in flight: a write holds its room's gate from the
/// engine's decision to its commit, and leaves the state lock while the store takes it,
/// so rooms do not wait for each other's store commits. Whatever reads a room's log
/// position together with its state (a compaction) or removes the room (a handoff)
/// holds the gate too, so it never sees a write stored but not yet applied.
///
/// Lock order: `compacting`, then a room gate, then the state lock, then the store's.
/// Never two gates at once. A gate lives only while someone holds or waits for it, so
/// the table holds at most one entry per thread.
final class RoomWriteGates: Sendable {
    private final class Gate: Sendable {
        let lock = Mutex<Void>(())
    }

    private struct Entry {
        let gate: Gate
        var holders: Int
    }

    private let table = Mutex<[String: Entry]>([:])

    /// Runs `body` holding `room`'s gate.
    func withGate<Value: Sendable>(_ room: String, _ body: () -> Value) -> Value {
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
        return gate.lock.withLock { _ in body() }
    }

    /// Rooms with a gate now (held or waited for): for tests.
    var count: Int { table.withLock { $0.count } }
}
