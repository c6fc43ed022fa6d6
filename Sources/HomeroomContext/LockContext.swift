import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Signaling's locks, with fencing (docs/MESSAGING.md, "Locks"): at most 32 per room,
/// each held by one user, with a TTL of 10 to 300 s that it outlives its holder's
/// presence by. Every grant has a fence: pass `LockGrantInfo.fence` to the property
/// writes the lock guards, and a holder that lost the lock (even unknowingly, during
/// a partition) cannot overwrite what its successor wrote.
public final class LockContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any LockHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any LockHandler) { session.unregister(handler) }

    /// Takes the lock, or renews it if the local user holds it (same fence). Refused
    /// `lock-held` while someone else holds it; with `waitMillis`, retried until it is
    /// free or the wait is over.
    @discardableResult
    public func acquire(_ name: String, ttlSeconds: UInt32 = Locks.defaultTTLSeconds, waitMillis: UInt64 = 0) throws(ContextError) -> LockGrantInfo {
        try check(name)
        guard Locks.ttlRange.contains(ttlSeconds) else {
            throw .invalidArgument("a lock's TTL is \(Locks.ttlRange.lowerBound) to \(Locks.ttlRange.upperBound) s, not \(ttlSeconds)")
        }
        let client = try session.client()
        do {
            let grant = try client.acquireLock(name, ttlSeconds: ttlSeconds, waitMillis: waitMillis)
            session.waitUntilApplied(grant.dot, client)
            return LockGrantInfo(lock: name, fence: grant.fence, ttlSeconds: ttlSeconds)
        } catch { throw ContextError(error) }
    }

    /// Ends the local user's grant.
    public func release(_ name: String) throws(ContextError) {
        try check(name)
        let client = try session.client()
        do throws(ClientError) { session.waitUntilApplied(try client.releaseLock(name), client) } catch { throw ContextError(error) }
    }

    /// Ends whoever's grant (teacher, assistant).
    public func revoke(_ name: String) throws(ContextError) {
        try check(name)
        let client = try session.client()
        do throws(ClientError) { session.waitUntilApplied(try client.revokeLock(name), client) } catch { throw ContextError(error) }
    }

    /// Every lock of the room, now, by name.
    public var locks: [LockStatus] { session.replica.lockStatuses(atMillis: WallClock.nowMillis()) }

    /// One lock, now (nil: the room has no lock of that name).
    public func lock(_ name: String) -> LockStatus? { session.replica.lockStatus(name, atMillis: WallClock.nowMillis()) }

    private func check(_ name: String) throws(ContextError) {
        guard !name.isEmpty, name.utf8.count <= Locks.maxNameBytes else {
            throw .invalidArgument("a lock name is 1 to \(Locks.maxNameBytes) bytes")
        }
    }
}

/// A grant the local user holds.
public struct LockGrantInfo: Hashable, Sendable {
    public var lock: String
    public var fence: UInt64
    public var ttlSeconds: UInt32
    /// What guarded writes present.
    public var lockFence: LockFence { LockFence(lock: lock, fence: fence) }
}
