import HomeroomCore

/// The acknowledged-write oracle: every write a client was told ACCEPTED either has its
/// effect on every replica after the heal, or lost to a write the Core's own merge
/// order puts after it. Without it a write kind that every replica dropped would pass,
/// as long as the replicas agreed on dropping it.
///
/// Each check reads the register the write wrote, never a derived view (the stage and
/// hand winners, stream states, what mute-all turns off), and asks the register's own
/// merge whether the write would still change it.
extension Simulation {
    /// One write a client was acknowledged, as its origin sequenced it (a property's
    /// revision and a lock's fence filled in).
    struct AcknowledgedWrite {
        var author: UserID
        var operation: Operation
        var stamp: Stamp
    }

    /// Notes an accepted write for the oracle. `intended`: the write the client sent, when
    /// `SimulationConfig.unappliedOperations` had the nodes sequence something else instead.
    mutating func noteAcknowledged(_ delta: Delta, intended: Operation?, in room: Int) {
        worlds[room].acknowledgedWrites.append(AcknowledgedWrite(author: delta.author, operation: intended ?? delta.operation, stamp: delta.stamp))
    }

    /// Checks every acknowledged write of `room` on every replica. A broken kind misses on
    /// hundreds of writes: the first few are listed, then how many more.
    mutating func checkAcknowledgedWrites(_ room: Int) {
        let id = worlds[room].id
        var misses: [String] = []
        for replica in nodes.indices {
            let state = self.state(replica, room)
            for write in worlds[room].acknowledgedWrites {
                report.acknowledgedWritesChecked += 1
                if let miss = Self.missingEffect(of: write, in: state) {
                    report.writesWithoutEffect[write.operation.name, default: 0] += 1
                    misses.append("replica \(replica + 1), \(id): \(write.author)'s acknowledged \(write.operation.name) "
                                  + "(\(write.operation), stamp \(write.stamp)) has no effect: \(miss)")
                }
            }
        }
        let shown = 4
        report.violations.append(contentsOf: misses.prefix(shown))
        if misses.count > shown { report.violations.append("\(id): \(misses.count - shown) more acknowledged writes without effect") }
    }

