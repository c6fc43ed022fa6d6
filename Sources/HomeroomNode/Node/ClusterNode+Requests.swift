import HomeroomCore
import HomeroomEngine
import HomeroomWire
import HomeroomSupport

extension ClusterNode {
    /// One request on the REP socket: decode, dispatch, encode the reply. Never throws,
    /// never crashes on bad input: every failure is an `ErrorReply` with a code.
    /// `connection` is the REP connection's id (0 in tests that call this directly).
    /// `deferral`: where a request that waits on other nodes (a client's where-now) leaves
    /// how to send its reply later, so it holds no worker meanwhile; without one (tests),
    /// such a request is answered before this returns.
    func handleRequest(_ bytes: [UInt8], connection: UInt64 = 0, deferral: ReplyDeferral? = nil) -> [UInt8] {
        // Node messages are sealed with the cluster key (when the cluster has one).
        let body: ArraySlice<UInt8>
        var fromNode = false
        switch framing.open(bytes[...]) {
        case let .authenticated(inner):
            body = inner
            fromNode = true
        case let .plain(inner):
            body = inner
        case let .refused(reason):
            return errorReply(reason, "this message is not sealed with this cluster's key", "")
        }
        let request: WireEnvelope
        do {
            request = try WireCodec.decode(Array(body), limits: config.limits)
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
        if let why = state.withLock({ $0.wedged }) {
            return errorReply("unavailable", "this node is wedged (\(why)) and has stepped aside: use another node", room)
        }
        // (A quarantined room kept on other nodes: clients are sent there, below.)
        if !room.isEmpty, let why = state.withLock({ $0.quarantined.isEmpty ? nil : $0.owns(room, ownName: name) ? $0.quarantined[room] : nil }) {
            if case .heartbeat = request.message {} else {
                return errorReply("unavailable", "room \(room) is quarantined on this node (\(why)): use another node", room)
            }
        }
        let claimsToBeNode = request.sender.rawValue != 0
        if claimsToBeNode && framing.isEnabled && !fromNode {
            return errorReply("cluster-auth-required", "node requests must be sealed with the cluster key", room)
        }
        if claimsToBeNode, state.withLock({ $0.faults.cuts(request.sender) }) {
            return errorReply("unavailable", "link cut by fault injection", room)
        }
        // Clients prove who they are with a join token, when the node requires one.
        var claims: TokenClaims?
        if !fromNode, let verifier = config.tokenVerifier {
            switch request.message {
            case .joinRequest, .writeRequest, .syncRequest, .digest, .renewRequest:
                let token = String(decoding: request.credential, as: UTF8.self)
                do throws(TokenError) {
                    guard !request.credential.isEmpty else { throw TokenError.missing }
                    let verified = try verifier.verify(token, room: room, nowSeconds: Int64(wallMillis() / 1000))
                    if isRevoked(verified.user) { throw TokenError.revoked(user: verified.user) }
                    claims = verified
                    // A group's room: its main room gates reads (syncs, digests) as well as writes,
                    // by the token's identity and role. A class token (not one for the group's
                    // room itself, nor "*") opens it only while the group is live there.
                    if let group = Breakout.parse(roomID: room), !Self.isLeaveRequest(request.message) {
                        let byClassToken = verified.room == group.mainRoom
                        // Only where the group's room is kept: a copy left elsewhere may be stale (its owners answer).
                        let refusal = state.withLock { state -> WriteError? in
                            guard state.owns(room, ownName: name) else { return nil }
                            guard let main = state.rooms[group.mainRoom] else {
                                return byClassToken ? .groupNotLive(mainRoom: group.mainRoom, group: group.group) : nil
                            }
                            return main.groupRoomRefusal(user: verified.user, role: verified.parsedRole ?? .observer, group: group.group,
                                                         requireLive: byClassToken)
                        }
                        // A main room still on its way here (placement) is waited for below, not refused.
                        if let refusal, !(refusal.code == "group-not-live" && roomOnItsWay(group.mainRoom) != nil) {
                            return errorReply(refusal.code, refusal.description, room)
                        }
                    }
                } catch {
                    return errorReply(error.code, error.description, room)
                }
            default:
                break
            }
        }
        // Nodes (sealed, or node-numbered without a cluster key) get everything and no
        // limits; clients get what their token allows.
        let asNode = fromNode || (claimsToBeNode && !framing.isEnabled)
        // A closed class (docs/PROTOCOL.md, "Closed classes"): its clients are refused for
        // good; once removed, nothing about it is answered to anyone, so no peer pulls it back.
        if !room.isEmpty, Self.isRoomRequest(request.message), !Self.isLeaveRequest(request.message) || asNode,
           let closed = closedRoomRefusal(room: room, asNode: asNode) {
            return errorReply("room-closed", closed, room)
        }
        // A room kept on other nodes (placement): clients are sent to its owners. Nodes
        // still sync a copy held here, so a new owner can take it over.
        if !asNode, placementActive, !room.isEmpty, Self.isRoomRequest(request.message), let refusal = notOwnerReply(room: room) {
            metrics.add("requests_rejected_total{reason=\"not-owner\"}")
            return WireCodec.encode(WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero, message: .error(refusal)))
        }
        // A group's room is checked against its main room, which must have arrived too.
        if !asNode, Self.isRoomRequest(request.message),
           let wait = roomOnItsWay(room) ?? Breakout.parse(roomID: room).flatMap({ roomOnItsWay($0.mainRoom) }) {
            return errorReply("unavailable", wait, room)
        }
        var reply: WireMessage
        // A client sync's budget key: its reply's bytes are charged once encoded.
        var chargedSync: String?
        switch request.message {
        case let .heartbeat(hello):
            // Only sealed (or, without a cluster key, node-numbered) hellos join the cluster;
            // a client's hello only asks where this node publishes.
            if claimsToBeNode {
                guard freshHeartbeat(hello, sequence: request.sequence) else {
                    return errorReply("stale", "this hello is older than one already heard from \(request.sender) (a replay?)", room)
                }
                heard(hello)
            }
            // A client's hello needs no token, so it is limited per connection (as syncs are
            // per user): a stranger's hello flood costs one bucket, not the node.
            if !asNode, !state.withLock({ $0.engine.limits.hellos.allow(String(connection), size: 0, nowMillis: WallClock.monotonicMillis()) }) {
                metrics.add("requests_rejected_total{reason=\"rate-limited\"}")
                return errorReply("rate-limited", "too many hellos on this connection (\(config.hellosPerSecond) a second): slow down", room)
            }
            let open = asNode || config.tokenVerifier == nil
            let answer = open ? ownHeartbeat() : strangerHeartbeat(credential: request.credential)
            reply = .heartbeat(hello.listing && !claimsToBeNode ? listingHeartbeat(answer, stranger: !open) : answer)
        case let .writeRequest(write):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            if let claims, write.write.author != claims.user || write.write.authorRole != claims.parsedRole {
                let error = TokenError.identityMismatch("writes as \(write.write.author) (\(write.write.authorRole)), token is for \(claims.user) (\(claims.role))")
                return errorReply(error.code, error.description, room)
            }
            if !fromNode, let wait = awaitingPeers() {
                reply = .writeAck(ack(write, .unavailable, "unavailable", wait))
            } else {
                let ack = handleWrite(room: room, write, fromClient: !fromNode, size: bytes.count)
                // The room moved since the check above: the owners, as that check names them.
                if ack.errorCode == "not-owner", let refusal = notOwnerReply(room: room) {
                    reply = .error(refusal)
                } else {
                    reply = .writeAck(ack)
                }
            }
        case let .joinRequest(join):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            if let claims, join.user != claims.user || join.role != claims.parsedRole {
                let error = TokenError.identityMismatch("joins as \(join.user) (\(join.role)), token is for \(claims.user) (\(claims.role))")
                return errorReply(error.code, error.description, room)
            }
            if let wait = awaitingPeers() { return errorReply("unavailable", wait, room) }
            reply = handleJoin(room: room, join)
            if let claims, case var .joinResponse(response) = reply {
                response.keys = topicKeys(room: room, user: claims.user, expiresAt: claims.exp)
                reply = .joinResponse(response)
            }
        case let .syncRequest(sync):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            // Nodes get everything; a client gets the peer messages of the user it names
            // (its token's user, when the node requires tokens).
            var reader: UserID? = sync.user.isEmpty ? nil : sync.user
            if let claims {
                if let named = reader, named != claims.user {
                    let error = TokenError.identityMismatch("syncs as \(named), token is for \(claims.user)")
                    return errorReply(error.code, error.description, room)
                }
                reader = claims.user
            }
            // A token's user is checked even when the request claims to be a node (a
            // cluster without a key cannot tell).
            if !asNode || claims != nil, let reader, state.withLock({ $0.rooms[room]?.users[reader]?.isBanned == true }) {
                return errorReply("banned", "\(reader) is banned from this room", room)
            }
            let limitKey = "\(room)\u{0}\(reader ?? "")"
            if !asNode, !allowSync(limitKey) {
                return errorReply("rate-limited", "\(reader ?? "this reader") syncs room \(room) more than \(config.syncsPerSecond) times or \(config.syncBytesPerSecond) bytes per second: slow down", room)
            }
            if !asNode, let reader {
                // A client syncing is attached here: if a restart ended its session under it, reclaim it.
                reclaimSession(room: room, session: sync.session, user: reader)
                renewLease(room: room, session: sync.session, user: reader)
            }
            // The copy is taken under the lock; the cut (a scan of the room) is made outside it.
            let current = state.withLock { $0.rooms[room] } ?? RoomState(roomID: room)
            let missing = current.missing(since: sync.seen)
            let patch = asNode ? missing : missing.visible(to: reader)
            let seen = current.seen
            let keys = asNode ? nil : claims.flatMap { topicKeys(room: room, user: $0.user, expiresAt: $0.exp) }
            reply = .syncResponse(WireMessage.SyncResponse(patch: patch, seen: seen, keys: keys))
            if !asNode { chargedSync = limitKey }
        case .digest:
            if let claims, state.withLock({ $0.rooms[room]?.users[claims.user]?.isBanned == true }) {
                return errorReply("banned", "\(claims.user) is banned from this room", room)
            }
            if !asNode, !allowSync("\(room)\u{0}\(claims?.user ?? "")") {
                return errorReply("rate-limited", "digests of room \(room) more than \(config.syncsPerSecond) times per second: slow down", room)
            }
            reply = .digest(state.withLock { $0.rooms[room]?.seen ?? VersionVector() })
        case let .probeRequest(target):
            // Nodes only: the answer says which nodes this one hears.
            guard asNode else { return errorReply("not-allowed", "only nodes probe nodes (docs/PROTOCOL.md, \"Probes\")", room) }
            reply = .probeReply(answerProbe(about: target))
        case let .whereNowRequest(user):
            if user.isEmpty || user.utf8.count > 128 {
                return errorReply("invalid", "where-now's user must be 1 to 128 bytes, got \(user.utf8.count)", room)
            }
            if asNode {
                reply = .whereNowReply(ownWhereNow(of: user))
                break
            }
            // Never to a stranger: the asker's token says who asks (docs/PROTOCOL.md, "Where now").
            guard let verifier = config.tokenVerifier else {
                return errorReply("not-allowed", "where-now is answered only by nodes that require join tokens (--token-key): this one cannot tell who asks", room)
            }
            let asker: TokenClaims
            do throws(TokenError) {
                guard !request.credential.isEmpty else { throw TokenError.missing }
                asker = try verifier.verify(String(decoding: request.credential, as: UTF8.self), room: "*", nowSeconds: Int64(wallMillis() / 1000))
                if isRevoked(asker.user) { throw TokenError.revoked(user: asker.user) }
            } catch {
                if case let .wrongRoom(tokenRoom, _) = error {
                    return errorReply("not-allowed", "where-now needs a token for every room (`homeroom token create --room '*'`); this one is for room \(tokenRoom)", room)
                }
                return errorReply(error.code, error.description, room)
            }
            if let why = WhereNow.refusal(asker: asker, about: user) { return errorReply("not-allowed", why, room) }
            if !allowSync("where-now\u{0}\(asker.user)") {
                return errorReply("rate-limited", "\(asker.user) asks where-now more than \(config.syncsPerSecond) times per second: slow down", room)
            }
            // A few questions gathered at a time: each asks every live peer.
            guard whereNowInFlight.add(1, ordering: .relaxed).newValue <= Self.maxWhereNowInFlight else {
                whereNowInFlight.subtract(1, ordering: .relaxed)
                return errorReply("rate-limited", "this node is answering \(Self.maxWhereNowInFlight) other where-now questions: retry in a second", room)
            }
            guard let deferral else {
                defer { whereNowInFlight.subtract(1, ordering: .relaxed) }
                reply = .whereNowReply(whereNow(user: user))
                break
            }
            // The peers answer within about a second: the worker goes back to other requests.
            deferral.start = { [weak self] send in
                guard let self else {
                    send(WireCodec.encode(Self.errorEnvelope(code: "unavailable", message: "the node is stopping")))
                    return
                }
                self.gatherWhereNow(user: user) { [weak self] gathered in
                    guard let self else {
                        send(WireCodec.encode(Self.errorEnvelope(code: "unavailable", message: "the node is stopping")))
                        return
                    }
                    self.whereNowInFlight.subtract(1, ordering: .relaxed)
                    let encoded = WireCodec.encode(self.envelope(room: room, .whereNowReply(gathered)))
                    self.metrics.add("reply_bytes_total", UInt64(encoded.count))
                    send(encoded)
                }
            }
            return []
        case let .renewRequest(session):
            if let problem = RoomID.validate(room) { return errorReply("invalid-room", problem, room) }
            // Each renewal costs a signature check and a look at the room: limited as syncs are.
            if !allowSync("renew\u{0}\(room)\u{0}\(claims?.user ?? "")") {
                return errorReply("rate-limited", "token renewals come faster than \(config.syncsPerSecond) per second: slow down", room)
            }
            switch renewal(room: room, session: session, claims: claims) {
            case let .success(expiresAt): reply = .renewReply(expiresAt: expiresAt)
            case let .failure(refusal): return errorReply(refusal.code, refusal.message, room)
            }
        default:
            return errorReply("unsupported", "a \(request.message.kind) is not a request this node answers; see docs/PROTOCOL.md", room)
        }
        var encoded = WireCodec.encode(envelope(room: room, reply))
        if fromNode { encoded = framing.seal(encoded) }
        if let chargedSync {
            // A client that keeps pulling everything runs out of bytes and is refused
            // until its budget refills.
            state.withLock { $0.engine.limits.syncs.charge(chargedSync, bytes: encoded.count, nowMillis: WallClock.monotonicMillis()) }
        }
        metrics.add("reply_bytes_total", UInt64(encoded.count))
        return encoded
    }

