/// Signaling's locks, with fencing. A room has at most `Locks.maxPerRoom` lock names
/// for its life: a record is never removed (replicas would have to agree on when).
/// Since names are never freed, the origin shares them out: a student (any author
/// whose role does not moderate) adds a new name only while the room has fewer than
/// `maxPerRoom - reservedForModerators` names and fewer than `maxNamesPerUser` of its
/// records name that user as their grant's holder (the grant stays after a release).
/// Teachers, assistants and the node itself may fill every slot. Reusing a name is
/// never refused for these counts. Admissions at several nodes at once (or in flight
/// at one) may go past them; the merge takes every name, so replicas still agree.
///
/// Each grant carries a fencing number, larger than every earlier grant of that lock
/// on the replica that made it, and writes guarded by the lock present it
/// (`PropertyRevision.fence`): a property written under a fence loses to every write
/// with a larger one, on every replica, whatever their clocks say (`Register.precedes`).
///
/// A lock is held while its grant is not released or revoked, until `ttlSeconds` after
/// the grant (or its last renewal: acquiring a lock one holds renews it, keeping the
/// fence), and after that while the holder stays in the room through a session that
/// began before then: a holder that left comes back within the TTL to keep it, and a
/// lapse sticks.
public enum Locks {
    public static let maxPerRoom = 32
    /// The last names of a room, which only moderators may add: however students use
    /// theirs up, a teacher can still lock the exam.
    public static let reservedForModerators = 8
    /// Names whose grant a non-moderator may hold (held or released) before it must
    /// reuse one of them: one student cannot take the whole room's share.
    public static let maxNamesPerUser = 4
    public static let ttlRange: ClosedRange<UInt32> = 10...300
    public static let defaultTTLSeconds: UInt32 = 60
    public static let maxNameBytes = 64
    /// The low bits of a fence name the replica that granted it, so two grants made
    /// on both sides of a partition never share a fence.
    static let granterBits: UInt64 = 24
    /// No fence is above this (2^62): a peer's hostile fence cannot wrap the counter.
    public static let maxFence: UInt64 = 1 << 62

    /// The fence a new grant gets at `origin` after `highest` (the largest fence of
    /// the lock there, granted or ended).
    public static func nextFence(after highest: UInt64, origin: ReplicaID) -> UInt64 {
        let granter = origin.isStructured ? UInt64(origin.nameHash) : origin.rawValue & ((1 << granterBits) - 1)
        return ((highest >> granterBits) + 1) << granterBits | granter
    }
}

/// One grant of a lock: who holds it, its fence, and how long it outlives its holder's presence.
public struct LockGrant: Hashable, Sendable {
    public var holder: UserID
    public var fence: UInt64
    public var ttlSeconds: UInt32

    public init(holder: UserID, fence: UInt64, ttlSeconds: UInt32) {
        self.holder = holder
        self.fence = fence
        self.ttlSeconds = ttlSeconds
    }
}

/// One lock name's replicated state: the grant with the largest fence (then the latest
/// stamp: a renewal), and the largest fence released or revoked. Both merge by max, so
/// replicas that saw the same writes agree whatever the order.
public struct LockRecord: Hashable, Sendable {
    public var grant: LockGrant?
    /// The stamp of the grant's latest write (acquire or renewal); its clock starts the TTL.
    public var grantStamp: Stamp = .origin
    /// Every grant with a fence up to this one is over.
    public var endedFence: UInt64 = 0
    /// The stamp of the write that ended the grant with `endedFence`.
    public var endedStamp: Stamp = .origin

    public init() {}

    /// The largest fence this lock has had here.
    public var highestFence: UInt64 { max(grant?.fence ?? 0, endedFence) }

    /// Takes in a grant; returns whether it changed the record.
    @discardableResult
    public mutating func take(grant incoming: LockGrant, stamp: Stamp) -> Bool {
        // Fence 0 is no grant (a node assigns every grant a fence above 0).
        guard incoming.fence > 0 else { return false }
        if let grant, (grant.fence, grantStamp) >= (incoming.fence, stamp) { return false }
        grant = incoming
        grantStamp = stamp
        return true
    }

    /// Takes in the end (release or revocation) of every grant up to `fence`.
    @discardableResult
    public mutating func end(upTo fence: UInt64, stamp: Stamp) -> Bool {
        // Fence 0 ends nothing (no grant has it): a release of a lock never granted.
        guard fence > 0, (fence, stamp) > (endedFence, endedStamp) else { return false }
        endedFence = fence
        endedStamp = stamp
        return true
    }

    @discardableResult
    public mutating func merge(_ other: LockRecord) -> Bool {
        var changed = false
        if let grant = other.grant { changed = take(grant: grant, stamp: other.grantStamp) || changed }
        changed = end(upTo: other.endedFence, stamp: other.endedStamp) || changed
        return changed
    }

    /// The grant that holds the lock at `nowMillis`, if any. `isPresent(user, millis)`:
    /// whether the user has a live session that started by `millis`.
    public func holding(atMillis nowMillis: UInt64, isPresent: (UserID, UInt64) -> Bool) -> LockGrant? {
        guard let grant, grant.fence > endedFence else { return nil }
        let lapse = grantStamp.clock.millis &+ UInt64(grant.ttlSeconds) * 1000
        // Within the TTL, held; after it, only through a session begun before it ended.
        return nowMillis < lapse || isPresent(grant.holder, lapse) ? grant : nil
    }
}

/// A guarded write's claim: "I hold `lock` with this fence".
public struct LockFence: Hashable, Sendable, CustomStringConvertible {
    public var lock: String
    public var fence: UInt64

    public init(lock: String, fence: UInt64) {
        self.lock = lock
        self.fence = fence
    }

    public var description: String { "\(lock):\(fence)" }
}

/// A lock as a reader sees it at one moment (`RoomState.locks(atMillis:)`).
public struct LockStatus: Hashable, Sendable {
    public var name: String
    /// The holder, while the lock is held.
    public var holder: UserID?
    /// The fence of the current grant, or of the last one while free (0: never granted).
    public var fence: UInt64
    public var ttlSeconds: UInt32
    /// When the grant (or its last renewal) was made, Unix ms (0: never granted).
    public var acquiredAtMillis: UInt64
    /// While held by an offline holder: when it lapses, Unix ms.
    public var lapsesAtMillis: UInt64?

    public init(name: String, holder: UserID?, fence: UInt64, ttlSeconds: UInt32, acquiredAtMillis: UInt64, lapsesAtMillis: UInt64?) {
        self.name = name
        self.holder = holder
        self.fence = fence
        self.ttlSeconds = ttlSeconds
        self.acquiredAtMillis = acquiredAtMillis
        self.lapsesAtMillis = lapsesAtMillis
    }
}
