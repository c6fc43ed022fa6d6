import HomeroomCore
import HomeroomWire

extension ClusterNode {
    /// One request on the REP socket: decode, dispatch, encode the reply. Never throws,
    /// never crashes on bad input: every failure is an `ErrorReply` with a code.
    func handleRequest(_ bytes: [UInt8]) -> [UInt8] {
        let request: WireEnvelope
        do {
            request = try WireCodec.decode(bytes, limits: config.limits)
        } catch {
            metrics.add("requests_rejected_total{reason=\"\(error.code)\"}")
            logger.debug("undecodable request", ["error": "\(error)"])
            var reply = Self.errorEnvelope(code: error.code, message: error.description)
            if case .unsupportedVersion = error {
                reply.message = .error(WireMessage.ErrorReply(code: error.code, message: error.description, supportedVersion: WireProtocol.version))
            }
            return WireCodec.encode(reply)
        }
        let room = request.roomID
        if request.sender.rawValue != 0, state.withLock({ $0.faults.cuts(request.sender) }) {
            return WireCodec.encode(Self.errorEnvelope(code: "unavailable", message: "link cut by fault injection", room: room))
        }
        let reply: WireMessage
        switch request.message {
        case let .heartbeat(hello):
            // Sender 0 is a client asking where this node publishes; only nodes join the cluster.
            if request.sender.rawValue != 0 { heard(hello) }
            reply = .heartbeat(ownHeartbeat())
        case let .writeRequest(write):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            reply = .writeAck(handleWrite(room: room, write))
        case let .joinRequest(join):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            reply = handleJoin(room: room, join)
        case let .syncRequest(sync):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            let (patch, seen) = state.withLock { state -> (RoomState, VersionVector) in
                let current = state.rooms[room] ?? RoomState(roomID: room)
                return (current.missing(since: sync.seen), current.seen)
            }
            reply = .syncResponse(WireMessage.SyncResponse(patch: patch, seen: seen))
        case .digest:
            reply = .digest(state.withLock { $0.rooms[room]?.seen ?? VersionVector() })
        default:
            return errorReply("unsupported", "a \(request.message.kind) is not a request this node answers; see docs/PROTOCOL.md", room)
        }
        let encoded = WireCodec.encode(envelope(room: room, reply))
        metrics.add("reply_bytes_total", UInt64(encoded.count))
        return encoded
    }

    private func errorReply(_ code: String, _ message: String, _ room: String) -> [UInt8] {
        metrics.add("requests_rejected_total{reason=\"\(code)\"}")
        return WireCodec.encode(Self.errorEnvelope(code: code, message: message, room: room))
    }

    /// An acknowledged write: checked, sequenced, applied and published before the
    /// acknowledgement leaves.
    func handleWrite(room roomID: String, _ request: WireMessage.WriteRequest) -> WireMessage.WriteAck {
        let write = request.write
        let now = wallMillis()
        let result = state.withLock { state -> (WireMessage.WriteAck, Delta?) in
            if state.stopping { return (ack(request, .unavailable, "unavailable", "the node is stopping; retry on another node"), nil) }
            if write.authorRole == .system {
                return (ack(request, .rejected, "not-allowed", "clients cannot write as the system"), nil)
            }
            // Taken out of the dictionary while it changes, so the change is in place, not a copy.
            let existed = state.rooms[roomID] != nil
            var room = state.rooms.removeValue(forKey: roomID) ?? RoomState(roomID: roomID)
            defer { if existed || room.seen.count > 0 { state.rooms[roomID] = room } }
            if case .joinSession = write.operation {
                // Until signed tokens bind roles, a user keeps the role it first joined with.
                if let record = room.users[write.author], record.isKnown, record.role.value != write.authorRole {
                    return (ack(request, .rejected, "role-mismatch", "\(write.author) joined this room as \(record.role.value), not \(write.authorRole)"), nil)
                }
            } else if let record = room.users[write.author], record.isKnown {
                if record.role.value != write.authorRole {
                    return (ack(request, .rejected, "role-mismatch", "\(write.author) joined as \(record.role.value), not \(write.authorRole)"), nil)
                }
            } else {
                return (ack(request, .rejected, "not-joined", "\(write.author) has not joined room \(roomID): join first"), nil)
            }
            // A retried reward (same author and counter) is acknowledged, not counted again.
            if case let .reward(target, _) = write.operation,
               let existing = room.users[target]?.rewards[RewardKey(author: write.author, authorCounter: write.authorCounter)] {
                return (ack(request, .duplicate, "", "this reward was already counted", dot: existing.stamp.dot), nil)
            }
            if let refusal = room.admit(write, nowMillis: now) {
                return (ack(request, .rejected, refusal.code, refusal.description), nil)
            }
            // Stored (committed) before it is applied, published or acknowledged; the
            // sequence number is consumed only once the store has it.
            let (delta, sequencer) = state.stamp(room: roomID, write, nowMillis: now)
            if let store = state.store {
                let clock = ContinuousClock()
                let started = clock.now
                do {
                    try store.append(room: roomID, deltas: [delta])
                } catch {
                    logger.error("store failed", ["error": "\(error)"])
                    return (ack(request, .unavailable, "store-failed", "the node could not store the write: \(error); retry on another node"), nil)
                }
                let elapsed = clock.now - started
                metrics.add("store_append_micros_sum", UInt64(elapsed.components.attoseconds / 1_000_000_000_000) + UInt64(elapsed.components.seconds) * 1_000_000)
                metrics.add("store_append_count")
                state.dirtyRooms[roomID, default: 0] += 1
            }
            state.commit(room: roomID, delta, sequencer)
            let outcome = room.apply(delta)
            // Queued under the lock, so deltas leave in sequence order.
            outbox.enqueue(room: roomID, deltas: [delta], toNodes: true)
            if case let .rejected(reason) = outcome {
                return (ack(request, .rejected, reason.code, reason.description, dot: delta.dot), delta)
            }
            return (ack(request, .accepted, "", "", dot: delta.dot), delta)
        }
        if result.1 != nil {
            metrics.add("writes_accepted_total")
        } else {
            metrics.add("writes_refused_total{code=\"\(result.0.errorCode)\"}")
        }
        return result.0
    }