    private func errorReply(_ code: String, _ message: String, _ room: String) -> [UInt8] {
        metrics.add("requests_rejected_total{reason=\"\(code)\"}")
        return WireCodec.encode(Self.errorEnvelope(code: code, message: message, room: room))
    }

    /// An acknowledged write: admitted and numbered by the engine, then stored, applied and
    /// published before the acknowledgement leaves (`carryOut`).
    func handleWrite(room roomID: String, _ request: WireMessage.WriteRequest, fromClient: Bool = false, size: Int = 0) -> WireMessage.WriteAck {
        var write = request.write
        // A client written before rewards carried `issued_at_ms` sends 0: its reward is
        // taken as issued when it arrives (v1 keeps its meaning; docs/PROTOCOL.md).
        if fromClient, case let .reward(target, amount, 0) = write.operation {
            write.operation = .reward(user: target, amount: amount, issuedAtMillis: wallMillis())
        }
        if fromClient, config.testFault == .loseAcknowledgedWrites, let lost = writeLoss.lose(write.operation, origin: replica) {
            // Tests only: acknowledged, never stored nor published (TestFault.swift).
            metrics.add("test_fault_lost_writes_total")
            return ack(request, .accepted, "", "", dot: lost)
        }
        enum Decision { case answered(WireMessage.WriteAck), persist(StampedWrite, NodeStore?) }
        // At the gate the author's role is known (checked against the token, when the node
        // requires one): a student's refused "mute all" does not jump the room's queue.
        let urgent = config.teacherLane && write.operation.isTeacherControl
            && (write.authorRole == .teacher || write.authorRole == .assistant || write.operation.isInvitationAnswer)
        let result = writeGates.withGate(roomID, urgent: urgent) { () -> (WireMessage.WriteAck, Delta?, StoreError?) in
            let decision = state.withLock { state -> Decision in
                // Read under the lock: a heartbeat (also built under it) then tells peers the
                // truth about which rewards this node admitted before its send time; one
                // still being stored holds that time back (`NodeEngine.checkpointMillis`).
                let now = wallMillis()
                if state.stopping { return .answered(ack(request, .unavailable, "unavailable", "the node is stopping; retry on another node")) }
                // Checked again under the lock: a room handed off since the request's check must
                // not come back here, where no owner would ever take it away.
                if !state.owns(roomID, ownName: name) {
                    return .answered(ack(request, .unavailable, "not-owner", "room \(roomID) is kept on other nodes now: ask its owners (docs/PROTOCOL.md, Placement)"))
                }
                if fromClient && !state.engine.limits.writes.allow(write.author, size: size, nowMillis: WallClock.monotonicMillis()) {
                    return .answered(ack(request, .rejected, "rate-limited",
                                         "\(write.author) sends more than \(config.writesPerSecond) writes or \(config.writeBytesPerSecond / 1024) KiB per second: slow down"))
                }
                switch state.engine.decide(room: roomID, write, nowMillis: now) {
                case let .answer(outcome): return .answered(ack(request, outcome))
                case let .persist(stamped):
                    state.engine.storing(stamped)
                    return .persist(stamped, state.store)
                }
            }
            switch decision {
            case let .answered(reply):
                return (reply, nil, nil)
            case let .persist(stamped, store):
                switch carryOut(stamped, store: store) {
                case let .failure(error):
                    return (ack(request, .unavailable, "store-failed", "the node could not store the write: \(error); retry on another node"), nil, error)
                case let .success(committed):
                    if committed.outcome.isAccepted, case .answerInvitation(accept: true, _, _) = stamped.prepared.operation {
                        stageForOlderClients(room: roomID, user: stamped.prepared.author, store: store)
                    }
                    return (ack(request, committed.outcome), committed.delta, nil)
                }
            }
        }
        if let error = result.2 { logger.error("store failed", ["error": "\(error)"]) }
        if let delta = result.1 {
            metrics.add("writes_accepted_total")
            if delta.operation.isMessage { metrics.add(delta.operation.peerRecipient == nil ? "room_messages_total" : "peer_messages_total") }
        } else {
            metrics.add("writes_refused_total{code=\"\(result.0.errorCode)\"}")
        }
        return result.0
    }

