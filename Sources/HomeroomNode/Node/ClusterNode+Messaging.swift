import HomeroomCore
import HomeroomWire
import HomeroomSupport

/// Messaging in the node (docs/MESSAGING.md): peer messages on private topics, and
/// the history's age limit.
extension ClusterNode {
    /// The origin this node sequences peer messages under: its id with the top bit flipped.
    public var privateOrigin: ReplicaID { replica.privateForm }

    /// Publishes deltas to clients: public ones on the room topic, each peer message on
    /// the private topics of its sender and its recipient only.
    func publishPrivately(room: String, deltas: [Delta]) {
        var open: [Delta] = []
        var perUser: [UserID: [Delta]] = [:]
        for delta in deltas {
            guard let recipient = delta.operation.peerRecipient else {
                open.append(delta)
                continue
            }
            perUser[recipient, default: []].append(delta)
            if delta.author != recipient { perUser[delta.author, default: []].append(delta) }
        }
        if !open.isEmpty {
            let message = WireCodec.encode(envelope(room: room, .deltaBatch(WireMessage.DeltaBatch(origin: open[0].origin, deltas: open))))
            publishToClients(room: room, message)
        }
        for (user, batch) in perUser {
            let message = WireCodec.encode(envelope(room: room, .deltaBatch(WireMessage.DeltaBatch(origin: batch[0].origin, deltas: batch))))
            publishToClients(room: room, user: user, message)
        }
    }

    /// Passes the peer messages of a repair patch to their two users' private topics.
    func publishPrivately(room: String, patch: RoomState) {
        var perUser: [UserID: [Message]] = [:]
        for message in patch.messages.entries.values {
            guard let recipient = message.recipient else { continue }
            perUser[recipient, default: []].append(message)
            if message.sender != recipient { perUser[message.sender, default: []].append(message) }
        }
        for (user, messages) in perUser {
            var own = RoomState(roomID: room)
            own.messages = MessageLog(messages: messages, floor: patch.messages.floor)
            let message = WireCodec.encode(envelope(room: room, .patch(own)))
            publishToClients(room: room, user: user, message)
        }
    }

    /// Age retention: messages older than `messageRetentionSeconds` leave the history,
    /// through a `trim_history` delta so every replica drops the same ones. The node
    /// with the smallest id among the live ones trims; the others step in when a
    /// room's oldest message is 30 s overdue (that node is gone or cut off). At most
    /// one trim per room every 5 s.
    func trimExpiredHistory() {
        let retention = config.messageRetentionSeconds * 1_000
        guard retention > 0 else { return }
        let now = wallMillis()
        let monotonic = WallClock.monotonicMillis()
        guard now > retention else { return }
        let cutoff = now - retention
        let due = state.withLock { state -> [String] in
            let leader = state.peers.alive.filter { $0.status == .alive }.allSatisfy { replica < $0.node }
            state.refreshHistoryRooms()
            return state.historyRooms.sorted().compactMap { id in
                guard let oldest = state.rooms[id]?.messages.oldest, oldest.sentAtMillis < cutoff else { return nil }
                if !leader && oldest.sentAtMillis + 30_000 >= cutoff { return nil }
                if let last = state.lastTrim[id], monotonic &- last < 5_000 { return nil }
                return id
            }
        }
        for room in due {
            let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: .trimHistory(beforeMillis: cutoff))
            if sequenceSystemWrite(room: room, write) {
                state.withLock { $0.lastTrim[room] = monotonic }
                metrics.add("history_trims_total")
            }
        }
    }

    /// A refuted session comes back under a new id: the presence state its client set
    /// (shown only while the session that wrote it lives) moves with it.
    func carryPresence(room: String, user: UserID, from old: SessionID, to new: SessionID) {
        let items = state.withLock { state -> [PresenceItem] in
            guard let record = state.rooms[room]?.users[user] else { return [] }
            return record.presence.compactMap { key, register in
                register.value.session == old && register.value.bytes != nil ? PresenceItem(key: key, value: register.value.bytes) : nil
            }.sorted { $0.key < $1.key }
        }
        guard !items.isEmpty else { return }
        sequenceSystemWrite(room: room, Write(author: "node:\(name)", authorRole: .system, authorCounter: 0,
                                              operation: .setPresenceState(user: user, session: new, items: items)))
    }
}
