extension RoomState {
    /// Everything a replica whose version vector is `seen` lacks, as a compact
    /// patch: the latest value of each register it is missing, not the history.
    /// `missing(since: .empty)` is the full snapshot.
    public func missing(since other: VersionVector) -> RoomState {
        var patch = RoomState(roomID: roomID)
        func take<V>(_ source: Register<V>, _ target: inout Register<V>) {
            if !other.contains(source.stamp.dot) { target = source }
        }
        take(name, &patch.name)
        take(type, &patch.type)
        take(stageLimit, &patch.stageLimit)
        take(handLimit, &patch.handLimit)
        take(schedule, &patch.schedule)
        if !other.contains(classState.stamp.dot) { patch.classState = classState }
        if !other.contains(muteAll.dot) { patch.muteAll = muteAll }
        // A handful of entries, one per node: always sent whole.
        patch.deadIncarnations = deadIncarnations
        for (key, register) in properties where !other.contains(register.stamp.dot) {
            patch.properties[key] = register
        }
        for (user, record) in users {
            if let missing = record.missing(from: other) { patch.users[user] = missing }
        }
        patch.seen = seen
        patch.rebuildIndexes()
        return patch
    }

    /// The full state, ready to send to a replica that has nothing.
    public func snapshot() -> RoomState { missing(since: .empty) }

    /// Joins a patch (or a whole snapshot) into this state and reports the changes.
    @discardableResult
    public mutating func merge(_ patch: RoomState) -> [RoomChange] {
        precondition(patch.roomID == roomID, "merging room \(patch.roomID) into \(roomID)")
        var touched = Array(patch.users.keys)
        var hostedOnDeadReplica: [UserID] = []
        for (replica, incarnation) in patch.deadIncarnations where deadIncarnations[replica].map({ $0 < incarnation }) ?? true {
            for (user, record) in users where patch.users[user] == nil && record.sessions.contains(where: { $0.host == replica })
                && !hostedOnDeadReplica.contains(user) {
                hostedOnDeadReplica.append(user)
            }
        }
        touched.append(contentsOf: hostedOnDeadReplica)
        let isTouched: (UserID) -> Bool = { patch.users[$0] != nil || hostedOnDeadReplica.contains($0) }
        var roomInfoChanged = false
        var classStateChanged = false
        var muted = false
        var propertyKeys: [String] = []
        var userPropertyChanges: [RoomChange] = []
        var changes = reportingChanges(touched: touched, isTouched: isTouched) { state in
            roomInfoChanged = state.name.merge(patch.name)
            roomInfoChanged = state.type.merge(patch.type) || roomInfoChanged
            roomInfoChanged = state.stageLimit.merge(patch.stageLimit) || roomInfoChanged
            roomInfoChanged = state.handLimit.merge(patch.handLimit) || roomInfoChanged
            roomInfoChanged = state.schedule.merge(patch.schedule) || roomInfoChanged
            classStateChanged = state.classState.merge(patch.classState)
            if state.muteAll < patch.muteAll { state.muteAll = patch.muteAll; muted = true }
            for (replica, incarnation) in patch.deadIncarnations {
                state.deadIncarnations[replica] = max(state.deadIncarnations[replica] ?? 0, incarnation)
            }
            for (key, register) in patch.properties {
                if state.properties[key] == nil {
                    state.properties[key] = register
                    propertyKeys.append(key)
                } else if state.properties[key]!.merge(register) {
                    propertyKeys.append(key)
                }
            }
            for (user, record) in patch.users {
                if record.hasActivity, !record.properties.isEmpty {
                    let existing = state.users[user]?.properties
                    let wonKeys = record.properties.compactMap { key, register in
                        existing?[key].map { $0.stamp < register.stamp } ?? true ? key : nil
                    }
                    if !wonKeys.isEmpty { userPropertyChanges.append(.userPropertiesUpdated(user, keys: wonKeys.sorted())) }
                }
                state.users[user, default: UserRecord()].merge(record)
                state.reindex(user)
            }
            state.seen.formUnion(patch.seen)
        }
        var head: [RoomChange] = []
        if roomInfoChanged { head.append(.roomInfoUpdated) }
        if classStateChanged { head.append(.classStateUpdated(classState.state)) }
        if muted { head.append(.allMicrophonesMuted) }
        if !propertyKeys.isEmpty { head.append(.roomPropertiesUpdated(keys: propertyKeys.sorted())) }
        changes.insert(contentsOf: head, at: 0)
        changes.append(contentsOf: userPropertyChanges)
        return changes
    }
}