    private func ack(_ request: WireMessage.WriteRequest, _ status: WireMessage.WriteStatus, _ code: String, _ message: String,
                     dot: Dot? = nil) -> WireMessage.WriteAck {
        WireMessage.WriteAck(requestID: request.requestID, status: status, errorCode: code, message: message, dot: dot)
    }

    /// A peer joins: its session starts here, then it gets the room (or what its
    /// resume vector lacks). The peer should subscribe to the room's topic first.
    func handleJoin(room roomID: String, _ join: WireMessage.JoinRequest) -> WireMessage {
        for (field, value) in [("user", join.user), ("session", join.session), ("name", join.name)]
        where value.isEmpty || value.utf8.count > 128 {
            return .error(WireMessage.ErrorReply(code: "invalid", message: "a join's \(field) must be 1 to 128 bytes, got \(value.utf8.count)"))
        }
        let write = Write(author: join.user, authorRole: join.role, authorCounter: 0,
                          operation: .joinSession(user: join.user, session: join.session, name: join.name, role: join.role,
                                                  host: replica, incarnation: incarnation))
        let ack = handleWrite(room: roomID, WireMessage.WriteRequest(requestID: 0, write: write))
        guard ack.status == .accepted else {
            return .error(WireMessage.ErrorReply(code: ack.errorCode, message: ack.message))
        }
        let state = self.state.withLock { state -> RoomState in
            let room = state.rooms[roomID] ?? RoomState(roomID: roomID)
            return join.resume.map { room.missing(since: $0) } ?? room.snapshot()
        }
        metrics.add("joins_total")
        return .joinResponse(WireMessage.JoinResponse(session: join.session, host: replica, incarnation: incarnation,
                                                      state: state, isSnapshot: join.resume == nil))
    }

    /// The publisher thread: sends what the outbox holds, batched, until the node stops.
    func publishLoop() {
        while true {
            let batches = outbox.take(timeoutMillis: 50)
            for batch in batches { send(room: batch.room, deltas: batch.deltas, toNodes: batch.toNodes) }
            if batches.isEmpty && stopped.load(ordering: .acquiring) { return }
        }
    }

    /// Publishes deltas to the room's clients and, when this node sequenced them, to the other nodes.
    private func send(room: String, deltas: [Delta], toNodes: Bool) {
        let message = WireCodec.encode(envelope(room: room, .deltaBatch(WireMessage.DeltaBatch(origin: deltas[0].origin, deltas: deltas))))
        try? publisher.send(topic: Topics.clientRoom(room), payload: message)
        if toNodes, !state.withLock({ $0.faults.isolated }) {
            try? publisher.send(topic: Topics.nodeRoom(room), payload: message)
            metrics.add("deltas_out_total", UInt64(deltas.count))
        }
    }

    /// Publishes a repair patch to the room's clients, so they see what anti-entropy brought.
    /// Its version vector is dropped: it was cut against this node's vector, not the
    /// clients', so adopting it could mark as seen a delta a client lost. Clients
    /// pull what they still lack with their own sync.
    func publishPatch(room: String, _ original: RoomState) {
        var patch = original
        patch.seen = VersionVector()
        let message = WireCodec.encode(envelope(room: room, .patch(patch)))
        try? publisher.send(topic: Topics.clientRoom(room), payload: message)
    }
}
