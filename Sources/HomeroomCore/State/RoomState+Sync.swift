extension RoomState {
    /// Everything a replica whose version vector is `seen` lacks, as a compact
    /// patch: the latest value of each register it is missing, not the history.
    /// `missing(since: .empty)` is the full snapshot.
    public func missing(since other: VersionVector) -> RoomState {
        var patch = RoomState(roomID: roomID)
        let check = SeenCheck(other)
        func take<V>(_ source: Register<V>, _ target: inout Register<V>) {
            if !check.contains(source.stamp.dot) { target = source }
        }
        take(name, &patch.name)
        take(type, &patch.type)
        take(stageLimit, &patch.stageLimit)
        take(handLimit, &patch.handLimit)
        take(schedule, &patch.schedule)
        take(carousel, &patch.carousel)
        if !other.contains(classState.stamp.dot) { patch.classState = classState }
        if !other.contains(muteAll.dot) { patch.muteAll = muteAll }
        // A handful of entries, one per node: always sent whole.
        patch.deadIncarnations = deadIncarnations
        for (key, register) in properties where !other.contains(register.stamp.dot) {
            patch.properties[key] = register
        }
        for (id, register) in breakoutGroups where !other.contains(register.stamp.dot) { patch.breakoutGroups[id] = register }
        for (user, register) in breakoutAssignments where !other.contains(register.stamp.dot) { patch.breakoutAssignments[user] = register }
        if !other.contains(breakoutEnded.dot) { patch.breakoutEnded = breakoutEnded }
        for (name, record) in locks where (record.grant != nil && !other.contains(record.grantStamp.dot))
            || (record.endedFence > 0 && !other.contains(record.endedStamp.dot)) {
            patch.locks[name] = record
        }
        take(chatMuted, &patch.chatMuted)
        patch.cameraMute = cameraMute.missing(other.contains)
        patch.microphoneMute = microphoneMute.missing(other.contains)
        patch.handRaising = handRaising.missing(other.contains)
        take(autoStage, &patch.autoStage)
        for (user, invitation) in invitations where invitation.stamps.contains(where: { !other.contains($0.dot) }) {
            patch.invitations[user] = invitation
        }
        take(historyLimit, &patch.historyLimit)
        patch.retiredGenerations = retiredGenerations
        patch.messages = messages.missing(from: other)
        for (user, record) in users {
            if let missing = record.missing(from: check) { patch.users[user] = missing }
        }
        patch.seen = seen
        patch.rebuildIndexes()
        return patch
    }

    /// The full state, ready to send to a replica that has nothing.
    ///
    /// Equal to `missing(since: .empty)`. Almost always that is this state itself
    /// (every register written or at its default), and then this shares its storage
    /// instead of copying every user: a 100,000-user room's snapshot used to cost a
    /// new record per user, under the node's lock.
    public func snapshot() -> RoomState { isOwnSnapshot ? self : missing(since: .empty) }

    /// Whether `missing(since: .empty)` would keep everything: no register, message or
    /// user that only a never-written (sequence 0) stamp stands for.
    var isOwnSnapshot: Bool {
        let fresh = RoomState(roomID: roomID)
        return name.isWritten(or: fresh.name) && type.isWritten(or: fresh.type) && stageLimit.isWritten(or: fresh.stageLimit)
            && handLimit.isWritten(or: fresh.handLimit) && schedule.isWritten(or: fresh.schedule)
            && carousel.isWritten(or: fresh.carousel)
            && (classState.stamp.sequence != 0 || classState == fresh.classState)
            && (muteAll.sequence != 0 || muteAll == .origin)
            && properties.values.allSatisfy { $0.stamp.sequence != 0 }
            && (breakoutEnded.sequence != 0 || breakoutEnded == .origin)
            && breakoutGroups.values.allSatisfy { $0.stamp.sequence != 0 } && breakoutAssignments.values.allSatisfy { $0.stamp.sequence != 0 }
            && locks.values.allSatisfy { ($0.grant == nil || $0.grantStamp.sequence != 0) && ($0.endedFence == 0 || $0.endedStamp.sequence != 0) }
            && chatMuted.isWritten(or: fresh.chatMuted) && historyLimit.isWritten(or: fresh.historyLimit)
            && cameraMute.stamps.allSatisfy { $0.sequence != 0 || $0 == .origin }
            && microphoneMute.stamps.allSatisfy { $0.sequence != 0 || $0 == .origin }
            && handRaising.stamps.allSatisfy { $0.sequence != 0 || $0 == .origin } && autoStage.isWritten(or: fresh.autoStage)
            && invitations.values.allSatisfy { $0.stamps.allSatisfy { $0.sequence != 0 } }
            && messages.entries.values.allSatisfy { $0.stamp.sequence != 0 }
            && users.values.allSatisfy { $0.isOwnSnapshot }
    }

    /// Joins a patch (or a whole snapshot) into this state and reports the changes.
    @discardableResult
    public mutating func merge(_ patch: RoomState) -> [RoomChange] {
        var ignored: [MessagingChange] = []
        return merge(patch, messaging: &ignored)
    }

    /// Joins a patch and also reports what it changed in messaging into `messaging`.
    @discardableResult
    public mutating func merge(_ incoming: RoomState, messaging: inout [MessagingChange]) -> [RoomChange] {
        precondition(incoming.roomID == roomID, "merging room \(incoming.roomID) into \(roomID)")
        // Retired ids (see `retiredGenerations`): the patch's retirements are taken first,
        // and nothing of a retired id is taken from it.
        var patch = incoming
        var purgeHere: [UserID] = []
        let retiredRaised = incoming.retiredGenerations.contains { hash, generation in retiredGenerations[hash].map { $0 < generation } ?? true }
        if retiredRaised {
            for (hash, generation) in incoming.retiredGenerations { retiredGenerations[hash] = max(retiredGenerations[hash] ?? 0, generation) }
            purgeHere = usersHoldingRetired(Self.retiredTest(retiredGenerations))
        }
        if !retiredGenerations.isEmpty {
            let retired = Self.retiredTest(retiredGenerations)
            if patch.seen.origins.keys.contains(where: retired) || patch.deadIncarnations.keys.contains(where: retired)
                || patch.users.values.contains(where: { $0.holdsRetired(retired) }) {
                patch.retiredGenerations = retiredGenerations
                patch.purgeRetired(users: Array(patch.users.keys))   // the patch's own items decide its entries
            }
        }
        var touched = Array(patch.users.keys)
        var hostedOnDeadReplica: [UserID] = []
        // A set beside the list: a node declared down in a lecture hall hosts tens of thousands.
        var hostedSet = Set<UserID>()
        for user in purgeHere where patch.users[user] == nil && hostedSet.insert(user).inserted { hostedOnDeadReplica.append(user) }
        for (replica, incarnation) in patch.deadIncarnations where deadIncarnations[replica].map({ $0 < incarnation }) ?? true {
            for (user, record) in users where patch.users[user] == nil && record.sessions.contains(where: { $0.host == replica })
                && hostedSet.insert(user).inserted {
                hostedOnDeadReplica.append(user)
            }
        }
        touched.append(contentsOf: hostedOnDeadReplica)
        let isTouched: (UserID) -> Bool = { patch.users[$0] != nil || hostedSet.contains($0) }
        // What users showed before, taken before anything changes: for the patch's users
        // in the loop below, one lookup each (a 100,000-user snapshot used to hash
        // every id six times), for the others here.
        let contextBefore = currentContext()
        let deadBefore = deadIncarnations
        var beforeFacts: [UserFacts] = []
        beforeFacts.reserveCapacity(touched.count)
        let hostedBefore = hostedOnDeadReplica.map { user in users[user].map { facts(user, record: $0, in: contextBefore) } ?? UserFacts() }
        // Presence state shows while its session lives: watch everyone whose sessions may change.
        var presenceWatch = watchPresence(hostedOnDeadReplica)
        let mutesBefore = patch.users.compactMap { user, record in
            record.hasActivity && record.chatMuted.stamp != .origin ? (user, users[user]?.chatMuted.value ?? false) : nil
        }
        var conflicts: [PropertyConflict] = []
        for (key, register) in patch.properties {
            if let conflict = Self.propertyConflict(.room, key, existing: properties[key], incoming: register) { conflicts.append(conflict) }
        }
        for (user, record) in patch.users where record.hasActivity {
            for (key, register) in record.properties {
                if let conflict = Self.propertyConflict(.user(user), key, existing: users[user]?.properties[key], incoming: register) {
                    conflicts.append(conflict)
                }
            }
        }
        let roomMutedBefore = chatMuted.value
        let devicesMutedBefore = Device.allCases.map { mute($0).isClosed }
        let handRaisingBefore = handRaisingPolicy
        let limitBefore = effectiveHistoryLimit
        var addedMessages: [MessageKey] = []
        var removedMessages: [MessageKey] = []
        var propertyKeys: [String] = []
        var userPropertyChanges: [RoomChange] = []

        var roomInfoChanged = name.merge(patch.name)
        roomInfoChanged = type.merge(patch.type) || roomInfoChanged
        roomInfoChanged = stageLimit.merge(patch.stageLimit) || roomInfoChanged
        roomInfoChanged = handLimit.merge(patch.handLimit) || roomInfoChanged
        roomInfoChanged = schedule.merge(patch.schedule) || roomInfoChanged
        roomInfoChanged = carousel.merge(patch.carousel) || roomInfoChanged
        let classStateChanged = classState.merge(patch.classState)
        var muted = false
        if muteAll < patch.muteAll { muteAll = patch.muteAll; muted = true }
        for (replica, incarnation) in patch.deadIncarnations {
            deadIncarnations[replica] = max(deadIncarnations[replica] ?? 0, incarnation)
        }
        for (key, register) in patch.properties where Self.mergeProperty(&properties, key, register, bytes: &propertyBytes) {
            propertyKeys.append(key)
        }
        var breakoutChanged = false
        if breakoutEnded < patch.breakoutEnded { breakoutEnded = patch.breakoutEnded; breakoutChanged = true }
        for (id, register) in patch.breakoutGroups where breakoutEnded < register.stamp {
            if breakoutGroups[id, default: Register(nil, stamp: .origin)].merge(register) { breakoutChanged = true }
        }
        for (user, register) in patch.breakoutAssignments where breakoutEnded < register.stamp {
            if breakoutAssignments[user, default: Register(nil, stamp: .origin)].merge(register) { breakoutChanged = true }
        }
        if breakoutChanged { dropEndedBreakout() }
        var lockNames: [String] = []
        for (name, record) in patch.locks where record != LockRecord() && locks[name, default: LockRecord()].merge(record) {
            lockNames.append(name)
        }
        chatMuted.merge(patch.chatMuted)
        cameraMute.merge(patch.cameraMute)
        microphoneMute.merge(patch.microphoneMute)
        // Before the users: their hands are placed by the gate as merged.
        let handGateChanged = handRaising.merge(patch.handRaising)
        autoStage.merge(patch.autoStage)
        var invitationChanges: [RoomChange] = []
        for user in patch.invitations.keys.sorted() { invitationChanges += mergeInvitation(user, patch.invitations[user]!) }
        historyLimit.merge(patch.historyLimit)
        messages.merge(patch.messages, limit: effectiveHistoryLimit, added: &addedMessages, removed: &removedMessages)
        // A snapshot into a (nearly) empty replica: grow once, not by doubling.
        if patch.users.count > users.count { users.reserveCapacity(users.count + patch.users.count) }
        for (user, record) in patch.users {
            if let index = users.index(forKey: user) {
                if record.hasActivity, !record.properties.isEmpty {
                    let existing = users.values[index].properties
                    let wonKeys = record.properties.compactMap { key, register in existing[key].map { $0.precedes(register) } ?? true ? key : nil }
                    if !wonKeys.isEmpty { userPropertyChanges.append(.userPropertiesUpdated(user, keys: wonKeys.sorted())) }
                }
                beforeFacts.append(facts(user, record: users.values[index], in: contextBefore))
                if !users.values[index].presence.isEmpty || !record.presence.isEmpty {
                    presenceWatch.append((user, users.values[index].presenceState(deadIncarnations: deadBefore)))
                }
                // The patch's keys are the only ones the merge can change.
                let patchKeys = record.properties.keys
                let bytesBefore = patchKeys.isEmpty ? 0 : Self.propertyBytes(of: patchKeys, in: users.values[index].properties)
                users.values[index].merge(record)
                if !patchKeys.isEmpty { propertyBytes += Self.propertyBytes(of: patchKeys, in: users.values[index].properties) - bytesBefore }
                // A record without activity is on no stage or hand list, before or after.
                if users.values[index].hasActivity { reindex(user) }
            } else {
                if record.hasActivity, !record.properties.isEmpty {
                    userPropertyChanges.append(.userPropertiesUpdated(user, keys: record.properties.keys.sorted()))
                }
                beforeFacts.append(UserFacts())
                if !record.presence.isEmpty { presenceWatch.append((user, [:])) }
                // A user new here is the patch's record (the join with an empty record), shared.
                users[user] = record.isCanonical ? record : UserRecord.merged(record)
                if record.hasActivity, !record.properties.isEmpty, let table = users[user]?.properties {
                    propertyBytes += Self.propertyBytes(of: table.keys, in: table)
                }
                if record.hasActivity { reindex(user) }
            }
        }
        if handGateChanged { reindexHands() }
        seen.formUnion(patch.seen)
        // Entries are dropped with the room scanned only when this patch retired something here.
        if !retiredGenerations.isEmpty { purgeRetired(users: purgeHere, dropsEntries: !purgeHere.isEmpty || retiredRaised) }
        beforeFacts.append(contentsOf: hostedBefore)
        var changes = reportChanges(touched: touched, beforeFacts: beforeFacts, contextBefore: contextBefore, isTouched: isTouched)
        // Messaging, in a fixed order: limit, mutes, history, presence, timeouts, conflicts.
        if effectiveHistoryLimit != limitBefore { messaging.append(.historyLimitUpdated(effectiveHistoryLimit)) }
        if chatMuted.value != roomMutedBefore { messaging.append(.chatMuteUpdated(user: nil, muted: chatMuted.value)) }
        for (user, before) in mutesBefore.sorted(by: { $0.0 < $1.0 }) {
            let after = users[user]?.chatMuted.value ?? false
            if after != before { messaging.append(.chatMuteUpdated(user: user, muted: after)) }
        }
        if !removedMessages.isEmpty { messaging.append(.messagesRemoved(removedMessages, floor: messages.floor)) }
        let added = addedMessages.compactMap { messages[$0] }.sorted { $0.stamp < $1.stamp }
        for message in added { messaging.append(.messageAdded(message)) }
        reportPresence(presenceWatch.sorted { $0.0 < $1.0 }, messaging: &messaging)
        reportTimeouts(changes, messaging: &messaging)
        for conflict in conflicts { messaging.append(.propertyConflict(conflict)) }
        var head: [RoomChange] = []
        if roomInfoChanged { head.append(.roomInfoUpdated) }
        if classStateChanged { head.append(.classStateUpdated(classState.state)) }
        if muted { head.append(.allMicrophonesMuted) }
        for (device, before) in zip(Device.allCases, devicesMutedBefore) where mute(device).isClosed != before {
            head.append(.deviceMuteUpdated(device, muted: !before))
        }
        if handRaisingPolicy != handRaisingBefore { head.append(.handRaisingUpdated(handRaisingPolicy)) }
        head += invitationChanges
        if !propertyKeys.isEmpty { head.append(.roomPropertiesUpdated(keys: propertyKeys.sorted())) }
        if !lockNames.isEmpty { head.append(.locksUpdated(names: lockNames.sorted())) }
        if breakoutChanged { head.append(.breakoutUpdated) }
        changes.insert(contentsOf: head, at: 0)
        changes.append(contentsOf: userPropertyChanges)
        return changes
    }
}
