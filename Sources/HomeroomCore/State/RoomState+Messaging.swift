/// Messages, presence state, chat moderation and property revisions: the parts of
/// `apply` and `merge` that report `MessagingChange`s, and the views over them.
extension RoomState {
    // MARK: - History

    /// The history limit in force (the register, kept within 1...`MessageLog.maxLimit`).
    public var effectiveHistoryLimit: UInt32 { min(max(historyLimit.value, 1), MessageLog.maxLimit) }

    /// The floor a trim to `beforeMillis` sets: every message stamped before that moment is below it.
    public static func floorStamp(beforeMillis: UInt64) -> Stamp {
        let packed = beforeMillis >= (1 << 48) ? UInt64.max : beforeMillis << HybridTimestamp.logicalBits
        return Stamp(clock: HybridTimestamp(packed: packed, replica: ReplicaID(0)), sequence: 0)
    }

    mutating func addMessage(_ message: Message, messaging: inout [MessagingChange]) {
        var removed: [MessageKey] = []
        let insertion = messages.insert(message, limit: effectiveHistoryLimit, removed: &removed)
        if insertion == .added && !removed.contains(message.key) {
            messaging.append(.messageAdded(messages[message.key] ?? message))
        }
        removed.removeAll { $0 == message.key && insertion == .added }
        if !removed.isEmpty { messaging.append(.messagesRemoved(removed, floor: messages.floor)) }
    }

    /// The history as `user` may see it (every room message, and the peer messages it
    /// sent or received), oldest first. Each sender's messages of one conversation stay
    /// in the order it sent them (by `previous`), even when their stamps disagree (a
    /// sender that moved between nodes whose clocks differ).
    public func history(for user: UserID?) -> [Message] {
        let visible = messages.byStamp.filter { $0.isVisible(to: user) }
        // Effective stamp: never earlier than the sender's previous message in the conversation.
        var effective: [MessageKey: Stamp] = [:]
        effective.reserveCapacity(visible.count)
        func resolve(_ message: Message, depth: Int) -> Stamp {
            if let known = effective[message.key] { return known }
            var stamp = message.stamp
            if message.previous != 0, depth < 64,
               let previous = messages[MessageKey(sender: message.sender, counter: message.previous)],
               previous.recipient == message.recipient, previous.key.counter < message.key.counter {
                let before = resolve(previous, depth: depth + 1)
                if stamp < before { stamp = before }
            }
            effective[message.key] = stamp
            return stamp
        }
        for message in visible { _ = resolve(message, depth: 0) }
        return visible.sorted { a, b in
            let (x, y) = (effective[a.key]!, effective[b.key]!)
            if x != y { return x < y }
            if a.sender != b.sender { return a.key < b.key }
            return a.key.counter < b.key.counter
        }
    }

    /// This state as `user` may see it: peer messages between other users removed.
    /// What a node sends a client (joins, syncs); nil keeps room messages only.
    public func visible(to user: UserID?) -> RoomState {
        var view = self
        view.messages = messages.visible(to: user)
        return view
    }

    // MARK: - Chat moderation

    /// Whether `user` may send chat now: not muted itself, and the room not muted
    /// (teachers and assistants may always send).
    public func isChatMuted(_ user: UserID, role: Role) -> Bool {
        if users[user]?.chatMuted.value == true { return true }
        return chatMuted.value && !role.moderates
    }

    // MARK: - Presence

    /// A user's presence state as shown now (keys set by a live session of the user).
    public func presenceState(of user: UserID) -> [String: [UInt8]] {
        users[user]?.presenceState(deadIncarnations: deadIncarnations) ?? [:]
    }

    /// Users online now, with their presence state: what a client shows on joining.
    public func presenceSnapshot() -> [(user: UserID, state: [String: [UInt8]])] {
        users.keys.sorted().compactMap { user in
            isOnline(user) ? (user, presenceState(of: user)) : nil
        }
    }

    /// For users about to change sessions: their presence state now, to compare after.
    func watchPresence(_ candidates: [UserID]) -> [(UserID, [String: [UInt8]])] {
        candidates.compactMap { user in
            guard let record = users[user], !record.presence.isEmpty else { return nil }
            return (user, record.presenceState(deadIncarnations: deadIncarnations))
        }
    }

