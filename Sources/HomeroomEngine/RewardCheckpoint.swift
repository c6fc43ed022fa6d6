import HomeroomCore

/// What a node needs to fold rewards exactly (docs/ARCHITECTURE.md, "Lifetime"): for
/// each peer and room, a heartbeat the peer sent at a known time (its clock) and the
/// peer's own sequence in the room then. Once this node has seen the peer's writes up
/// to that sequence, it holds every reward the peer admitted before that time, and so
/// every copy the peer will ever make of a reward issued a reward window earlier.
public struct RewardCheckpoint: Equatable, Sendable {
    public struct Mark: Equatable, Sendable {
        public var sentAtMillis: UInt64
        public var sequence: UInt64

        public init(sentAtMillis: UInt64, sequence: UInt64) {
            self.sentAtMillis = sentAtMillis
            self.sequence = sequence
        }
    }
    /// The newest heartbeat whose writes this node has all seen.
    public var confirmed: Mark?
    /// A later heartbeat, waiting for its writes to arrive.
    public var pending: Mark?

    public init() {}

    /// Notes a heartbeat; the first one since the last confirmation waits for its writes.
    public mutating func heard(_ mark: Mark) {
        if pending == nil { pending = mark }
    }

    /// Confirms the pending heartbeat once this node has the peer's writes up to it.
    public mutating func confirm(seen: UInt64) {
        guard let waiting = pending, seen >= waiting.sequence else { return }
        confirmed = waiting
        pending = nil
    }

    /// The time before which this peer made every copy of a reward it will ever make, given
    /// what this node has seen of its writes (`seen`, contiguous), or nil while no heartbeat
    /// of it is confirmed.
    public mutating func completeBefore(seen: UInt64, windowMillis: UInt64) -> UInt64? {
        confirm(seen: seen)
        guard let confirmed, confirmed.sentAtMillis > windowMillis else { return nil }
        return confirmed.sentAtMillis - windowMillis
    }
}
