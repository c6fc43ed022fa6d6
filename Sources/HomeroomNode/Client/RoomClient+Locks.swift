import HomeroomCore
import HomeroomSupport

/// A lock this client was granted (docs/MESSAGING.md, "Locks").
public struct LockGrantResult: Hashable, Sendable {
    public var lock: String
    /// Present it with every write the lock guards (`LockFence`).
    public var fence: UInt64
    public var ttlSeconds: UInt32
    public var dot: Dot

    public var lockFence: LockFence { LockFence(lock: lock, fence: fence) }
}

/// Signaling's locks for a `RoomClient`: acquire (at once, or waiting until free),
/// release, revoke, and the room's locks as this client sees them.
extension RoomClient {
    /// Takes `name` (or renews it, if this user holds it: the fence stays). Refused with
    /// `lock-held` while another user holds it; `waitMillis` > 0 retries until it is free
    /// or the wait is over (the last refusal is thrown).
    @discardableResult
    public func acquireLock(_ name: String, ttlSeconds: UInt32 = Locks.defaultTTLSeconds, waitMillis: UInt64 = 0) throws(ClientError) -> LockGrantResult {
        let (sum, overflow) = WallClock.monotonicMillis().addingReportingOverflow(waitMillis)
        let deadline = overflow ? UInt64.max : sum
        while true {
            do {
                let (ack, _) = try sendWrite(.acquireLock(name: name, ttlSeconds: ttlSeconds), retries: 3)
                return LockGrantResult(lock: name, fence: ack.fence, ttlSeconds: ttlSeconds, dot: ack.dot ?? Dot(origin: ReplicaID(0), sequence: 0))
            } catch {
                guard case let .refused(code, _) = error, code == "lock-held", WallClock.monotonicMillis() < deadline else { throw error }
                // A release reaches this client's replica within the cluster's convergence; poll gently.
                Sleep.milliseconds(min(200, max(1, deadline &- WallClock.monotonicMillis())))
            }
        }
    }

    /// Ends this user's grant of `name`.
    /// The grant it ends is the one this client's replica shows now, so a retry after a
    /// lost acknowledgement never ends a later grant (it is refused `fence-stale`).
    @discardableResult
    public func releaseLock(_ name: String) throws(ClientError) -> Dot {
        try sendWrite(.releaseLock(name: name, fence: currentFence(name), revoke: false), retries: 3).ack.dot ?? Dot(origin: ReplicaID(0), sequence: 0)
    }

    /// A teacher or an assistant ends whoever's grant of `name`.
    @discardableResult
    public func revokeLock(_ name: String) throws(ClientError) -> Dot {
        try sendWrite(.releaseLock(name: name, fence: currentFence(name), revoke: true), retries: 3).ack.dot ?? Dot(origin: ReplicaID(0), sequence: 0)
    }

    /// The fence of the grant this client's replica shows for `name` (0: none known; the node fills it in).
    func currentFence(_ name: String) -> UInt64 {
        state.withLock { $0.replica.lockHolding(name, atMillis: WallClock.nowMillis())?.fence } ?? 0
    }

    /// The room's locks as this client's replica holds them now.
    public func locks() -> [LockStatus] {
        let now = WallClock.nowMillis()
        return replica.lockStatuses(atMillis: now)
    }
}
