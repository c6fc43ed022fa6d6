/// The clock of one sequencing replica. Pure: the caller passes the wall time in.
///
/// A remote reading more than `maxForwardDriftMillis` ahead of local time is
/// *rejected*, never clamped: clamping would give replicas different values for
/// the same delta. A rejected delta is not recorded as seen, so anti-entropy offers
/// it again and it is accepted once local time has caught up. No skewed clock
/// can therefore pin a last-writer-wins value for longer than the limit.
public struct HybridClock: Sendable, Equatable {
    public let replica: ReplicaID
    public let maxForwardDriftMillis: UInt64
    public private(set) var last: UInt64 = 0

    public static let defaultMaxForwardDriftMillis: UInt64 = 60_000

    public init(replica: ReplicaID, maxForwardDriftMillis: UInt64 = HybridClock.defaultMaxForwardDriftMillis) {
        self.replica = replica
        self.maxForwardDriftMillis = maxForwardDriftMillis
    }

    /// A new reading for a local event, strictly greater than every earlier one.
    public mutating func tick(nowMillis: UInt64) -> HybridTimestamp {
        let physical = nowMillis << HybridTimestamp.logicalBits
        last = physical > last ? physical : last &+ 1
        return HybridTimestamp(packed: last, replica: replica)
    }

    /// Whether a remote reading is close enough to local time to be accepted.
    public func admits(_ remote: HybridTimestamp, nowMillis: UInt64) -> Bool {
        remote.millis <= nowMillis &+ maxForwardDriftMillis
    }

    /// Moves the clock past an accepted remote reading, so local writes that follow
    /// are ordered after what this replica has seen.
    public mutating func observe(_ remote: HybridTimestamp, nowMillis: UInt64) throws(ClockError) {
        guard admits(remote, nowMillis: nowMillis) else {
            throw ClockError.aheadOfLocalTime(remoteMillis: remote.millis, localMillis: nowMillis, limitMillis: maxForwardDriftMillis)
        }
        if remote.packed > last { last = remote.packed }
    }

    /// Restores the clock after a restart so it never runs backwards.
    public mutating func restore(atLeast packed: UInt64) {
        if packed > last { last = packed }
    }
}

public enum ClockError: Error, Equatable, Sendable, CustomStringConvertible {
    case aheadOfLocalTime(remoteMillis: UInt64, localMillis: UInt64, limitMillis: UInt64)

    public var description: String {
        switch self {
        case let .aheadOfLocalTime(remote, local, limit):
            return "a remote clock is \(remote &- local) ms ahead of local time (limit \(limit) ms); the delta is refused until local time catches up — check NTP on the sending node"
        }
    }
}
