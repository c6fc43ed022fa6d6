import HomeroomCore

/// The workload's compare-and-set contention: racers (teaching assistants, each attached
/// first to another of the room's owners) write the key `cas` at the same instants, each
/// at the revision its own replica shows, so they race on one expected revision. At one
/// node the first wins and the others are refused `revision-mismatch` (stale); writes
/// that reach two nodes before either has heard of the other, as across a partition,
/// are both accepted: a split (docs/MESSAGING.md, "What a conditional write guarantees").
enum CompareAndSetRace {
    /// Rounds begin on multiples of this on the harness clock: the same instants for
    /// every racer, and long enough for a connected cluster to settle in between.
    static let periodMillis: UInt64 = 600
    /// Racers are assistants: moderators (room properties need one) that do nothing else.
    static let role = Role.assistant
    /// A racer a failover or a redirect moved to another node goes back to its own this
    /// often (a new client), so the racers stay on different owners.
    static let returnHomeMillis: UInt64 = 8_000

    static func racerNames(_ count: Int) -> [UserID] { count > 0 ? (1...count).map { "a\($0)" } : [] }

    /// How long until the next round begins.
    static func millisToNextRound(now: UInt64) -> UInt64 { periodMillis - now % periodMillis }

    /// A racer's write: its unique value, conditional on the revision its replica shows now.
    static func operation(racer: UserID, sequence: Int, expected: UInt64) -> Operation {
        .setRoomProperty(key: WorkloadPlan.compareAndSetKey, value: Array("\(racer).\(sequence)".utf8), cause: "chaos-race",
                         revision: PropertyRevision(condition: expected))
    }
}
