extension RoomState {
    /// Applies one delta. Pure and deterministic: the same set of deltas, in any
    /// order and with any duplicates, gives the same state on every replica.
    public mutating func apply(_ delta: Delta) -> ApplyOutcome {
        guard seen.insert(delta.dot) else { return .duplicate }
        if let rejection = Authority.check(author: delta.author, role: delta.authorRole, operation: delta.operation) {
            return .rejected(rejection)
        }
        return .applied(perform(delta))
    }

    private mutating func perform(_ delta: Delta) -> [RoomChange] {
        let stamp = delta.stamp
        switch delta.operation {
        // Fast paths: one user's own registers; stage and hand order unchanged.
        case let .setDevice(user, device, on):
            return updateUser(user, keepsRanks: true) { record in
                if device == .camera { record.cameraDevice.write(on, at: stamp) } else { record.microphoneDevice.write(on, at: stamp) }
            }
        case let .setPrivilege(user, device, allowed):
            return updateUser(user, keepsRanks: true) { record in
                if device == .camera { record.cameraPrivilege.write(allowed, at: stamp) } else { record.microphonePrivilege.write(allowed, at: stamp) }
            }
        case let .setBoard(user, granted):
            return updateUser(user, keepsRanks: true) { record in record.board.write(granted, at: stamp) }
        case let .setName(user, name):
            return updateUser(user, keepsRanks: true) { record in record.name.write(name, at: stamp) }
        case let .reward(user, amount):
            return updateUser(user, keepsRanks: true) { record in
                record.addReward(RewardKey(author: delta.author, authorCounter: delta.authorCounter), RewardEntry(amount: amount, stamp: stamp))
            }
        case let .leaveSession(user, session):
            return updateUser(user, keepsRanks: true) { record in record.endSession(session, at: stamp) }
        case let .setUserProperty(user, key, value, cause):
            var changes: [RoomChange] = []
            var won = false
            _ = updateUser(user, keepsRanks: true) { record in
                let written = Register(PropertyValue(bytes: value, operatorID: delta.author, cause: cause), stamp: stamp)
                if record.properties[key] == nil { record.properties[key] = written; won = true } else { won = record.properties[key]!.merge(written) }
            }
            if won { changes.append(.userPropertiesUpdated(user, keys: [key])) }
            return changes

        // Paths that may move someone on or off the stage or the hand list.
        case let .joinSession(user, session, name, role, host, incarnation):
            return updateUser(user, keepsRanks: type.value != .oneToOne) { record in
                record.role.write(role, at: stamp)
                record.name.write(name, at: stamp)
                record.upsertSession(SessionRecord(id: session, host: host, incarnation: incarnation, started: stamp))
            }
        case let .setStage(user, on):
            return updateUser(user, keepsRanks: false) { record in record.stage.write(on, at: stamp) }
        case let .setHand(user, raised):
            return updateUser(user, keepsRanks: false) { record in record.hand.write(raised, at: stamp) }
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
        case let .replicaDown(replica, incarnation):
            guard deadIncarnations[replica].map({ $0 < incarnation }) ?? true else { return [] }
            return roomWide(presenceOnHost: replica) { state in
                state.deadIncarnations[replica] = max(state.deadIncarnations[replica] ?? 0, incarnation)
            }
        case let .setRoomProperty(key, value, cause):
            let written = Register(PropertyValue(bytes: value, operatorID: delta.author, cause: cause), stamp: stamp)
            let won: Bool
            if properties[key] == nil { properties[key] = written; won = true } else { won = properties[key]!.merge(written) }
            return won ? [.roomPropertiesUpdated(keys: [key])] : []
        }
    }

    /// Changes one user's record and reports what that changed. `keepsRanks` says
    /// the change cannot move anyone on or off the stage or the hand list.
    private mutating func updateUser(_ user: UserID, keepsRanks: Bool, _ mutate: (inout UserRecord) -> Void) -> [RoomChange] {
        if keepsRanks {
            let onStage = isOnStage(user)
            let handUp = isHandUp(user)
            let record = users[user] ?? UserRecord()
            let before = facts(record, onStage: onStage, handUp: handUp, muteAll: muteAll, dead: deadIncarnations)
            mutate(&users[user, default: UserRecord()])
            let after = facts(users[user]!, onStage: onStage, handUp: handUp, muteAll: muteAll, dead: deadIncarnations)
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
    mutating func reportingChanges(touched: [UserID], _ mutate: (inout RoomState) -> Void) -> [RoomChange] {
        let contextBefore = currentContext()
        var before: [UserID: UserFacts] = [:]
        for user in touched { before[user] = currentFacts(user) }
        mutate(&self)
        let contextAfter = currentContext()

        var affected = touched
        var seenUsers = Set(touched)
        func note(_ list: [UserID]) { for user in list where seenUsers.insert(user).inserted { affected.append(user) } }
        note(contextBefore.stageWinners)
        note(contextAfter.stageWinners)
        note(contextBefore.handWinners)
        note(contextAfter.handWinners)

        var changes: [RoomChange] = []
        var added: [UserID] = [], removed: [UserID] = []
        for user in affected {
            guard let record = users[user] else { continue }
            let old = before[user] ?? facts(user, record: record, in: contextBefore)
            let new = facts(user, record: record, in: contextAfter)
            Self.emit(user, before: old, after: new, into: &changes, stageAdded: &added, stageRemoved: &removed)
        }
        if !removed.isEmpty { changes.append(.coHostsRemoved(removed.sorted())) }
        if !added.isEmpty { changes.append(.coHostsAdded(added.sorted())) }
        return changes
    }
}
