import HomeroomCore

extension NodeEngine {
    /// A client's write: admitted and numbered (to be stored, then committed), or answered.
    /// Reads the rooms only; nothing changes until `commit`.
    public func decide(room roomID: String, _ write: Write, nowMillis now: UInt64) -> WriteDecision {
        if let refusal = refusal(room: roomID, write, nowMillis: now) { return .answer(refusal) }
        let room = rooms[roomID] ?? RoomState(roomID: roomID)
        // The origin fills in what depends on the room here (a property's next revision, a lock's fence).
        let prepared = room.prepare(write, origin: replica, nowMillis: now)
        let (delta, sequencer) = stamp(room: roomID, prepared, nowMillis: now)
        // Every replica judges an answer's timeliness by its stamp, which may run ahead of
        // `now` (the clock keeps the largest it has seen): refused here rather than
        // acknowledged and then of no effect anywhere.
        if case let .answerInvitation(_, issued, seconds) = prepared.operation, issued != .origin,
           !StageInvitation(issued: issued, seconds: seconds, inviter: "").isOpen(at: delta.stamp) {
            return .answer(.refused(.invitationExpired(expiresAtMillis: issued.clock.millis &+ UInt64(seconds) * 1000)))
        }
        return .persist(StampedWrite(room: roomID, delta: delta, prepared: prepared, sequencer: sequencer, nowMillis: now))
    }

    /// A write the node makes itself (as system): numbered without admission, for a room it holds.
    public func stampSystemWrite(room roomID: String, _ write: Write, nowMillis now: UInt64) -> StampedWrite? {
        guard let room = rooms[roomID] else { return nil }
        let prepared = room.prepare(write, origin: replica, nowMillis: now)
        let (delta, sequencer) = stamp(room: roomID, prepared, nowMillis: now)
        return StampedWrite(room: roomID, delta: delta, prepared: prepared, sequencer: sequencer, nowMillis: now)
    }

    /// A decided write leaves for the store; the shell lets its lock go until `commit` (or
    /// `storeFailed`). A reward among them holds back what heartbeats claim meanwhile.
    public mutating func storing(_ stamped: StampedWrite) {
        if case .reward = stamped.prepared.operation { rewardsInFlight[stamped.room] = stamped.nowMillis }
    }

    /// The store refused a decided write: it is never committed, and its number is given again.
    public mutating func storeFailed(_ stamped: StampedWrite) {
        rewardsInFlight[stamped.room] = nil
    }

    /// The send time a heartbeat may give its reward checkpoints (`RewardCheckpoint`): a
    /// heartbeat says every reward this node admitted before that time is among its
    /// writes up to the sequence it announces. A reward decided and still being stored
    /// is not among them yet, so the time stops just before the earliest such reward was
    /// decided (its window was checked then); a peer that took `now` would fold its copy
    /// of that reward without ours, and ours would count again.
    public func checkpointMillis(nowMillis now: UInt64) -> UInt64 {
        guard let earliest = rewardsInFlight.values.min() else { return now }
        return min(now, earliest &- 1)
    }

    /// Takes a stored write: consumes its number, applies it, and says what its author is told.
    /// Valid for the last write `decide` or `stampSystemWrite` gave out *in its room*: the
    /// shell keeps one write in flight per room (its write gate), while other rooms' writes
    /// are stamped and committed, and remote deltas applied, in between.
    public mutating func commit(_ stamped: StampedWrite) -> CommittedWrite {
        let roomID = stamped.room
        let delta = stamped.delta
        // The later clock of the two: a write of another room committed since this one was
        // stamped may have moved it further, and it must never run back (a room's next
        // write would then repeat a reading of this origin).
        sequencer.restore(lastSequence: stamped.sequencer.lastSequence, lastClock: stamped.sequencer.clock.last)
        rewardsInFlight[roomID] = nil
        if delta.origin == sequencer.replica {
            roomSequences[roomID] = delta.sequence
        } else {
            privateSequences[roomID] = delta.sequence
        }
        var messaging: [MessagingChange] = []
        let outcome = rooms[roomID, default: RoomState(roomID: roomID)].apply(delta, messaging: &messaging)
        noteEvictions(room: roomID, messaging)
        topicKeys.noteRemovals(room: roomID, [delta])
        let room = rooms[roomID]!
        noteFoldCandidates(room: roomID, [delta], in: room)
        var answer: WriteOutcome
        switch outcome {
        case let .rejected(reason):
            answer = WriteOutcome(.rejected, code: reason.code, message: reason.description, dot: delta.dot)
        case .applied, .duplicate, .deferred:
            answer = WriteOutcome(.accepted, dot: delta.dot)
            switch stamped.prepared.operation {
            case let .setRoomProperty(_, _, _, revision):
                answer.revision = revision.assigned
                answer.setRevision = room.propertySetRevision(scope: .room)
            case let .setUserProperty(user, _, _, _, revision):
                answer.revision = revision.assigned
                answer.setRevision = room.propertySetRevision(scope: .user(user))
            case let .acquireLock(name, _, fence):
                // A grant the merge did not take (a renewal stamped before a grant this node
                // got by a patch from a clock ahead) is not one: say so rather than acknowledge it.
                let held = room.lockHolding(name, atMillis: stamped.nowMillis)
                if held?.holder == stamped.prepared.author && held?.fence == fence {
                    answer.fence = fence
                } else {
                    answer = WriteOutcome(.rejected, code: "lock-held", message: "the grant was not taken (the lock changed meanwhile): acquire again", dot: delta.dot)
                }
            default:
                break
            }
        }
        return CommittedWrite(room: roomID, delta: delta, outcome: answer, changes: outcome.changes, messaging: messaging)
    }