    /// An accepted invitation puts its student on stage through op 46, which a client
    /// written before invitations existed marks seen and skips, and no repair would send
    /// it the stage register then. So the node follows the accept, under the same gate,
    /// with the plain stage write such a client applies (as auto-stage does), before the
    /// accept is acknowledged. A store failure here leaves only older clients behind.
    private func stageForOlderClients(room roomID: String, user: UserID, store: NodeStore?) {
        let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: .setStage(user: user, on: true))
        guard let stamped = state.withLock({ state -> StampedWrite? in
            guard let stamped = state.engine.stampSystemWrite(room: roomID, write, nowMillis: wallMillis()) else { return nil }
            state.engine.storing(stamped)
            return stamped
        }) else { return }
        if case let .failure(error) = carryOut(stamped, store: store) {
            logger.warning("store failed for the stage write that follows an accepted invitation", ["room": roomID, "error": "\(error)"])
        }
    }

    /// A client's leave, which the group-room gate always lets through.
    /// A client's request about one room's state: joins, writes, syncs, digests, token renewals.
    static func isRoomRequest(_ message: WireMessage) -> Bool {
        switch message {
        case .joinRequest, .writeRequest, .syncRequest, .digest, .renewRequest: return true
        default: return false
        }
    }

    static func isLeaveRequest(_ message: WireMessage) -> Bool {
        if case let .writeRequest(write) = message, case .leaveSession = write.write.operation { return true }
        return false
    }

    private func ack(_ request: WireMessage.WriteRequest, _ status: WireMessage.WriteStatus, _ code: String, _ message: String,
                     dot: Dot? = nil) -> WireMessage.WriteAck {
        WireMessage.WriteAck(requestID: request.requestID, status: status, errorCode: code, message: message, dot: dot)
    }

    /// The engine's answer as the wire's acknowledgement.
    private func ack(_ request: WireMessage.WriteRequest, _ outcome: WriteOutcome) -> WireMessage.WriteAck {
        let status: WireMessage.WriteStatus
        switch outcome.status {
        case .accepted: status = .accepted
        case .duplicate: status = .duplicate
        case .rejected: status = .rejected
        case .unavailable: status = .unavailable
        }
        var reply = ack(request, status, outcome.code, outcome.message, dot: outcome.dot)
        reply.revision = outcome.revision
        reply.setRevision = outcome.setRevision
        reply.fence = outcome.fence
        return reply
    }

    /// A peer joins: its session starts here, then it gets the room (or what its
    /// resume vector lacks). The peer should subscribe to the room's topic first.
    func handleJoin(room roomID: String, _ join: WireMessage.JoinRequest) -> WireMessage {
        for (field, value) in [("user", join.user), ("session", join.session)] where value.isEmpty || value.utf8.count > 128 {
            return .error(WireMessage.ErrorReply(code: "invalid", message: "a join's \(field) must be 1 to 128 bytes, got \(value.utf8.count)"))
        }
        // An empty name keeps the user's display name (a rejoin that does not give one).
        if join.name.utf8.count > 128 {
            return .error(WireMessage.ErrorReply(code: "invalid", message: "a join's name must be at most 128 bytes (empty: keep the name you have), got \(join.name.utf8.count)"))
        }
        let limited = state.withLock { state -> String? in
            let now = WallClock.monotonicMillis()
            if !state.engine.limits.joins.allow("\(roomID)\u{0}\(join.user)", size: 0, nowMillis: now) {
                return "\(join.user) joins room \(roomID) more than \(config.joinsPerSecond) times per second: slow down"
            }
            // A join that opens a room (not held here, not on its way, and this node's to
            // keep) also takes from the room-creation budgets.
            guard state.rooms[roomID] == nil, !state.arriving.contains(roomID), state.owns(roomID, ownName: name) else { return nil }
            if let why = state.engine.limits.allowRoomCreation(by: join.user, nowMillis: now) {
                metrics.add("room_creations_refused_total")
                return why
            }
            return nil
        }
        if let limited {
            metrics.add("joins_refused_total{code=\"rate-limited\"}")
            return .error(WireMessage.ErrorReply(code: "rate-limited", message: limited))
        }
        let write = Write(author: join.user, authorRole: join.role, authorCounter: 0,
                          operation: .joinSession(user: join.user, session: join.session, name: join.name, role: join.role,
                                                  host: replica, incarnation: incarnation))
        let ack = handleWrite(room: roomID, WireMessage.WriteRequest(requestID: 0, write: write))
        if ack.errorCode == "not-owner", let refusal = notOwnerReply(room: roomID) { return .error(refusal) }
        guard ack.status == .accepted else {
            return .error(WireMessage.ErrorReply(code: ack.errorCode, message: ack.message))
        }
        // The lease starts with the join: a client that never syncs (its join reply was
        // lost, it died at once) does not leave an open session behind for ever.
        startLease(room: roomID, session: join.session, user: join.user)
        let state = cut(room: roomID, since: join.resume, visibleTo: join.user)
        metrics.add("joins_total")
        return .joinResponse(WireMessage.JoinResponse(session: join.session, host: replica, incarnation: incarnation,
                                                      state: state, isSnapshot: join.resume == nil))
    }

    /// What a joining `user` gets of the room: a snapshot, or what `resume` lacks; other
    /// users' peer messages left out. Only the copy of the room is taken under the state
    /// lock (copy-on-write, constant time); the cut, a scan of the whole room, is made
    /// outside it, so a join to a lecture hall holds up no other room's writes.
    func cut(room roomID: String, since resume: VersionVector?, visibleTo user: UserID) -> RoomState {
        let room = state.withLock { $0.rooms[roomID] } ?? RoomState(roomID: roomID)
        return (resume.map { room.missing(since: $0) } ?? room.snapshot()).visible(to: user)
    }

    /// The room as a newly joined `user` sees it (what a join reply carries): for embedding.
    public func snapshot(room: String, visibleTo user: UserID) -> RoomState {
        cut(room: room, since: nil, visibleTo: user)
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
    /// Peer messages go only to the private topics of their sender and recipient.
    private func send(room: String, deltas: [Delta], toNodes: Bool) {
        let message = WireCodec.encode(envelope(room: room, .deltaBatch(WireMessage.DeltaBatch(origin: deltas[0].origin, deltas: deltas))))
        // The other nodes first: their clients wait for this hop, and a hall's fan-out to
        // this node's own clients (thousands of sends) would otherwise go ahead of it.
        if toNodes {
            let (isolated, audience) = state.withLock { ($0.faults.isolated, $0.deltaAudience(room, ownName: name)) }
            if !isolated {
                try? nodePublisher.send(topic: Topics.nodeRoom(room), payload: framing.seal(message), nodes: audience.map { .named($0) } ?? .all)
                metrics.add("deltas_out_total", UInt64(deltas.count))
            }
        }
        if deltas.contains(where: { $0.operation.peerRecipient != nil }) {
            publishPrivately(room: room, deltas: deltas)
        } else {
            publishToClients(room: room, message)
        }
    }

    /// Publishes a repair patch to the room's clients, so they see what anti-entropy brought.
    /// Its version vector is dropped: it was cut against this node's vector, not the
    /// clients', so adopting it could mark as seen a delta a client lost. Clients
    /// pull what they still lack with their own sync.
    func publishPatch(room: String, _ original: RoomState) {
        var patch = original.visible(to: nil)
        patch.seen = VersionVector()
        let message = WireCodec.encode(envelope(room: room, .patch(patch)))
        publishToClients(room: room, message)
        publishPrivately(room: room, patch: original)
    }
}

extension ClusterNode {
    /// One sync or digest from `key`'s budget; false (and counted) when over it.
    func allowSync(_ key: String) -> Bool {
        let allowed = state.withLock { $0.engine.limits.syncs.allow(key, size: 0, nowMillis: WallClock.monotonicMillis()) }
        if !allowed { metrics.add("requests_rejected_total{reason=\"sync-rate-limited\"}") }
        return allowed
    }
}