    func reportPresence(_ watched: [(UserID, [String: [UInt8]])], messaging: inout [MessagingChange]) {
        for (user, before) in watched {
            let after = presenceState(of: user)
            guard after != before else { continue }
            let keys = Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
            messaging.append(.presenceStateUpdated(user, keys: keys))
        }
    }

    /// `.userTimedOut` for each user the changes took offline whose node was declared down.
    func reportTimeouts(_ changes: [RoomChange], messaging: inout [MessagingChange]) {
        for case let .userLeft(user) in changes where users[user]?.isTimedOut(deadIncarnations: deadIncarnations) == true {
            messaging.append(.userTimedOut(user))
        }
    }

    // MARK: - Properties and revisions

    /// Merges one property write into a table by (revision, stamp); true when it won.
    @discardableResult
    public static func mergeProperty(_ table: inout [String: Register<PropertyValue>], _ key: String,
                                     _ incoming: Register<PropertyValue>) -> Bool {
        guard let existing = table[key] else {
            table[key] = incoming
            return true
        }
        guard existing.precedes(incoming) else { return false }
        table[key] = incoming
        return true
    }

    /// The conflict two writes of one property make, if they never saw each other:
    /// the one that loses the merge was not in the lineage of the one that wins. Only
    /// reported when the winner's lineage reaches back to the loser's revision (or to
    /// the key's first write), so an old write arriving late is not mistaken for one.
    public static func propertyConflict(_ scope: PropertyScope, _ key: String, existing: Register<PropertyValue>?,
                                        incoming: Register<PropertyValue>) -> PropertyConflict? {
        guard let existing, existing.stamp != .origin, incoming.stamp != .origin, existing.stamp != incoming.stamp else { return nil }
        let (kept, lost) = existing.precedes(incoming) ? (incoming, existing) : (existing, incoming)
        func info(_ register: Register<PropertyValue>) -> PropertyWriteInfo {
            PropertyWriteInfo(author: register.value.operatorID, revision: register.value.revision, dot: register.stamp.dot,
                              value: register.value.bytes)
        }
        // A write made under a newer lock grant wins by its fence: the older holder's write
        // is lost whatever the revisions say (unless the winner built on it).
        if (kept.value.fence?.fence ?? 0) > (lost.value.fence?.fence ?? 0) {
            guard !kept.value.lineage.contains(lost.stamp.dot) else { return nil }
            return PropertyConflict(scope: scope, key: key, kept: info(kept), lost: info(lost), lostDots: [lost.stamp.dot])
        }
        let keptRevision = kept.value.revision
        // Writes from before revisions existed cannot be placed.
        guard keptRevision > 0, lost.value.revision > 0, lost.value.revision <= keptRevision else { return nil }
        // The lost write, then what it built on (lineage[i] has revision lost - 1 - i).
        var lostDots: [Dot] = []
        for (index, dot) in ([lost.stamp.dot] + lost.value.lineage).enumerated() {
            guard UInt64(index) < lost.value.revision else { break }
            let revision = lost.value.revision - UInt64(index)
            if dot == kept.stamp.dot || kept.value.lineage.contains(dot) { break }  // shared history from here on
            guard kept.value.reaches(revision: revision, of: keptRevision) else { break }
            lostDots.append(dot)
        }
        guard !lostDots.isEmpty, lostDots[0] == lost.stamp.dot else { return nil }
        return PropertyConflict(scope: scope, key: key, kept: info(kept), lost: info(lost), lostDots: lostDots)
    }

    /// Whether the write with `dot` (revision `revision`) of a property is part of what
    /// the property holds now: true when it is the current write or in its lineage,
    /// false when it was overwritten by a write that never saw it, nil when that cannot
    /// be told (the lineage does not reach back that far) or the write has not arrived.
    /// A write with lock fence `fence` is overwritten (false) once the key holds a write of a larger fence.
    public func propertyWrite(_ dot: Dot, revision: UInt64, scope: PropertyScope, key: String, fence: UInt64 = 0) -> Bool? {
        let register: Register<PropertyValue>?
        switch scope {
        case .room: register = properties[key]
        case let .user(user): register = users[user]?.properties[key]
        }
        guard let current = register, seen.contains(dot) else { return nil }
        if current.stamp.dot == dot || current.value.lineage.contains(dot) { return true }
        if (current.value.fence?.fence ?? 0) > fence { return false }
        if revision == 0 || current.value.revision < revision { return nil }
        return current.value.reaches(revision: revision, of: current.value.revision) ? false : nil
    }