    /// Why a client's write is refused (or answered as a duplicate) before it is numbered, or nil.
    func refusal(room roomID: String, _ write: Write, nowMillis now: UInt64) -> WriteOutcome? {
        if write.authorRole == .system { return .refused("not-allowed", "clients cannot write as the system") }
        if isTombstoned(roomID) { return .refused(.roomClosed) }
        // A breakout group's room: the main room (held here, as every room is) says who may
        // come in and write there, at every write, so a move or a ban takes effect (leaving
        // is always allowed).
        if let group = Breakout.parse(roomID: roomID), !write.operation.isLeave,
           let refusal = rooms[group.mainRoom]?.groupRoomRefusal(user: write.author, role: write.authorRole, group: group.group) {
            return .refused(refusal)
        }
        guard let room = rooms[roomID] else {
            if rooms.count >= policy.maxRooms {
                return .refused("node-full", "this node holds its maximum of \(policy.maxRooms) rooms")
            }
            return joinRefusal(write, in: RoomState(roomID: roomID), roomID: roomID) ?? admission(write, in: RoomState(roomID: roomID), nowMillis: now)
        }
        if case let .joinSession(user, _, _, _, _, _) = write.operation, room.users[user] == nil, room.users.count >= policy.maxUsersPerRoom {
            return .refused("room-full", "room \(roomID) has its maximum of \(policy.maxUsersPerRoom) users")
        }
        if let refusal = joinRefusal(write, in: room, roomID: roomID) { return refusal }
        // A retried reward (same author and counter) is acknowledged, not counted again.
        if case let .reward(target, _, _) = write.operation,
           let existing = room.users[target]?.rewards[RewardKey(author: write.author, authorCounter: write.authorCounter)] {
            return WriteOutcome(.duplicate, message: "this reward was already counted", dot: existing.stamp.dot)
        }
        // So is a retried message: stored and delivered once.
        if write.operation.isMessage {
            let key = MessageKey(sender: write.author, counter: write.authorCounter)
            if let existing = room.messages[key] {
                return WriteOutcome(.duplicate, message: "this message was already sent", dot: existing.stamp.dot)
            }
            if evicted[roomID]?.contains(key) == true {
                return WriteOutcome(.duplicate, message: "this message was already sent and has since left the history")
            }
        }
        return admission(write, in: room, nowMillis: now)
    }

    /// Who may write at all: the operator writes without joining; everyone else joins
    /// first, and keeps the role it first joined with (until signed tokens bind roles).
    func joinRefusal(_ write: Write, in room: RoomState, roomID: String) -> WriteOutcome? {
        if write.author == OperatorIdentity.user {
            if case .joinSession = write.operation {
                return .refused("invalid", "\(OperatorIdentity.user) writes without joining: it cannot join a room")
            }
            return nil
        }
        if case .joinSession = write.operation {
            if let record = room.users[write.author], record.isKnown, record.role.value != write.authorRole {
                return .refused("role-mismatch", "\(write.author) joined this room as \(record.role.value), not \(write.authorRole)")
            }
            return nil
        }
        guard let record = room.users[write.author], record.isKnown else {
            return .refused("not-joined", "\(write.author) has not joined room \(roomID): join first")
        }
        if record.role.value != write.authorRole {
            return .refused("role-mismatch", "\(write.author) joined as \(record.role.value), not \(write.authorRole)")
        }
        return nil
    }

    func admission(_ write: Write, in room: RoomState, nowMillis now: UInt64) -> WriteOutcome? {
        room.admit(write, nowMillis: now, rewardWindowMillis: policy.rewardWindowMillis).map { .refused($0) }
    }
}

extension Operation {
    /// A session's end, which the group-room gate always lets through.
    public var isLeave: Bool {
        if case .leaveSession = self { return true }
        return false
    }
}