    /// Nil when `state` holds the write's effect or a write the merge orders after it;
    /// else what the register holds instead. Exhaustive, so a new kind must say how it is checked.
    static func missingEffect(of write: AcknowledgedWrite, in state: RoomState) -> String? {
        let stamp = write.stamp
        let record = { (user: UserID) in state.users[user] ?? UserRecord() }
        switch write.operation {
        case let .setRoomName(name): return lost(state.name, name, stamp)
        case let .setRoomType(type): return lost(state.type, type, stamp)
        case let .setStageLimit(limit): return lost(state.stageLimit, limit, stamp)
        case let .setHandLimit(limit): return lost(state.handLimit, limit, stamp)
        case let .setSchedule(schedule): return lost(state.schedule, schedule, stamp)
        case let .setCarousel(carousel): return lost(state.carousel, carousel, stamp)
        case let .setHistoryLimit(limit): return lost(state.historyLimit, limit, stamp)
        case let .setChatMuted(nil, muted): return lost(state.chatMuted, muted, stamp)
        case let .setChatMuted(user?, muted): return lost(record(user).chatMuted, muted, stamp)
        case let .setClassState(classState):
            // Forward-only: a later state, or the same state written earlier, stands.
            var probe = state.classState
            return probe.merge(ClassStateRegister(state: classState, stamp: stamp)) ? "class state \(state.classState.state) at \(state.classState.stamp)" : nil
        case .muteAll:
            return state.muteAll < stamp ? "mute-all at \(state.muteAll)" : nil
        case let .setDeviceMuted(device, muted, ending):
            // The gate's own join: a later mute stands for a mute, an opening of a later
            // mute (or an earlier opening of the same one) for an unmute.
            var probe = state.mute(device)
            let changed = muted ? probe.close(at: stamp) : probe.open(ending: ending, at: stamp)
            return changed ? "\(device) mute \(state.mute(device))" : nil
        case let .setHandRaising(allowed, autoStage, ending):
            // The gate as above; auto-stage is a register of its own.
            var probe = state.handRaising
            let changed = allowed ? probe.open(ending: ending, at: stamp) : probe.close(at: stamp)
            return changed ? "hand raising \(state.handRaising)" : lost(state.autoStage, autoStage, stamp)
        case let .inviteToStage(user, seconds):
            // The latest invitation of the user stands for this one.
            guard let held = state.invitations[user] else { return "no invitation of \(user)" }
            var probe = held
            return probe.merge(StageInvitation(issued: stamp, seconds: seconds, inviter: write.author)) ? "invitation \(held)" : nil
        case let .answerInvitation(accept, invitation, seconds):
            // Late by its own stamp it counts nowhere; in time, the invitation's join holds it
            // (or a later invitation), and an accept is a stage write at the answer's stamp.
            let answered = StageInvitation(issued: invitation, seconds: seconds, inviter: "",
                                           answer: StageInvitation.Answer(at: stamp, accepted: accept))
            guard invitation != .origin, answered.isOpen(at: stamp) else { return nil }
            if accept, let stage = lost(record(write.author).stage, true, stamp) { return "accepted, but the stage \(stage)" }
            guard let held = state.invitations[write.author] else { return "no invitation of \(write.author)" }
            var probe = held
            return probe.merge(answered) ? "invitation \(held)" : nil
        case let .trimHistory(beforeMillis):
            // The floor only rises (trims and the count limit both raise it).
            return state.messages.floor < RoomState.floorStamp(beforeMillis: beforeMillis) ? "history floor \(state.messages.floor)" : nil
        case let .setRoomProperty(key, value, cause, revision):
            return lostProperty(state.properties[key], PropertyValue(bytes: value, operatorID: write.author, cause: cause, revision: revision.assigned,
                                                                     lineage: revision.lineage, fence: revision.fence), stamp)
        case let .setUserProperty(user, key, value, cause, revision):
            return lostProperty(record(user).properties[key], PropertyValue(bytes: value, operatorID: write.author, cause: cause, revision: revision.assigned,
                                                                            lineage: revision.lineage, fence: revision.fence), stamp)
        case let .joinSession(user, _, name, role, _, _):
            // The session itself comes and goes (leaves, folds): the presence check follows it.
            return lost(record(user).role, role, stamp) ?? (name.isEmpty ? nil : lost(record(user).name, name, stamp))
        case let .leaveSession(user, session, _):
            // Ended, or folded away (a later write): never open again under the same id.
            return record(user).sessions.contains { $0.id == session && $0.ended == nil } ? "session \(session) is still open" : nil
        case let .setName(user, name): return lost(record(user).name, name, stamp)
        case let .setDevice(user, .camera, on): return lost(record(user).cameraDevice, on, stamp)
        case let .setDevice(user, .microphone, on): return lost(record(user).microphoneDevice, on, stamp)
        case let .setPrivilege(user, .camera, allowed): return lost(record(user).cameraPrivilege, allowed, stamp)
        case let .setPrivilege(user, .microphone, allowed): return lost(record(user).microphonePrivilege, allowed, stamp)
        case let .setHand(user, raised): return lost(record(user).hand, raised, stamp)
        case let .setStage(user, on): return lost(record(user).stage, on, stamp)
        case let .setBoard(user, granted): return lost(record(user).board, granted, stamp)
        case let .kick(user):
            // Max-merged: a later kick stands for this one.
            return record(user).kicked < stamp ? "\(user) last kicked at \(record(user).kicked)" : nil
        case let .ban(user):
            // Min-merged, never cleared: an earlier ban stands for this one.
            guard let banned = record(user).banned else { return "\(user) is not banned" }
            return stamp < banned ? "\(user) banned only at \(banned)" : nil
        case let .setPresenceState(user, session, items):
            // Within one write the first item of a key wins (the rest carry the same stamp).
            var written = Set<String>()
            for item in items where written.insert(item.key).inserted {
                let held = record(user).presence[item.key]
                if let miss = lost(held, PresenceValue(bytes: item.value, session: session), stamp) { return "presence \(item.key): \(miss)" }
            }
            return nil
        case let .acquireLock(name, ttl, fence):
            // The grant with the larger (fence, stamp) stands.
            var probe = state.locks[name] ?? LockRecord()
            return probe.take(grant: LockGrant(holder: write.author, fence: fence, ttlSeconds: ttl), stamp: stamp)
                ? "lock \(name) granted at fence \(state.locks[name]?.grant?.fence ?? 0)" : nil
        case let .releaseLock(name, fence, _):
            var probe = state.locks[name] ?? LockRecord()
            return probe.end(upTo: fence, stamp: stamp) ? "lock \(name) ended up to fence \(state.locks[name]?.endedFence ?? 0)" : nil
        case let .setBreakoutGroup(id, name):
            // An end at or after the write voids it (and drops the register).
            guard state.breakoutEnded < stamp else { return nil }
            return lost(state.breakoutGroups[id], name, stamp)
        case let .assignBreakoutGroup(user, group):
            guard state.breakoutEnded < stamp else { return nil }
            return lost(state.breakoutAssignments[user], group, stamp)
        case .endBreakout:
            return state.breakoutEnded < stamp ? "breakout ended at \(state.breakoutEnded)" : nil
        case .reward, .sendMessage, .sendPeerMessage:
            // Their own oracles (`checkInvariants`' reward totals, `checkHistory`) count them.
            return nil
        case .foldSessions, .foldRewards, .replicaDown, .retirePredecessors:
            // The node's own writes, never a client's: checked by the lifetime and presence checks.
            return nil
        }
    }

    /// Nil when the register holds `value` at `stamp`, or a value the LWW order puts after it.
    static func lost<Value>(_ held: Register<Value>?, _ value: Value, _ stamp: Stamp) -> String? {
        guard let held else { return "nothing there" }
        var probe = held
        if probe.merge(Register(value, stamp: stamp)) { return "holds \(held.value) at \(held.stamp), which the write would replace" }
        if held.stamp == stamp && held.value != value { return "holds \(held.value) under the write's own stamp" }
        return nil
    }

    /// The same for a property, in its own merge order (fence, then revision, then stamp).
    static func lostProperty(_ held: Register<PropertyValue>?, _ value: PropertyValue, _ stamp: Stamp) -> String? {
        guard let held else { return "nothing there" }
        let written = Register(value, stamp: stamp)
        if held.stamp == stamp { return held.value.bytes == value.bytes ? nil : "holds \(held.value.bytes ?? []) under the write's own stamp" }
        return written.precedes(held) ? nil
            : "holds revision \(held.value.revision) (fence \(held.value.fence?.fence ?? 0)) at \(held.stamp), which the write would replace"
    }
}