    /// What the origin of a write fills in before stamping it: a property write gets
    /// the key's next revision and the lineage of what it replaces; a lock write the fence;
    /// an unmute the mute it ends.
    public func prepare(_ write: Write, origin: ReplicaID, nowMillis: UInt64) -> Write {
        var prepared = write
        if autoStages(write) {
            // The node acts on the room's rule: the raise becomes the author's promotion, a
            // stage write any replica (a v1 client too) applies as written.
            prepared.authorRole = .system
            prepared.operation = .setStage(user: write.author, on: true)
            return prepared
        }
        switch write.operation {
        case .acquireLock, .releaseLock:
            prepared.operation = prepareLock(write.operation, author: write.author, origin: origin, nowMillis: nowMillis)
        case let .setDeviceMuted(device, muted, _):
            // An unmute ends the mute this origin sees, and only that one (`RoomGate`); none: it changes nothing.
            let gate = mute(device)
            prepared.operation = .setDeviceMuted(device: device, muted: muted, ending: !muted && gate.isClosed ? gate.closedAt : .origin)
        case let .answerInvitation(accept, _, _):
            prepared.operation = prepareAnswer(accept, author: write.author)
        case let .setHandRaising(allowed, autoStage, _):
            prepared.operation = .setHandRaising(allowed: allowed, autoStage: autoStage,
                                                 ending: allowed && handRaising.isClosed ? handRaising.closedAt : .origin)
        case let .setRoomProperty(key, value, cause, revision):
            prepared.operation = .setRoomProperty(key: key, value: value, cause: cause, revision: Self.next(revision, after: properties[key]))
        case let .setUserProperty(user, key, value, cause, revision):
            prepared.operation = .setUserProperty(user: user, key: key, value: value, cause: cause,
                                                  revision: Self.next(revision, after: users[user]?.properties[key]))
        case let .leaveSession(user, session, nil):
            // The start goes with the end, so a replica that gets the end first, after the
            // start was folded away elsewhere, keeps no record of it.
            if let started = users[user]?.sessions.first(where: { $0.id == session })?.started, started != Stamp.maxedOut {
                prepared.operation = .leaveSession(user: user, session: session, started: started)
            } else if let copy = users[user]?.sessions.last(where: { SessionIDs.base($0.id) == SessionIDs.base(session) && $0.ended == nil
                                                                   && $0.started != Stamp.maxedOut }) {
                // The client leaves by its original id, folded away since a refutation copied it: end the copy.
                prepared.operation = .leaveSession(user: user, session: copy.id, started: copy.started)
            }
        default:
            break
        }
        return prepared
    }

    static func next(_ revision: PropertyRevision, after current: Register<PropertyValue>?) -> PropertyRevision {
        var next = revision
        guard let current, current.stamp != .origin else {
            next.assigned = 1
            next.lineage = []
            return next
        }
        next.assigned = current.value.revision + 1
        next.lineage = [current.stamp.dot] + current.value.lineage.prefix(PropertyRevision.lineageLength - 1)
        return next
    }

    /// The whole set's revision (Signaling's "major revision"): the sum of its keys'
    /// revisions, deleted keys included. Every write adds one at its origin, it never
    /// goes down (a key's revision never does, and keys are never removed), and it is
    /// a function of the state, so replicas that hold the same properties agree on it.
    /// Concurrent writes to one key merge to one revision step, so after a partition
    /// the set revision counts the writes that stand, not every write made.
    public func propertySetRevision(scope: PropertyScope) -> UInt64 {
        let keys: [String: Register<PropertyValue>]?
        switch scope {
        case .room: keys = properties
        case let .user(user): keys = users[user]?.properties
        }
        return keys?.values.reduce(0) { $0 &+ $1.value.revision } ?? 0
    }

    /// The revision a property key has here (0 when never written).
    public func propertyRevision(scope: PropertyScope, key: String) -> UInt64 {
        switch scope {
        case .room: return properties[key]?.value.revision ?? 0
        case let .user(user): return users[user]?.properties[key]?.value.revision ?? 0
        }
    }
}
