extension RoomState {
    /// The grant that holds `name` at `nowMillis`, if any.
    public func lockHolding(_ name: String, atMillis nowMillis: UInt64) -> LockGrant? {
        locks[name]?.holding(atMillis: nowMillis) { self.isPresent($0, since: $1) }
    }

    /// Whether `user` has a live session that started by `millis` (a lock holder back
    /// within its TTL keeps the lock; one back later does not: the lapse sticks).
    func isPresent(_ user: UserID, since millis: UInt64) -> Bool {
        guard let record = users[user], !record.isBanned else { return false }
        return record.sessions.contains { $0.started.clock.millis <= millis && record.isLive($0, deadIncarnations: deadIncarnations) }
    }

    /// Every lock as it stands at `nowMillis`, by name.
    public func lockStatuses(atMillis nowMillis: UInt64) -> [LockStatus] {
        locks.keys.sorted().map { lockStatus($0, atMillis: nowMillis)! }
    }

    /// One lock as it stands at `nowMillis` (nil: no such lock in this room).
    public func lockStatus(_ name: String, atMillis nowMillis: UInt64) -> LockStatus? {
        guard let record = locks[name] else { return nil }
        let held = record.holding(atMillis: nowMillis) { self.isPresent($0, since: $1) }
        let acquired = record.grant == nil ? 0 : record.grantStamp.clock.millis
        var lapses: UInt64?
        if let held, !isPresent(held.holder, since: acquired &+ UInt64(held.ttlSeconds) * 1000) { lapses = acquired &+ UInt64(held.ttlSeconds) * 1000 }
        return LockStatus(name: name, holder: held?.holder, fence: record.highestFence, ttlSeconds: record.grant?.ttlSeconds ?? 0,
                          acquiredAtMillis: acquired, lapsesAtMillis: lapses)
    }

    /// Why a guarded property write may not be made here now, if it may not: the key's
    /// current fence, and the lock the write names, as this replica knows them.
    func fenceRefusal(_ fence: LockFence?, author: UserID, current: Register<PropertyValue>?, key: String, nowMillis: UInt64) -> WriteError? {
        let keyFence = current?.value.fence
        guard let fence else {
            if let keyFence { return .fenceRequired(key: key, lock: keyFence.lock) }
            return nil
        }
        // One lock guards a key: fences of different locks do not compare.
        if let keyFence, keyFence.lock != fence.lock { return .fenceRequired(key: key, lock: keyFence.lock) }
        if let keyFence, keyFence.fence > fence.fence { return .fenceStale(lock: fence.lock, presented: fence.fence, current: keyFence.fence) }
        guard let grant = lockHolding(fence.lock, atMillis: nowMillis), grant.holder == author else {
            return .lockNotHeld(lock: fence.lock, holder: lockHolding(fence.lock, atMillis: nowMillis)?.holder)
        }
        if grant.fence != fence.fence { return .fenceStale(lock: fence.lock, presented: fence.fence, current: grant.fence) }
        return nil
    }

    /// Admission of a lock write at its origin.
    func lockRefusal(_ operation: Operation, author: UserID, role: Role, nowMillis: UInt64) -> WriteError? {
        switch operation {
        case let .acquireLock(name, _, _):
            if locks[name] == nil, let refusal = newLockNameRefusal(author: author, role: role) { return refusal }
            if let holder = lockHolding(name, atMillis: nowMillis)?.holder, holder != author { return .lockHeld(lock: name, holder: holder) }
            // A renewal keeps its fence; only a new grant needs one.
            if let record = locks[name], lockHolding(name, atMillis: nowMillis)?.holder != author,
               record.highestFence >> Locks.granterBits >= (Locks.maxFence >> Locks.granterBits) - 1 {
                return .limitReached("lock \(name) has used every fence it may have: use another lock name")
            }
            return nil
        case let .releaseLock(name, fence, revoke):
            guard let grant = lockHolding(name, atMillis: nowMillis) else { return .lockNotHeld(lock: name, holder: nil) }
            if !revoke && grant.holder != author { return .lockNotHeld(lock: name, holder: grant.holder) }
            // A release naming its grant (a retry after a lost acknowledgement) never ends a later one.
            if fence != 0 && fence != grant.fence { return .fenceStale(lock: name, presented: fence, current: grant.fence) }
            return nil
        default:
            return nil
        }
    }

    /// Why `author` may not add a lock name to the room, if it may not (`Locks`: names
    /// are never freed, so students share part of them, a few each).
    func newLockNameRefusal(author: UserID, role: Role) -> WriteError? {
        if locks.count >= Locks.maxPerRoom {
            return .limitReached("the room has \(Locks.maxPerRoom) lock names, the most it keeps (names are never removed): reuse a lock name")
        }
        if role.moderates { return nil }
        let ownNames = locks.compactMap { $0.value.grant?.holder == author ? $0.key : nil }.sorted()
        if ownNames.count >= Locks.maxNamesPerUser {
            return .limitReached("\(author) holds or last held \(ownNames.count) lock names, the most a student may: reuse one of them (\(ownNames.joined(separator: ", ")))")
        }
        let studentSlots = Locks.maxPerRoom - Locks.reservedForModerators
        if locks.count >= studentSlots {
            return .limitReached("the room has \(locks.count) lock names, and its last \(Locks.reservedForModerators) are kept for teachers and assistants: reuse a lock name")
        }
        return nil
    }

    /// The origin's part of a lock write: the fence it grants, renews or ends.
    func prepareLock(_ operation: Operation, author: UserID, origin: ReplicaID, nowMillis: UInt64) -> Operation {
        switch operation {
        case let .acquireLock(name, ttl, _):
            let record = locks[name] ?? LockRecord()
            // Renewal keeps the fence; a new grant takes the next one.
            if let held = record.holding(atMillis: nowMillis, isPresent: { self.isPresent($0, since: $1) }), held.holder == author {
                return .acquireLock(name: name, ttlSeconds: ttl, fence: held.fence)
            }
            return .acquireLock(name: name, ttlSeconds: ttl, fence: Locks.nextFence(after: record.highestFence, origin: origin))
        case let .releaseLock(name, fence, revoke):
            return .releaseLock(name: name, fence: fence != 0 ? fence : locks[name]?.grant?.fence ?? 0, revoke: revoke)
        default:
            return operation
        }
    }
}
