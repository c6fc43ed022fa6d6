import HomeroomCore

/// What another node's deltas did here.
public struct RemoteApplication: Sendable {
    /// The deltas new here (applied or rejected by the rules): to store and relay to clients.
    public var fresh: [Delta] = []
    /// Refused because their clock ran too far ahead of this node's: not recorded, so
    /// anti-entropy offers them again later.
    public var rejectedClock = 0
    /// Held until what they depend on arrives.
    public var deferred = 0
    /// A gap shows (deferred deltas, or deltas after a hole): pull from the sender.
    public var needsPull = false
    public var changes: [RoomChange] = []
    public var messaging: [MessagingChange] = []
}

/// What a repair patch did here.
public struct PatchMerge: Sendable {
    public var changed = false
    /// The patch removed something (a kick, a ban, a session's end): closed rooms rotate their keys.
    public var removalsChanged = false
    /// The patch held writes of this node's own id above its last sequence number (its
    /// store was restored from an old copy): (ours, theirs). Numbering continues above them.
    public var ownSequenceBehind: (ours: UInt64, theirs: UInt64)?
    public var changes: [RoomChange] = []
    public var messaging: [MessagingChange] = []
}

extension NodeEngine {
    /// Which of another node's deltas to store before `applyRemote` takes them: those this
    /// node has not seen, with a clock it admits. Stored first, so nothing a heartbeat
    /// announces lives in memory alone; one the apply then defers is replayed (and deferred)
    /// again on a restart, which changes nothing.
    public func deltasToStore(room roomID: String, _ deltas: [Delta], nowMillis now: UInt64) -> [Delta] {
        // A late delta of a room removed after closing brings nothing back.
        if isTombstoned(roomID) { return [] }
        let seen = rooms[roomID]?.seen ?? VersionVector()
        var taken = Set<Dot>()
        return deltas.filter { !seen.contains($0.dot) && sequencer.admits($0.clock, nowMillis: now) && taken.insert($0.dot).inserted }
    }

    /// Whether a repair patch would bring this room anything its version vector lacks:
    /// then it is stored before it is merged (when the room's store is not behind).
    public func patchBringsWrites(room roomID: String, _ patch: RoomState) -> Bool {
        if isTombstoned(roomID) { return false }
        return !(rooms[roomID]?.seen ?? VersionVector()).dominates(patch.seen)
    }

    /// Another node's deltas for a room.
    public mutating func applyRemote(room roomID: String, _ deltas: [Delta], origin: ReplicaID, nowMillis now: UInt64) -> RemoteApplication {
        var result = RemoteApplication()
        if isTombstoned(roomID) { return result }
        var room = rooms.removeValue(forKey: roomID) ?? RoomState(roomID: roomID)
        defer { rooms[roomID] = room }
        for delta in deltas {
            // A clock far ahead is refused and not recorded: anti-entropy offers it again later.
            guard (try? sequencer.observe(delta.clock, nowMillis: now)) != nil else {
                result.rejectedClock += 1
                continue
            }
            let outcome = room.apply(delta, messaging: &result.messaging)
            switch outcome {
            case .duplicate: continue
            case .deferred:
                result.deferred += 1
                continue
            case .applied, .rejected: break
            }
            result.changes += outcome.changes
            result.fresh.append(delta)
        }
        noteEvictions(room: roomID, result.messaging)
        topicKeys.noteRemovals(room: roomID, result.fresh)
        noteFoldCandidates(room: roomID, result.fresh, in: room)
        result.needsPull = result.deferred > 0 || room.seen.origins[origin].map { !$0.early.isEmpty } ?? false
        return result
    }

    /// A repair patch pulled from a peer.
    public mutating func merge(room roomID: String, _ patch: RoomState) -> PatchMerge {
        var result = PatchMerge()
        if isTombstoned(roomID) { return result }
        var room = rooms.removeValue(forKey: roomID) ?? RoomState(roomID: roomID)
        defer { rooms[roomID] = room }
        let before = room.seen
        let breakoutBefore = (groups: room.breakoutGroups, assignments: room.breakoutAssignments, ended: room.breakoutEnded)
        let removals = room.removals(in: patch)
        result.changes = room.merge(patch, messaging: &result.messaging)
        result.removalsChanged = room.removals(in: patch) != removals
        if result.removalsChanged {
            topicKeys.rotate(room: roomID)
            topicKeys.rotateGroups(of: roomID)
        }
        // A patch can move students between groups too: their old group's keys rotate.
        if room.breakoutAssignments != breakoutBefore.assignments || room.breakoutGroups != breakoutBefore.groups
            || room.breakoutEnded != breakoutBefore.ended { topicKeys.rotateGroups(of: roomID) }
        noteEvictions(room: roomID, result.messaging)
        noteFoldCandidates(room: roomID, patch: patch, in: room)
        // A peer holds writes under this node's own id that this node never made in this
        // life (its store was restored from an old copy, or another node runs on a copy of
        // it): never number a write at or below them.
        let ownHighest = room.seen.origins[replica]?.highest ?? 0
        if ownHighest > roomSequences[roomID] ?? 0 {
            result.ownSequenceBehind = (roomSequences[roomID] ?? 0, ownHighest)
            roomSequences[roomID] = ownHighest
        }
        let privateHighest = room.seen.origins[privateOrigin]?.highest ?? 0
        privateSequences[roomID] = max(privateSequences[roomID] ?? 0, privateHighest)
        result.changed = room.seen != before
        return result
    }
}
