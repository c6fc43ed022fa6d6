/// Retiring replica ids (docs/ARCHITECTURE.md, "Lifetime"): a node takes a new replica
/// id with each new store, and every room keeps something per id (its version-vector
/// entry, its dead-incarnation mark, the sessions it hosted, its session and reward
/// floors of each user). Without retirement those grow by one set per store a node
/// ever had. The newest store of a node name retires the older ones once every node
/// holds all their writes; every replica then drops what it kept for them and refuses
/// anything later from them, and what their rewards counted moves into the retiring
/// node's own floors, so no total changes.
///
/// Why it is exact: only the newest store of a name writes the retirement (one writer,
/// applied once per replica by its dot); it waits until every known node's version
/// vector holds every write of the retired ids (so no replica can learn one later)
/// and until their rewards are complete (as a reward fold waits); and the floors it
/// writes are given whole, so a replica that applies it before or after its other
/// folds ends with the same totals.
extension RoomState {
    /// Whether `replica` (a node id or a private-topic origin) is retired here.
    public func isRetired(_ replica: ReplicaID) -> Bool {
        guard replica.isStructured, let generation = retiredGenerations[replica.nameHash] else { return false }
        return replica.generation <= generation
    }

    static func retiredTest(_ table: [UInt32: UInt64]) -> (ReplicaID) -> Bool {
        { replica in
            guard replica.isStructured, let generation = table[replica.nameHash] else { return false }
            return replica.generation <= generation
        }
    }

    /// Drops what retired ids left: version-vector entries, dead-incarnation marks, and
    /// in the records of `subset` their sessions, floors and rewards.
    ///
    /// What they wrote that still stands (a register they wrote last, a message in the
    /// history) stays, and so does their version-vector entry while anything in the
    /// room is stamped by them: a replica that missed such a write still gets it from
    /// a patch, and replicas that have it are not sent it again. The entry goes once
    /// nothing carries their stamp (`dropsEntries`: with the whole room scanned; a
    /// patch merge leaves entries to the next retirement).
    mutating func purgeRetired<Users: Sequence>(users subset: Users, dropsEntries: Bool = true) where Users.Element == UserID {
        guard !retiredGenerations.isEmpty else { return }
        let retired = Self.retiredTest(retiredGenerations)
        for replica in Array(deadIncarnations.keys) where retired(replica) { deadIncarnations[replica] = nil }
        for user in subset where users[user]?.holdsRetired(retired) == true {
            users[user]!.dropRetired(retired)
            reindex(user)
        }
        if dropsEntries { dropRetiredEntries() }
    }

    /// Drops the version-vector entries of retired ids that nothing in the room is
    /// stamped by any more (their last register was written over, their last message
    /// left the history). Returns whether it dropped any. Scans the whole room.
    @discardableResult
    public mutating func dropRetiredEntries() -> Bool {
        let retired = Self.retiredTest(retiredGenerations)
        guard !retiredGenerations.isEmpty, seen.origins.keys.contains(where: retired) else { return false }
        let standing = stampOrigins(where: retired)
        let gone = seen.origins.keys.filter { retired($0) && !standing.contains($0) }
        for origin in gone { seen.remove(origin) }
        return !gone.isEmpty
    }

    /// The origins, among those `matching` accepts, of every stamp the room holds.
    func stampOrigins(where matching: (ReplicaID) -> Bool) -> Set<ReplicaID> {
        var found = Set<ReplicaID>()
        forEachStamp { stamp in
            let origin = stamp.clock.replica
            if matching(origin) { found.insert(origin) }
        }
        return found
    }

    /// The largest clock reading (packed) of the stamps these origins wrote in this room, or
    /// 0: a node booted on its store restores its clock above its own earlier writes, so a
    /// write it makes after a restart never stamps below one it made before (a peer's
    /// clock may have pushed its clock ahead of the wall clock then).
    public func highestClock(writtenBy origins: Set<ReplicaID>) -> UInt64 {
        var highest: UInt64 = 0
        forEachStamp { stamp in
            if origins.contains(stamp.clock.replica) { highest = max(highest, stamp.clock.packed) }
        }
        return highest
    }

    /// Every stamp the room holds (registers, messages, sessions, rewards, floors, locks, groups).
    func forEachStamp(_ body: (Stamp) -> Void) {
        func note(_ stamp: Stamp?) {
            guard let stamp, stamp.sequence != 0, stamp != Stamp.maxedOut else { return }
            body(stamp)
        }
        for stamp in [name.stamp, type.stamp, stageLimit.stamp, handLimit.stamp, schedule.stamp, classState.stamp, muteAll,
                      chatMuted.stamp, historyLimit.stamp, messages.floor] { note(stamp) }
        for stamp in cameraMute.stamps + microphoneMute.stamps + handRaising.stamps + [autoStage.stamp] { note(stamp) }
        for invitation in invitations.values { for stamp in invitation.stamps { note(stamp) } }
        for register in properties.values { note(register.stamp) }
        note(carousel.stamp)
        note(breakoutEnded)
        for lock in locks.values { note(lock.grantStamp); note(lock.endedStamp) }
        for register in breakoutGroups.values { note(register.stamp) }
        for register in breakoutAssignments.values { note(register.stamp) }
        for message in messages.entries.values { note(message.stamp) }
        for record in users.values {
            note(record.name.stamp)
            note(record.role.stamp)
            for session in record.sessions { note(session.started); note(session.ended) }
            guard record.hasActivity else { continue }
            let activity = record.activity
            for register in [activity.stage, activity.board, activity.cameraDevice, activity.cameraPrivilege, activity.microphoneDevice,
                             activity.microphonePrivilege, activity.hand, activity.chatMuted] { note(register.stamp) }
            note(activity.kicked)
            note(activity.banned)
            for entry in activity.rewards.values { note(entry.stamp); entry.copies.forEach { note($0) } }
            for floor in activity.rewardFloors.values { note(floor.stamp) }
            for floor in activity.sessionFloors.values { note(floor.stamp) }
            for register in activity.properties.values { note(register.stamp) }
            for register in activity.presence.values { note(register.stamp) }
        }
    }

