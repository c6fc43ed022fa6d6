extension RoomState {
    /// Applies one delta. Pure and deterministic: the same set of deltas, in any
    /// order and with any duplicates, gives the same state on every replica.
    public mutating func apply(_ delta: Delta) -> ApplyOutcome {
        var ignored: [MessagingChange] = []
        return apply(delta, messaging: &ignored)
    }

    /// Applies one delta and also reports what it changed in messaging (messages,
    /// presence state, chat mutes, property conflicts) into `messaging`.
    public mutating func apply(_ delta: Delta, messaging: inout [MessagingChange]) -> ApplyOutcome {
        // A retired id's writes are all here already (or were dropped with it).
        if !retiredGenerations.isEmpty && isRetired(delta.origin) { return .duplicate }
        // A reward fold sums everything its origin counted before it, a retirement it wrote
        // included: applied ahead of an earlier delta of its origin (a retirement still on
        // its way), those rewards would count twice until it came. It waits, unseen, for
        // the repair that fills the gap (a patch carries the fold's floor with the rest).
        if case .foldRewards = delta.operation, seen.contiguous(delta.origin) &+ 1 < delta.sequence, !seen.contains(delta.dot) {
            return .deferred
        }
        guard seen.insert(delta.dot) else { return .duplicate }
        if let rejection = Authority.check(author: delta.author, role: delta.authorRole, operation: delta.operation) {
            return .rejected(rejection)
        }
        return .applied(perform(delta, messaging: &messaging))
    }

    private mutating func perform(_ delta: Delta, messaging: inout [MessagingChange]) -> [RoomChange] {
        switch delta.operation {
        case let .joinSession(user, _, _, _, _, _), let .leaveSession(user, _, _), let .foldSessions(user, _, _), let .kick(user), let .ban(user):
            // Sessions change: presence state written by them may show or go.
            let watched = watchPresence([user])
            let changes = performWrite(delta, messaging: &messaging)
            reportPresence(watched, messaging: &messaging)
            return changes
        case let .replicaDown(replica, _):
            let hosted = users.compactMap { entry in entry.value.sessions.contains { $0.host == replica } ? entry.key : nil }
            let watched = watchPresence(hosted)
            let changes = performWrite(delta, messaging: &messaging)
            reportPresence(watched, messaging: &messaging)
            reportTimeouts(changes, messaging: &messaging)
            return changes
        default:
            return performWrite(delta, messaging: &messaging)
        }
    }

    private mutating func performWrite(_ delta: Delta, messaging: inout [MessagingChange]) -> [RoomChange] {
        let stamp = delta.stamp
        switch delta.operation {
        // Fast paths: one user's own registers; stage and hand order unchanged.
        case let .setDevice(user, device, on):
            return writeStream(user, device) { activity in
                device == .camera ? activity.cameraDevice.write(on, at: stamp) : activity.microphoneDevice.write(on, at: stamp)
            }
        case let .setPrivilege(user, device, allowed):
            return writeStream(user, device) { activity in
                device == .camera ? activity.cameraPrivilege.write(allowed, at: stamp) : activity.microphonePrivilege.write(allowed, at: stamp)
            }
        case let .setBoard(user, granted):
            guard let index = users.index(forKey: user) else { return unknownUser(user) { $0.board.write(granted, at: stamp) } }
            let before = users.values[index].board.value
            guard users.values[index].modifyActivity({ $0.board.write(granted, at: stamp) }),
                  users.values[index].board.value != before else { return [] }
            return [.boardUpdated(user, granted: granted)]
        case let .reward(user, amount, issuedAt):
            let key = RewardKey(author: delta.author, authorCounter: delta.authorCounter)
            let entry = RewardEntry(amount: amount, stamp: stamp, issuedAtMillis: issuedAt)
            let added = users[user, default: UserRecord()].addReward(key, entry)
            return rewardChanges(user, added)
        case let .foldRewards(user, upTo, sum, keep):
            // Kept even for a user unknown here yet: the rewards it covers may come later.
            let changed = users[user, default: UserRecord()].foldRewards(origin: delta.origin, RewardFloor(upTo: upTo, sum: sum, keep: keep, stamp: stamp))
            return rewardChanges(user, changed)
        case let .setName(user, name):
            return updateUser(user, keepsRanks: true) { record in record.name.write(name, at: stamp) }
        case let .leaveSession(user, session, started):
            if let started, isRetired(started.clock.replica) { return [] }
            return updateUser(user, keepsRanks: true) { record in record.endSession(session, at: stamp, started: started) }
        case let .foldSessions(user, upTo, keep):
            // Kept even for a user unknown here yet: the sessions it covers may come later.
            return updateUser(user, keepsRanks: true) { record in
                record.fold(origin: delta.origin, SessionFloor(upTo: upTo, keep: keep, stamp: stamp))
            }
        case let .setUserProperty(user, key, value, cause, revision):
            var changes: [RoomChange] = []
            var won = false
            var bytesChange = 0
            let written = Register(PropertyValue(bytes: value, operatorID: delta.author, cause: cause, revision: revision.assigned,
                                                 lineage: revision.lineage, fence: revision.fence), stamp: stamp)
            if let conflict = Self.propertyConflict(.user(user), key, existing: users[user]?.properties[key], incoming: written) {
                messaging.append(.propertyConflict(conflict))
            }
            _ = updateUser(user, keepsRanks: true) { record in
                var table = record.properties
                won = Self.mergeProperty(&table, key, written, bytes: &bytesChange)
                if won { record.properties = table }
            }
            propertyBytes += bytesChange
            if won { changes.append(.userPropertiesUpdated(user, keys: [key])) }
            return changes

        // Messaging: no roster change, only `MessagingChange`s.
        case let .sendMessage(type, payload, previous):
            addMessage(Message(key: MessageKey(sender: delta.author, counter: delta.authorCounter), recipient: nil, type: type,
                               payload: payload, previous: previous, stamp: stamp), messaging: &messaging)
            return []
        case let .sendPeerMessage(recipient, type, payload, previous):
            addMessage(Message(key: MessageKey(sender: delta.author, counter: delta.authorCounter), recipient: recipient, type: type,
                               payload: payload, previous: previous, stamp: stamp), messaging: &messaging)
            return []
        case let .setChatMuted(user, muted):
            if let user {
                let before = users[user]?.chatMuted.value ?? false
                let won = users[user, default: UserRecord()].modifyActivity { $0.chatMuted.write(muted, at: stamp) }
                if won && before != muted { messaging.append(.chatMuteUpdated(user: user, muted: muted)) }
            } else {
                let before = chatMuted.value
                if chatMuted.write(muted, at: stamp) && before != muted { messaging.append(.chatMuteUpdated(user: nil, muted: muted)) }
            }
            return []
        case let .trimHistory(beforeMillis):
            var removed: [MessageKey] = []
            messages.raiseFloor(to: Self.floorStamp(beforeMillis: beforeMillis), removed: &removed)
            if !removed.isEmpty { messaging.append(.messagesRemoved(removed, floor: messages.floor)) }
            return []
        case let .setHistoryLimit(limit):
            let before = effectiveHistoryLimit
            guard historyLimit.write(limit, at: stamp) else { return [] }
            if effectiveHistoryLimit != before { messaging.append(.historyLimitUpdated(effectiveHistoryLimit)) }
            var removed: [MessageKey] = []
            messages.prune(limit: effectiveHistoryLimit, removed: &removed)
            if !removed.isEmpty { messaging.append(.messagesRemoved(removed, floor: messages.floor)) }
            return []
        case let .setPresenceState(user, session, items):
            let before = presenceState(of: user)
            users[user, default: UserRecord()].modifyActivity { activity in
                for item in items {
                    let written = Register(PresenceValue(bytes: item.value, session: session), stamp: stamp)
                    if activity.presence[item.key] == nil { activity.presence[item.key] = written } else { activity.presence[item.key]!.merge(written) }
                }
            }
            let after = presenceState(of: user)
            if before != after {
                let keys = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
                messaging.append(.presenceStateUpdated(user, keys: keys))
            }
            return []

        // Paths that may move someone on or off the stage or the hand list.
        case let .joinSession(user, session, name, role, host, incarnation):
            if isRetired(host) { return [] }
            return updateUser(user, keepsRanks: type.value != .oneToOne) { record in
                record.role.write(role, at: stamp)
                // An empty name keeps the one the user has (a rejoin without --name): no write,
                // so every replica keeps whatever name register it merges.
                if !name.isEmpty { record.name.write(name, at: stamp) }
                record.upsertSession(SessionRecord(id: session, host: host, incarnation: incarnation, started: stamp))
            }
        case let .setStage(user, on):
            return requeue(user) { $0.stage.write(on, at: stamp) }
        case let .setHand(user, raised):
            return requeue(user) { $0.hand.write(raised, at: stamp) }
        case let .inviteToStage(user, seconds):
            return mergeInvitation(user, StageInvitation(issued: stamp, seconds: seconds, inviter: delta.author))
        case let .answerInvitation(accept, invitation, seconds):
            // Decided from the stamps the answer carries alone: in time or nothing.
            let answered = StageInvitation(issued: invitation, seconds: seconds, inviter: "",
                                           answer: StageInvitation.Answer(at: stamp, accepted: accept))
            guard invitation != .origin, answered.isOpen(at: stamp) else { return [] }
            var changes = mergeInvitation(delta.author, answered)
            // The accept is the student's stage add, at its own stamp: a later stage write wins as any does.
            if accept { changes += requeue(delta.author) { $0.stage.write(true, at: stamp) } }
            return changes
        case let .kick(user):
            return updateUser(user, keepsRanks: false) { record in
                if record.kicked < stamp { record.kicked = stamp }
            }
        case let .ban(user):
            return updateUser(user, keepsRanks: false) { record in
                if record.banned.map({ stamp < $0 }) ?? true { record.banned = stamp }
            }

        // Room-wide registers.
        case let .setRoomName(name):
            return roomInfo { $0.name.write(name, at: stamp) }
        case let .setSchedule(schedule):
            return roomInfo { $0.schedule.write(schedule, at: stamp) }
        case let .setCarousel(settings):
            return roomInfo { $0.carousel.write(settings, at: stamp) }
        case let .acquireLock(name, ttl, fence):
            // Only a write that changes the record makes one: an empty record is never sent in a patch.
            var record = locks[name] ?? LockRecord()
            guard record.take(grant: LockGrant(holder: delta.author, fence: fence, ttlSeconds: ttl), stamp: stamp) else { return [] }
            locks[name] = record
            return [.locksUpdated(names: [name])]
        case let .setBreakoutGroup(id, name):
            guard breakoutEnded < stamp else { return [] }
            return breakoutGroups[id, default: Register(nil, stamp: .origin)].write(name, at: stamp) ? [.breakoutUpdated] : []
        case let .assignBreakoutGroup(user, group):
            guard breakoutEnded < stamp else { return [] }
            return breakoutAssignments[user, default: Register(nil, stamp: .origin)].write(group, at: stamp) ? [.breakoutUpdated] : []
        case .endBreakout:
            guard breakoutEnded < stamp else { return [] }
            breakoutEnded = stamp
            dropEndedBreakout()
            return [.breakoutUpdated]
        case let .releaseLock(name, fence, _):
            var record = locks[name] ?? LockRecord()
            guard record.end(upTo: fence, stamp: stamp) else { return [] }
            locks[name] = record
            return [.locksUpdated(names: [name])]
        case let .setRoomType(roomType):
            return roomWide { $0.type.write(roomType, at: stamp) }
        case let .setStageLimit(limit):
            return roomWide { $0.stageLimit.write(limit, at: stamp) }
        case let .setHandLimit(limit):
            return roomWide { $0.handLimit.write(limit, at: stamp) }
        case let .setClassState(state):
            guard classState.merge(ClassStateRegister(state: state, stamp: stamp)) else { return [] }
            return [.classStateUpdated(classState.state)]
        case .muteAll:
            guard muteAll < stamp else { return [] }
            var changes = roomWide { $0.muteAll = stamp }
            changes.insert(.allMicrophonesMuted, at: 0)
            return changes
        case let .setDeviceMuted(device, muted, ending):
            return changeMute(device) { gate in muted ? gate.close(at: stamp) : gate.open(ending: ending, at: stamp) }
        case let .setHandRaising(allowed, autoStage, ending):
            return changeHandRaising(autoStage: autoStage, at: stamp) { gate in allowed ? gate.open(ending: ending, at: stamp) : gate.close(at: stamp) }
        case let .retirePredecessors(generation, floors):
            return performRetirement(origin: delta.origin, stamp: stamp, generation: generation, floors: floors)
        case let .replicaDown(replica, incarnation):
            guard !isRetired(replica) else { return [] }
            guard deadIncarnations[replica].map({ $0 < incarnation }) ?? true else { return [] }
            return roomWide(presenceOnHost: replica) { state in
                state.deadIncarnations[replica] = max(state.deadIncarnations[replica] ?? 0, incarnation)
            }
        case let .setRoomProperty(key, value, cause, revision):
            let written = Register(PropertyValue(bytes: value, operatorID: delta.author, cause: cause, revision: revision.assigned,
                                                 lineage: revision.lineage, fence: revision.fence), stamp: stamp)
            if let conflict = Self.propertyConflict(.room, key, existing: properties[key], incoming: written) {
                messaging.append(.propertyConflict(conflict))
            }
            return Self.mergeProperty(&properties, key, written, bytes: &propertyBytes) ? [.roomPropertiesUpdated(keys: [key])] : []
        }
    }

    /// A stage or hand write: only places on the stage and the hand list can move.
    private mutating func requeue(_ user: UserID, _ write: (inout UserActivity) -> Bool) -> [RoomChange] {
        let stageBefore = stageWinners
        let handsBefore = raisedHands
        guard users[user, default: UserRecord()].modifyActivity(write) else { return [] }
        reindex(user)
        var changes: [RoomChange] = []
        let stageAfter = stageWinners
        if stageBefore != stageAfter {
            let removed = stageBefore.filter { !stageAfter.contains($0) }
            let added = stageAfter.filter { !stageBefore.contains($0) }
            for (moved, nowOnStage) in removed.map({ ($0, false) }) + added.map({ ($0, true) }) {
                guard let record = users[moved] else { continue }
                for device in Device.allCases {
                    let before = streamState(record, device, onStage: !nowOnStage)
                    let after = streamState(record, device, onStage: nowOnStage)
                    if before != after { changes.append(.streamUpdated(moved, device, after)) }
                }
            }
            if !removed.isEmpty { changes.append(.coHostsRemoved(removed.sorted())) }
            if !added.isEmpty { changes.append(.coHostsAdded(added.sorted())) }
        }
        let handsAfter = raisedHands
        if handsBefore != handsAfter {
            for lowered in handsBefore where !handsAfter.contains(lowered) { changes.append(.handLowered(lowered)) }
            for waved in handsAfter where !handsBefore.contains(waved) { changes.append(.handWaved(waved)) }
        }
        return changes
    }

    /// A write to one camera or microphone register: reports the stream state
    /// only when the visible state changed.
    @inline(__always)
    private mutating func writeStream(_ user: UserID, _ device: Device, _ write: (inout UserActivity) -> Bool) -> [RoomChange] {
        guard let index = users.index(forKey: user) else { return unknownUser(user) { _ = write(&$0) } }
        let onStage = isOnStage(user)
        let before = streamState(users.values[index], device, onStage: onStage)
        guard users.values[index].modifyActivity(write) else { return [] }
        let after = streamState(users.values[index], device, onStage: onStage)
        return before == after ? [] : [.streamUpdated(user, device, after)]
    }

    @inline(__always)
    func streamState(_ record: UserRecord, _ device: Device, onStage: Bool) -> StreamState {
        streamRules.state(record, device, onStage: onStage)
    }

    /// A write about a user this replica has not seen join yet: keep it (the join
    /// will come), nothing visible changes.
    private mutating func unknownUser(_ user: UserID, _ write: (inout UserActivity) -> Void) -> [RoomChange] {
        users[user, default: UserRecord()].modifyActivity(write)
        return []
    }

    /// Changes one user's record and reports what that changed. `keepsRanks` says
    /// the change cannot move anyone on or off the stage or the hand list.
    private mutating func updateUser(_ user: UserID, keepsRanks: Bool, _ mutate: (inout UserRecord) -> Void) -> [RoomChange] {
        if keepsRanks {
            let onStage = isOnStage(user)
            let handUp = isHandUp(user)
            let record = users[user] ?? UserRecord()
            let streams = streamRules
            let before = facts(user, record, onStage: onStage, handUp: handUp, streams: streams, dead: deadIncarnations)
            mutate(&users[user, default: UserRecord()])
            let after = facts(user, users[user]!, onStage: onStage, handUp: handUp, streams: streams, dead: deadIncarnations)
            var changes: [RoomChange] = []
            var added: [UserID] = [], removed: [UserID] = []
            Self.emit(user, before: before, after: after, into: &changes, stageAdded: &added, stageRemoved: &removed)
            return changes
        }
        return reportingChanges(touched: [user]) { state in
            mutate(&state.users[user, default: UserRecord()])
            state.reindex(user)
        }
    }

    private mutating func roomInfo(_ mutate: (inout RoomState) -> Bool) -> [RoomChange] {
        mutate(&self) ? [.roomInfoUpdated] : []
    }

    /// A change of the room's mute of `device`: every stream on stage may change with it.
    private mutating func changeMute(_ device: Device, _ change: (inout RoomGate) -> Bool) -> [RoomChange] {
        let wasMuted = mute(device).isClosed
        var changed = false
        var changes = reportingChanges(touched: []) { state in
            changed = device == .camera ? change(&state.cameraMute) : change(&state.microphoneMute)
        }
        guard changed else { return [] }
        let muted = mute(device).isClosed
        if muted != wasMuted { changes.insert(.deviceMuteUpdated(device, muted: muted), at: 0) }
        return changes
    }

    /// A change of hand raising: switched off or on, every raised hand may be lowered.
    private mutating func changeHandRaising(autoStage: Bool, at stamp: Stamp, _ change: (inout RoomGate) -> Bool) -> [RoomChange] {
        let before = handRaisingPolicy
        var changed = false
        var changes = reportingChanges(touched: []) { state in
            let gateChanged = change(&state.handRaising)
            changed = state.autoStage.write(autoStage, at: stamp) || gateChanged
            if gateChanged { state.reindexHands() }
        }
        guard changed else { return [] }
        if handRaisingPolicy != before { changes.insert(.handRaisingUpdated(handRaisingPolicy), at: 0) }
        return changes
    }

    /// A room-wide change that may move users on or off the stage or the hand list.
    private mutating func roomWide(_ mutate: (inout RoomState) -> Void) -> [RoomChange] {
        let before = (type, stageLimit, handLimit)
        var changes = reportingChanges(touched: []) { state in mutate(&state) }
        if before != (type, stageLimit, handLimit) { changes.insert(.roomInfoUpdated, at: 0) }
        return changes
    }

    private mutating func roomWide(presenceOnHost host: ReplicaID, _ mutate: (inout RoomState) -> Void) -> [RoomChange] {
        let hosted = users.compactMap { entry in entry.value.sessions.contains { $0.host == host } ? entry.key : nil }
        return reportingChanges(touched: hosted) { state in mutate(&state) }
    }

    /// Runs a change and reports, for the touched users and everyone whose stage
    /// or hand place moved, what is different afterwards.
    mutating func reportingChanges(touched: [UserID], isTouched: ((UserID) -> Bool)? = nil,
                                   _ mutate: (inout RoomState) -> Void) -> [RoomChange] {
        let contextBefore = currentContext()
        let beforeFacts = touched.map { user in users[user].map { facts(user, record: $0, in: contextBefore) } ?? UserFacts() }
        mutate(&self)
        return reportChanges(touched: touched, beforeFacts: beforeFacts, contextBefore: contextBefore, isTouched: isTouched)
    }

    /// The second half of `reportingChanges`, after the change: what is different now
    /// for the touched users (`beforeFacts` in the same order) and for everyone whose
    /// stage or hand place moved.
    func reportChanges(touched: [UserID], beforeFacts: [UserFacts], contextBefore: FactsContext,
                       isTouched: ((UserID) -> Bool)?) -> [RoomChange] {
        let contextAfter = currentContext()

        // Users whose stage or hand place may have moved without being touched.
        let touchedTest = isTouched ?? { touched.contains($0) }
        var moved: [UserID] = []
        for list in [contextBefore.stageWinners, contextAfter.stageWinners, contextBefore.handWinners, contextAfter.handWinners] {
            for user in list where !touchedTest(user) && !moved.contains(user) { moved.append(user) }
        }

        var changes: [RoomChange] = []
        var added: [UserID] = [], removed: [UserID] = []
        for (index, user) in touched.enumerated() {
            guard let record = users[user] else { continue }
            Self.emit(user, before: beforeFacts[index], after: facts(user, record: record, in: contextAfter),
                      into: &changes, stageAdded: &added, stageRemoved: &removed)
        }
        for user in moved {
            guard let record = users[user] else { continue }
            Self.emit(user, before: facts(user, record: record, in: contextBefore), after: facts(user, record: record, in: contextAfter),
                      into: &changes, stageAdded: &added, stageRemoved: &removed)
        }
        if !removed.isEmpty { changes.append(.coHostsRemoved(removed.sorted())) }
        if !added.isEmpty { changes.append(.coHostsAdded(added.sorted())) }
        return changes
    }

    /// What a change of `user`'s reward total by `change` reports.
    private func rewardChanges(_ user: UserID, _ change: Int64) -> [RoomChange] {
        guard change != 0, let total = users[user]?.rewardTotal else { return [] }
        if change > 0 && change <= Int64(Int32.max) { return [.userRewarded(user, amount: Int32(change), total: total)] }
        let record = users[user]
        return [.userUpdated(user, previousName: record?.name.value ?? "", previousRole: record?.role.value ?? .student)]
    }
}