    /// Users whose records hold something of a retired id (see `purgeRetired`).
    func usersHoldingRetired(_ retired: (ReplicaID) -> Bool) -> [UserID] {
        users.compactMap { user, record in record.holdsRetired(retired) ? user : nil }
    }

    /// Applies a `retirePredecessors` written by `origin`: its own name's ids up to
    /// `generation` are retired, and the floors it gives become its floors.
    mutating func performRetirement(origin: ReplicaID, stamp: Stamp, generation: UInt64, floors: [RetiredRewardFloor]) -> [RoomChange] {
        // Only a structured node id retires, and only older ids of its own name.
        guard origin.isStructured, origin.nodeForm == origin, generation < origin.generation else { return [] }
        var table = retiredGenerations
        table[origin.nameHash] = max(table[origin.nameHash] ?? 0, generation)
        let retired = Self.retiredTest(table)
        var touched = usersHoldingRetired(retired)
        let holding = Set(touched)
        touched.append(contentsOf: floors.map(\.user).filter { !holding.contains($0) })
        return reportingChanges(touched: touched) { state in
            for floor in floors {
                state.users[floor.user, default: UserRecord()]
                    .foldRewards(origin: origin, RewardFloor(upTo: floor.upTo, sum: floor.sum, keep: floor.keep, stamp: stamp))
            }
            state.retiredGenerations = table
            state.purgeRetired(users: touched)
        }
    }
}

extension RoomState {
    /// What `retirementPlan` decides.
    public enum RetirementPlan: Equatable, Sendable {
        /// This room holds nothing of an older id of the successor's name.
        case nothing
        /// Not yet, and why (for logs and tests).
        case waiting(String)
        case due(Operation)
    }

    /// The older replica ids of `successor`'s node name this room holds something of.
    public func predecessors(of successor: ReplicaID) -> [ReplicaID] {
        var found = Set<ReplicaID>()
        for origin in seen.origins.keys where successor.supersedes(origin) && !isRetired(origin) { found.insert(origin.nodeForm) }
        for replica in deadIncarnations.keys where successor.supersedes(replica) && !isRetired(replica) { found.insert(replica.nodeForm) }
        return found.sorted()
    }

    /// The `retirePredecessors` the node `successor` should write now, if any.
    ///
    /// `peers` are the version vectors of this room that every other node it knows last
    /// advertised (down ones included: they may hold writes no one else has);
    /// `completeBeforeMillis` is the same promise a reward fold takes (every copy of
    /// every reward issued before it is here, and no node will make another), nil when
    /// there is none yet. Due once this replica and every peer hold every write of the
    /// older ids without a gap, and each of their rewards is complete and counted once
    /// (a copy retried through another node is covered by that node's fold).
    public func retirementPlan(successor: ReplicaID, peers: [VersionVector], completeBeforeMillis: UInt64?) -> RetirementPlan {
        let olderIDs = predecessors(of: successor)
        guard !olderIDs.isEmpty else { return .nothing }
        // Ids retired already are gone here: a peer that still lists one (until its own
        // sweep drops the entry) holds nothing this retirement must wait for.
        let isOlder: (ReplicaID) -> Bool = { successor.supersedes($0) && !self.isRetired($0) }
        var origins = Set(seen.origins.keys.filter(isOlder))
        for peer in peers { origins.formUnion(peer.origins.keys.filter(isOlder)) }
        for origin in origins.sorted() {
            let own = seen.origins[origin] ?? OriginProgress()
            guard own.early.isEmpty else { return .waiting("this node misses writes of \(origin)") }
            for peer in peers {
                let theirs = peer.origins[origin] ?? OriginProgress()
                if theirs.highest > own.contiguous { return .waiting("this node misses writes of \(origin) a peer has") }
                if theirs.contiguous < own.contiguous { return .waiting("a peer misses writes of \(origin)") }
            }
        }
        var floors: [RetiredRewardFloor] = []
        for (user, record) in users where record.hasActivity {
            var absorbed: Int64 = 0
            for (origin, floor) in record.rewardFloors where isOlder(origin) { absorbed += floor.sum }
            for entry in record.rewards.values where isOlder(entry.stamp.clock.replica) {
                guard let before = completeBeforeMillis, entry.issuedAtMillis < before else {
                    return .waiting("a reward of \(user) is not complete yet")
                }
                let counted = entry.copies.allSatisfy { copy in
                    isOlder(copy.clock.replica) || record.rewardFloors[copy.clock.replica]?.covers(sequence: copy.sequence) == true
                }
                guard counted else { return .waiting("a reward of \(user) waits for another node's fold") }
                absorbed += Int64(entry.amount)
            }
            guard absorbed != 0 else { continue }
            let current = record.rewardFloors[successor]
            floors.append(RetiredRewardFloor(user: user, upTo: current?.upTo ?? 0, sum: (current?.sum ?? 0) + absorbed,
                                             keep: current?.keep ?? []))
        }
        let generation = olderIDs.map(\.generation).max()!
        return .due(.retirePredecessors(generation: generation, rewardFloors: floors.sorted { $0.user < $1.user }))
    }
}
