import HomeroomCore
import HomeroomEngine
import HomeroomWire
import HomeroomSupport

extension ClusterNode {
    /// A message from another node's PUB socket: deltas it sequenced, or a heartbeat.
    func receiveFromCluster(_ message: [UInt8]) {
        guard let (kind, framed) = Topics.split(message) else { return }
        metrics.add(kind == 2 ? "cluster_bytes_in_total{topic=\"heartbeats\"}" : "cluster_bytes_in_total{topic=\"deltas\"}", UInt64(message.count))
        let payload: ArraySlice<UInt8>
        switch framing.open(framed) {
        case let .authenticated(inner):
            payload = inner
        case let .plain(inner) where !framing.isEnabled:
            payload = inner
        case .plain:
            metrics.add("cluster_rejected_total{reason=\"cluster-auth-required\"}")
            return
        case let .refused(reason):
            metrics.add("cluster_rejected_total{reason=\"\(reason)\"}")
            return
        }
        let envelope: WireEnvelope
        do {
            envelope = try WireCodec.decode(Array(payload), limits: config.limits)
        } catch {
            metrics.add("cluster_rejected_total{reason=\"\(error.code)\"}")
            logger.debug("undecodable cluster message", ["error": "\(error)"])
            return
        }
        if envelope.sender == replica { return }
        let (copies, delay) = state.withLock { state -> (Int, Int) in
            state.faults.cuts(envelope.sender) ? (0, 0) : (state.dice.copies(state.faults), state.dice.delay(state.faults))
        }
        if delay > 0 && copies > 0 {
            delayLine.hold(message, forMillis: delay)
            return
        }
        process(kind: kind, envelope: envelope, copies: copies)
    }

    /// A message the delay line held: process it now (faults were already applied).
    func releaseDelayed(_ message: [UInt8]) {
        guard let (kind, framed) = Topics.split(message) else { return }
        let payload: ArraySlice<UInt8>
        switch framing.open(framed) {
        case let .authenticated(inner): payload = inner
        case let .plain(inner): payload = inner
        case .refused: return
        }
        guard let envelope = try? WireCodec.decode(Array(payload), limits: config.limits) else { return }
        process(kind: kind, envelope: envelope, copies: 1)
    }

    private func process(kind: UInt8, envelope: WireEnvelope, copies: Int) {
        for _ in 0..<copies {
            switch (kind, envelope.message) {
            case let (1, .deltaBatch(batch)): applyRemote(room: envelope.roomID, batch: batch, from: envelope.sender)
            case let (2, .heartbeat(heartbeat)):
                if freshHeartbeat(heartbeat, sequence: envelope.sequence) { heard(heartbeat) }
            default: metrics.add("cluster_rejected_total{reason=\"unexpected\"}")
            }
        }
    }

    /// Applies another node's deltas, relays the new ones to this node's clients, and
    /// schedules a pull when a gap shows.
    func applyRemote(room roomID: String, batch: WireMessage.DeltaBatch, from sender: ReplicaID) {
        guard RoomID.validate(roomID) == nil, state.withLock({ $0.quarantined[roomID] == nil }) else { return }
        // Under the room's gate: what this node lacks is stored outside the state lock
        // (other rooms go on), then applied under it, with no other store, apply or
        // compaction of this room between. Stored first, so no heartbeat announces a
        // delta that a crash would take from this node.
        let (applied, storeError) = writeGates.withGate(roomID) { () -> (RemoteApplication?, StoreError?) in
            let now = wallMillis()
            let planned = state.withLock { state -> (toStore: [Delta], store: NodeStore?)? in
                // A room kept elsewhere (placement) is not followed: a copy held here stays as
                // it is until its owners hold it (`handOffRooms`).
                guard state.owns(roomID, ownName: name) else {
                    if state.rooms[roomID] == nil && state.declined.count < NodeState.declinedLimit { state.declined.insert(roomID) }
                    return nil
                }
                return (state.engine.deltasToStore(room: roomID, batch.deltas, nowMillis: now), state.store)
            }
            guard let planned else { return (nil, nil) }
            var storeError: StoreError?
            if let store = planned.store, !planned.toStore.isEmpty {
                do throws(StoreError) {
                    try store.append(room: roomID, deltas: planned.toStore)
                } catch {
                    storeError = error
                }
            }
            let applied = state.withLock { state -> RemoteApplication in
                if state.rooms[roomID] == nil && state.mayOwnWithoutHolding(roomID, ownName: name) { state.arriving.insert(roomID) }
                let applied = state.engine.applyRemote(room: roomID, batch.deltas, origin: batch.origin, nowMillis: now)
                if planned.store != nil && !planned.toStore.isEmpty {
                    // A miss: no patch is appended here until a snapshot taken after it is stored.
                    if storeError != nil { state.engine.storeMissed(room: roomID) }
                    state.engine.compactions.appended(room: roomID)
                }
                outbox.enqueue(room: roomID, deltas: applied.fresh, toNodes: false)
                if applied.needsPull { state.pulls.want(NodeState.SyncKey(peer: sender, room: roomID)) }
                return applied
            }
            return (applied, storeError)
        }
        // Not fatal: the room's next snapshot stores them, and until then no patch is
        // appended there (NodeEngine+Store), so a restart before it pulls them again.
        if let storeError { logger.warning("store failed for remote deltas", ["error": "\(storeError)"]) }
        guard let applied else {
            metrics.add("deltas_ignored_total{reason=\"not-owner\"}", UInt64(batch.deltas.count))
            return
        }
        let fresh = applied.fresh, rejectedClock = applied.rejectedClock, deferred = applied.deferred
        metrics.add("deltas_in_total", UInt64(fresh.count))
        if !fresh.isEmpty {
            for observer in appliedObservers.withLock({ $0 }) { observer(roomID, fresh) }
        }
        if rejectedClock > 0 { metrics.add("deltas_rejected_total{reason=\"clock-ahead\"}", UInt64(rejectedClock)) }
        if deferred > 0 { metrics.add("deltas_deferred_total", UInt64(deferred)) }
    }

    /// A heartbeat or hello: liveness, addresses, peers to meet, rooms to repair.
    func heard(_ heartbeat: WireMessage.Heartbeat) {
        guard heartbeat.node != replica else { return }
        if let newer = newerStoreOfThisName(in: heartbeat) {
            stepAside(superseded: "node \(name) runs elsewhere on a newer store (replica id \(newer), heard from \(heartbeat.node))")
            return
        }
        noteNameCollision(heartbeat)
        let now = WallClock.monotonicMillis()
        var askNow = false
        let (toConnect, gap, cameBack) = state.withLock { state -> ([PeerTable.Entry], Bool, String?) in
            // A peer heard, and it knows of no newer store of this name: writes are safe now.
            state.peersAwaitedUntil = nil
            // Silent until now (suspect, down, or new): a partition may just have healed.
            let wasSilent = state.peers.entries[heartbeat.node].map { $0.status != .alive } ?? true
            var connect: [ReplicaID] = []
            if state.peers.heard(heartbeat, nowMillis: now) { connect.append(heartbeat.node) }
            // Never an older store of this node's own name: this node is that name now.
            for peer in heartbeat.peers where peer.node != replica && !replica.supersedes(peer.node) {
                if state.peers.learn(peer, nowMillis: now) { connect.append(peer.node) }
            }
            var gap = false
            let placement = state.placement(ownName: name)
            func compare(_ roomID: String, _ theirs: VersionVector) {
                // Owned rooms; and a quarantined one, owned or not: its broken rows go once
                // a peer's copy replaces them (and then to its owners, if it has others).
                // Never a room removed after its class closed: a peer that still holds it (its
                // retention not yet passed) would be pulled from at every tick, for nothing.
                guard RoomID.validate(roomID) == nil, !state.engine.isTombstoned(roomID),
                      placement.owns(name, room: roomID) || state.quarantined[roomID] != nil,
                      !(state.rooms[roomID]?.seen ?? VersionVector()).dominates(theirs) else { return }
                state.pulls.wantUntilClosed(NodeState.SyncKey(peer: heartbeat.node, room: roomID))
                gap = true
            }
            // What changed on the peer is compared at once; everything it holds after a
            // silence (this node may have missed anything meanwhile) or a complete list.
            if let entry = state.peers.entries[heartbeat.node] {
                if heartbeat.roomsPartial && !wasSilent {
                    for digest in heartbeat.rooms { compare(digest.roomID, digest.seen) }
                } else {
                    for (roomID, theirs) in entry.rooms { compare(roomID, theirs) }
                }
                // Its rooms' hash differs from this node's view of them: heartbeats with
                // changes were missed. Ask for the complete list (a hello) first.
                if entry.viewMismatched {
                    state.pulls.want(NodeState.SyncKey(peer: heartbeat.node, room: NodeState.SyncKey.completeList))
                    metrics.add("gossip_view_mismatches_total")
                    askNow = !state.pulls.isPulling(heartbeat.node)
                }
            }
            for node in connect { state.peers.markConnected(node) }
            return (connect.compactMap { state.peers.entries[$0] }, wasSilent && gap && !state.pulls.isPulling(heartbeat.node),
                    wasSilent ? state.peers.entries[heartbeat.node]?.address : nil)
        }
        for peer in toConnect { connect(peer) }
        // A peer heard again after a silence: its REQ link's attempt made during the
        // partition may wait a second for its lost SYN to be retried; a fresh one connects
        // now. And what it has that this node lacks is pulled at once, not at the next
        // tick. (From a peer heard all along, a gap in its digest is mostly writes whose
        // deltas are still on the way: those wait for the tick, as before.)
        if let address = cameBack, let requester = links.withLock({ $0[address] }) { requester.retryStalledAttempt() }
        if gap || askNow { runPendingSyncs() }
    }

    func connect(_ peer: PeerTable.Entry) {
        let address = peer.subscribeAddress
        if !address.isEmpty { subscribe(to: peer.node, at: address) }
        _ = link(peer.address)
        logger.info("peer connected", ["peer": peer.node.description, "address": peer.address])
    }

    /// One SUB dialer per peer. A peer that comes back keeps the one it has (it
    /// reconnects by itself); dialing again on every return would add a connection each
    /// time, and each would deliver everything once more.
    /// A peer that serves streams is followed through its node stream (`/v1/nodes/<this
    /// node's name>`): it sends this node its heartbeats and the deltas of the rooms this
    /// node owns or holds, not every room's.
    func subscribe(to node: ReplicaID, at address: String) {
        let current = state.withLock { state in state.peers.entries[node].map { ($0.subscriberDialer, $0.dialedAddress, $0.dialedStream, $0.roomStreams) } }
        let streamURL = config.nodeStreams && current?.3 == true && !name.isEmpty ? RoomStreams.nodeURL(publishAddress: address, name: name) : nil
        if let (dialer, dialed, dialedStream, _) = current, dialer != nil, dialed == address, dialedStream == (streamURL != nil) { return }
        do {
            let dialer = try subscriber.dial(streamURL ?? address)
            let replaced = state.withLock { $0.peers.setDialer(node, dialer, address: address, stream: streamURL != nil) }
            if let replaced { subscriber.removeDialer(replaced) }
        } catch {
            logger.warning("cannot subscribe to a peer", ["peer": node.description, "address": address, "error": error.description])
        }
    }

    /// While a partition drops its packets, TCP backs off exponentially, on established
    /// connections and on connection attempts alike (after a 20 s cut, about 13 s between
    /// tries; a SYN is first retried after 1 s), so the first packets after the heal wait
    /// that long. From the moment a peer is suspect, its links (this node's SUB
    /// connection to it and its REQ connection) are therefore redialled every two
    /// heartbeat periods: a fresh SYN leaves within that long of the heal, and the peer
    /// is heard from, and repaired, at once. Only the connection is replaced (the
    /// transport closes its own descriptor at once); the dialer and its socket stay.
    func renewLinksOfSilentPeers() {
        let now = WallClock.monotonicMillis()
        let period = Self.renewalMillis(heartbeatMillis: config.heartbeatMillis)
        let due = state.withLock {
            $0.peers.renewalsDue(nowMillis: now, everyMillis: period, silentForMillis: config.suspectMillis)
        }
        // An attempt made by the renewal before is a period old: replaced. One younger
        // than a heartbeat period (the dialer's own retry) still has time to connect.
        let young = config.heartbeatMillis
        for renewal in due {
            if let dialer = renewal.dialer { subscriber.redial(dialer, keepingAttemptsYoungerThan: young) }
            if let stale = renewal.staleDialer { subscriber.removeDialer(stale) }
            if let address = renewal.publishAddress { subscribe(to: renewal.node, at: address) }
            if let address = renewal.requestAddress {
                if let requester = links.withLock({ $0[address] }) {
                    requester.reconnect(keepingAttemptsYoungerThan: young)
                } else {
                    _ = link(address)
                }
            }
            metrics.add("links_renewed_total")
        }
    }

    /// How often a silent peer's links are redialled: two heartbeat periods (so a link
    /// whose round trip is longer than that may not connect while its peer is silent).
    static func renewalMillis(heartbeatMillis: UInt64) -> UInt64 { 2 * heartbeatMillis }

    /// Forgets peers down for longer than the permanent-down period: their dialers and
    /// links close, and they are no longer dialled or gossiped. A forgotten peer that
    /// comes back is greeted like a new one.
    func forgetPermanentlyDownPeers() {
        let now = WallClock.monotonicMillis()
        let own = replica
        let superseded = state.withLock { $0.peers.forgetSuperseded(own: own, name: name) }
        for entry in superseded {
            logger.notice("peer forgotten: a newer store of its node name is running", ["peer": entry.node.description, "address": entry.address])
        }
        // An origin only expected (never heard since this node started) is forgotten after the
        // permanent-down period even when down peers are never forgotten: it may never run again.
        let permanent = config.permanentDownMillis == 0 ? nil : config.permanentDownMillis
        let down = state.withLock { $0.peers.forget(downForMillis: permanent, expectedForMillis: permanent ?? NodeConfig.defaultPermanentDownMillis, nowMillis: now) }
        for entry in down {
            logger.notice("peer forgotten: down for longer than the permanent-down period", ["peer": entry.node.description, "address": entry.address])
        }
        for entry in superseded + down {
            state.withLock { _ = $0.heartbeatsSeen.removeValue(forKey: entry.node) }
            if let dialer = entry.subscriberDialer { subscriber.removeDialer(dialer) }
            let stillUsed = state.withLock { state in state.peers.entries.values.contains { $0.address == entry.address } }
            if !stillUsed, let requester = links.withLock({ $0.removeValue(forKey: entry.address) }) { requester.close() }
            metrics.add("peers_forgotten_total")
        }
    }

    /// The REQ link to a node's REP address, made on first use.
    func link(_ address: String) -> SPRequester? {
        links.withLock { links -> SPRequester? in
            if let existing = links[address] { return existing }
            // stop() empties the links after setting this: nothing may be added behind it.
            if state.withLock({ $0.stopping }) { return nil }
            guard let requester = try? SPRequester(limits: config.linkLimits, name: "hr-link") else { return nil }
            do { try requester.dial(address) } catch { requester.close(); return nil }
            links[address] = requester
            return requester
        }
    }

    /// False (and counted) for a heartbeat or hello not newer than the last one heard
    /// from its node: a replay keeps no dead node alive.
    func freshHeartbeat(_ heartbeat: WireMessage.Heartbeat, sequence: UInt64) -> Bool {
        // Sent too long ago (or too far ahead) by the sender's own clock: a recording.
        if heartbeat.sentAtMillis != 0 {
            let now = wallMillis()
            let window = Self.heartbeatWindowMillis + config.maxClockDriftMillis
            if heartbeat.sentAtMillis + window < now || heartbeat.sentAtMillis > now + config.maxClockDriftMillis {
                metrics.add("cluster_rejected_total{reason=\"replay\"}")
                return false
            }
        }
        let fresh = state.withLock { $0.freshHeartbeat(from: heartbeat.node, incarnation: heartbeat.incarnation, sequence: sequence) }
        if !fresh { metrics.add("cluster_rejected_total{reason=\"replay\"}") }
        return fresh
    }

    /// How old a heartbeat may be on arrival, beyond the clock drift allowed.
    static let heartbeatWindowMillis: UInt64 = 30_000

    /// What a client's hello learns when the node requires tokens: where this node
    /// publishes, and (with a valid token) the other live nodes' addresses for failover;
    /// never the rooms this node holds.
    func strangerHeartbeat(credential: [UInt8]) -> WireMessage.Heartbeat {
        var peers: [WireMessage.Peer] = []
        if let verifier = config.tokenVerifier, !credential.isEmpty,
           let claims = JoinToken.peek(String(decoding: credential, as: UTF8.self)),
           let verified = try? verifier.verify(String(decoding: credential, as: UTF8.self), room: claims.room, nowSeconds: Int64(wallMillis() / 1000)),
           !isRevoked(verified.user) {
            peers = state.withLock { $0.peers.wirePeers.filter { $0.status == .alive } }
        }
        var heartbeat = WireMessage.Heartbeat(node: replica, incarnation: incarnation, address: listenAddress, rooms: [], peers: peers,
                                              publishAddress: publishAddress, clusterPublishAddress: "")
        heartbeat.roomStreams = servesRoomStreams
        return heartbeat
    }

    /// The publish address also takes room streams (SP over WebSocket): TCP and TLS do.
    var servesRoomStreams: Bool { RoomStreams.url(publishAddress: publishAddress, room: "r") != nil }

    /// This node's heartbeat. A hello and a hello's answer list every room; a published
    /// heartbeat (`published`) mostly only the rooms that changed lately, with the hash of
    /// all of them (`OwnRoomDigest`), so an idle room costs gossip nothing.
    func ownHeartbeat(published: Bool = false) -> WireMessage.Heartbeat {
        var heartbeat = state.withLock { state in
            let changed = state.rooms.takeChanged(for: .gossip)
            state.ownDigest.refresh(changed: changed, in: state.rooms)
            let announcement = published ? state.ownDigest.nextHeartbeat() : nil
            let listed = announcement?.rooms ?? state.rooms.keys.sorted()
            var heartbeat = WireMessage.Heartbeat(node: replica, incarnation: incarnation, address: listenAddress,
                                                  rooms: listed.map { WireMessage.RoomDigest(roomID: $0, seen: state.rooms[$0]?.seen ?? VersionVector()) },
                                                  peers: state.peers.wirePeers, publishAddress: publishAddress,
                                                  clusterPublishAddress: clusterPublisher == nil ? "" : clusterPublishAddress,
                                                  sentAtMillis: state.engine.checkpointMillis(nowMillis: wallMillis()))
            if let announcement, !announcement.complete {
                heartbeat.roomsPartial = true
                heartbeat.roomsHash = announcement.hash
            }
            heartbeat.draining = state.draining
            return heartbeat
        }
        heartbeat.nodeName = name
        heartbeat.roomStreams = servesRoomStreams
        return heartbeat
    }

    // MARK: - The tick

    func tickLoop() {
        var tick: UInt64 = 0
        while !state.withLock({ $0.stopping }) {
            tick &+= 1
            let started = WallClock.monotonicMillis()
            if tick % 5 == 0 { checkHealth() }
            if tick % 5 == 0 { reloadRevoked() }
            if tick % 5 == 0 { rotateKeysOfExpiredTokens() }
            heartbeatWanted.store(false, ordering: .relaxed)
            if publishHeartbeat() { greetSeeds() }
            declareSilentNodesDown()
            renewLinksOfSilentPeers()
            probeSilentPeers()
            if tick % 25 == 0 { forgetPermanentlyDownPeers() }
            if tick % 5 == 0 { handOffRooms() }
            if tick % 50 == 0 { removeIdleRooms() }
            runPendingSyncs(recheckGaps: true)
            if tick % 5 == 0 { trimExpiredHistory() }
            if tick % 2 == 0 { expireIdleSessions() }
            if tick % 5 == 0 { endClosedClasses() }
            if tick % 25 == 0 { compactStore(force: true) } else { compactStore(force: false) }
            if tick % 25 == 0 { pruneRateLimiters() }
            // Sleep the rest of the period, in short steps so stop() is prompt, and so a
            // peer that has just (re)connected (after a heal: a renewed link) hears this
            // node within a step rather than up to a period later.
            // At most one such extra heartbeat per period, however many connect.
            let period = config.heartbeatMillis
            var sentEarly = false
            while !state.withLock({ $0.stopping }) {
                let elapsed = WallClock.monotonicMillis() &- started
                if elapsed >= period { break }
                if !sentEarly && heartbeatWanted.exchange(false, ordering: .relaxed) { sentEarly = publishHeartbeat() }
                Sleep.milliseconds(min(20, period - elapsed))
            }
        }
    }

    /// Publishes this node's heartbeat to its peers; false while it is cut off or wedged.
    @discardableResult
    func publishHeartbeat() -> Bool {
        let (isolated, wedged) = state.withLock { ($0.faults.isolated, $0.wedged != nil) }
        guard !isolated && !wedged else { return false }
        let message = framing.seal(WireCodec.encode(envelope(room: "", .heartbeat(ownHeartbeat(published: true)))))
        try? nodePublisher.send(topic: Topics.heartbeat, payload: message, nodes: .all)
        metrics.add("heartbeat_bytes_total", UInt64(message.count))
        metrics.add("heartbeats_published_total")
        return true
    }

    /// Forgets the rate-limit buckets that have refilled: the tables would otherwise
    /// hold every user (and room) that ever wrote or joined here.
    func pruneRateLimiters() {
        let now = WallClock.monotonicMillis()
        state.withLock { $0.engine.limits.prune(nowMillis: now) }
    }

    /// Folds each room's log into a fresh snapshot: rooms whose log is long or whose store
    /// missed an append (at every tick), or every dirty room when `force` (every 25 ticks).
    func compactStore(force: Bool) {
        let due = state.withLock { state -> [String] in
            guard state.store != nil else { return [] }
            return state.engine.compactions.due(everyRoom: force) { !state.engine.appendsPatches(room: $0) }
        }
        compact(rooms: due)
    }

    /// Stores a snapshot of every room whose log grew, now (the tick does it every 25
    /// ticks, and at once for a long log): for embedding and benchmarks. Returns how many
    /// rooms were stored and the largest snapshot's bytes.
    @discardableResult
    public func storeSnapshots() -> (rooms: Int, bytes: Int) {
        compact(rooms: state.withLock { state in state.store == nil ? [] : Array(state.engine.compactions.entries.keys) })
    }

    /// Compacts these rooms in turn, logging failures; how many were stored and the largest snapshot.
    @discardableResult
    private func compact(rooms: [String]) -> (rooms: Int, bytes: Int) {
        var stored = 0, largest = 0
        for room in rooms.sorted() {
            switch compact(room: room) {
            case let .stored(bytes):
                stored += 1
                largest = max(largest, bytes)
            case .unchanged: break
            case let .failed(error): logger.error("store compaction failed", ["room": room, "error": "\(error)"])
            }
        }
        return (stored, largest)
    }

    enum Compaction { case stored(bytes: Int), unchanged, failed(StoreError) }

    /// Stores a snapshot of one room in place of its log. Only the copy of the room and
    /// its log position are taken under the state lock; the snapshot is encoded and
    /// stored outside it, while writes go on (they land after the position and stay in
    /// the log). Compactions run one at a time (`compacting`, never taken under the state
    /// lock): two copies with the same log position can differ in what only memory
    /// holds (patches merged while the room was behind), and the later copy must be
    /// the one stored last.
    func compact(room: String) -> Compaction {
        compacting.withLock { _ in compactAlone(room: room) }
    }

    private func compactAlone(room: String) -> Compaction {
        // Under the room's gate: every append of the room (writes, remote deltas, patches)
        // runs under it and is applied before it is let go, so the log position read here
        // covers exactly what the state holds. Read before the state lock: it waits for
        // the store's lock, which a group commit in flight holds.
        let plan = writeGates.withGate(room) { () -> (NodeStore, RoomState, Int64, Int, NodeEngine.SnapshotMark, UInt64)? in
            guard let store = state.withLock({ $0.store }) else { return nil }
            let logMark = store.logMark(room: room)
            return state.withLock { state -> (NodeStore, RoomState, Int64, Int, NodeEngine.SnapshotMark, UInt64)? in
                guard let current = state.rooms[room] else { return nil }
                return (store, current, logMark, state.engine.compactions.entries[room] ?? 0, state.engine.snapshotMark,
                        state.engine.sequencer.clock.last)
            }
        }
        guard let (store, current, logMark, entries, snapshotMark, engineClock) = plan else { return .unchanged }
        let clock = ContinuousClock()
        let started = clock.now
        let encoded = WireCodec.encodePatch(current.snapshot())
        let stored: Bool
        do throws(StoreError) {
            stored = try store.compact(room: room, snapshot: encoded, upTo: logMark, clock: engineClock)
        } catch {
            return .failed(error)
        }
        let elapsed = clock.now - started
        metrics.add("store_compact_micros_sum", UInt64(elapsed.components.attoseconds / 1_000_000_000_000) + UInt64(elapsed.components.seconds) * 1_000_000)
        metrics.add("store_compact_count")
        guard stored else { return .unchanged }
        state.withLock { state in
            // What was appended since the copy stays counted: it is still in the log.
            state.engine.compactions.stored(room: room, covered: entries)
            state.engine.snapshotStored(room: room, takenAt: snapshotMark)
        }
        return .stored(bytes: encoded.count)
    }

    /// A reply from another node: sealed when the cluster has a key.
    func openReply(_ reply: [UInt8]) -> ArraySlice<UInt8>? {
        switch framing.open(reply[...]) {
        case let .authenticated(body): return body
        case let .plain(body): return framing.isEnabled ? nil : body
        case .refused: return nil
        }
    }

    /// Says hello to every seed not yet known as a live peer, each seed on a thread of
    /// its own. A seed across a partition answers nothing, and waiting for it here (a
    /// request timeout per seed, every tick) held up this node's heartbeats for seconds,
    /// so that nodes on its own side declared it down too.
    func greetSeeds() {
        let known = state.withLock { state in Set(state.peers.alive.filter { $0.status == .alive }.map(\.address)) }
        let wanted = config.seeds.filter { $0 != listenAddress && $0 != config.listen && !known.contains($0) }
        guard !wanted.isEmpty else { return }
        for seed in state.withLock({ $0.peers.startGreeting(wanted) }) {
            do {
                _ = try OSThread(name: "hr-greet") { [weak self] in
                    self?.greet(seed)
                    self?.state.withLock { $0.peers.finishGreeting(seed) }
                }
            } catch {
                state.withLock { $0.peers.finishGreeting(seed) }
            }
        }
    }

    /// One hello to one seed; its answer is a heartbeat like any other.
    func greet(_ seed: String) {
        _ = askForCompleteList(seed)
    }

    /// A hello to the node at `address`: its answer lists every room it holds, and is
    /// heard as any heartbeat. False when it did not answer.
    func askForCompleteList(_ address: String) -> Bool {
        guard !state.withLock({ $0.stopping }), let requester = link(address) else { return false }
        let hello = framing.seal(WireCodec.encode(envelope(room: "", .heartbeat(ownHeartbeat()))))
        guard let reply = try? requester.request(hello, timeout: .milliseconds(Int64(config.requestTimeoutMillis))),
              let body = openReply(reply),
              let decoded = try? WireCodec.decode(Array(body), limits: config.limits),
              case let .heartbeat(heartbeat) = decoded.message else { return false }
        if state.withLock({ $0.faults.cuts(heartbeat.node) }) { return false }
        heard(heartbeat)
        return true
    }

    /// Nodes silent past the down period are declared down: their sessions end on every replica.
    func declareSilentNodesDown() {
        let now = WallClock.monotonicMillis()
        let dead = state.withLock { $0.peers.sweep(nowMillis: now, suspectMillis: config.suspectMillis, downMillis: config.downMillis) }
        for peer in dead {
            // monotonic_ms (this machine's CLOCK_MONOTONIC) lets a harness on the same machine
            // place the silence among its faults (homeroom-chaos counts false downs so).
            // silent_ms: since its last sign of life (heard, or found alive by a probe).
            logger.notice("peer declared down", ["peer": peer.node.description, "address": peer.address,
                                                 "silent_ms": "\(PeerLiveness.elapsed(since: peer.liveness.lastEvidenceMillis, now: now))", "monotonic_ms": "\(now)",
                                                 "unheard_ms": "\(PeerLiveness.elapsed(since: peer.lastHeardMillis, now: now))"])
            metrics.add("peers_declared_down_total")
            endSessions(of: peer.node, incarnation: peer.incarnation)
        }
    }

    func endSessions(of node: ReplicaID, incarnation: UInt64) {
        // Each owner ends them in the rooms it owns.
        let rooms = state.withLock { state in state.rooms.keys.filter { state.owns($0, ownName: name) } }
        let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0,
                          operation: .replicaDown(replica: node, incarnation: incarnation))
        // Also while stopping: this node's own sessions end as it goes.
        for room in rooms { sequenceSystemWrite(room: room, write, evenWhileStopping: true) }
    }

    /// Pulls from peers what this node lacks: compact patches, merged and relayed to
    /// clients. Off the tick: each peer's pulls run on a thread of their own, one request
    /// in flight per peer, so a peer that answers slowly or not at all (cut off, paused)
    /// holds up neither this node's heartbeats nor its pulls from the others.
    func runPendingSyncs(recheckGaps: Bool = false) {
        let batches = state.withLock { state -> [(peer: ReplicaID, address: String, keys: [NodeState.SyncKey])] in
            if recheckGaps { state.requeueOpenGaps() }
            let peers = state.peers, faults = state.faults
            // A cut or dead peer loses its pulls: its digests ask again once it is back.
            return state.pulls.startBatches { peer in
                !faults.cuts(peer) && peers.entries[peer].map { $0.status != .dead } == true
            }.map { batch in (batch.peer, peers.entries[batch.peer]!.address, batch.keys) }
        }
        for batch in batches {
            do {
                _ = try OSThread(name: "hr-pull") { [weak self] in self?.pull(batch.keys, from: batch.address, peer: batch.peer) }
            } catch {
                // No thread: ask again next tick.
                state.withLock { $0.pulls.finished(peer: batch.peer, unanswered: batch.keys) }
            }
        }
    }

    /// One peer's pulls, in turn; the first that gets no answer puts it and the rest
    /// back for a later tick (a silent peer costs one timeout, not one per room).
    func pull(_ keys: [NodeState.SyncKey], from address: String, peer: ReplicaID) {
        var unanswered: [NodeState.SyncKey] = []
        defer { state.withLock { [unanswered] in $0.pulls.finished(peer: peer, unanswered: unanswered) } }
        for (index, key) in keys.enumerated() {
            if state.withLock({ $0.stopping }) { return }
            guard pull(key, from: address) else {
                unanswered = Array(keys[index...])
                return
            }
        }
    }

    /// Pulls one room from one peer (or its complete room list); false when the peer did not answer.
    func pull(_ key: NodeState.SyncKey, from address: String) -> Bool {
        if key.room == NodeState.SyncKey.completeList { return askForCompleteList(address) }
        // Not a room this node owns (any more): its owners pull it.
        guard state.withLock({ $0.owns(key.room, ownName: name) || $0.quarantined[key.room] != nil }) else { return true }
        guard let requester = link(address) else { return false }
        let seen = state.withLock { $0.rooms[key.room]?.seen ?? VersionVector() }
        let request = framing.seal(WireCodec.encode(envelope(room: key.room, .syncRequest(WireMessage.SyncRequest(seen: seen)))))
        guard let reply = try? requester.request(request, timeout: .milliseconds(Int64(config.requestTimeoutMillis))) else { return false }
        metrics.add("sync_bytes_total", UInt64(reply.count + request.count))
        guard let body = openReply(reply) else { return true }
        let decoded: WireEnvelope
        do {
            decoded = try WireCodec.decode(Array(body), limits: config.replyLimits)
        } catch {
            // Never silent: a patch this node cannot read would otherwise be pulled again
            // and again. Counted each time, logged once a minute per peer and room.
            metrics.add("sync_decode_failures_total")
            let now = WallClock.monotonicMillis()
            let due = state.withLock { state -> Bool in
                if let last = state.decodeFailureLogged[key], now &- last < 60_000 { return false }
                state.decodeFailureLogged[key] = now
                return true
            }
            if due {
                logger.error("a peer's repair patch does not decode: this room stays behind that peer until one side is fixed",
                             ["room": key.room, "peer": "\(key.peer)", "bytes": "\(body.count)", "error": "\(error)"])
            }
            return true
        }
        state.withLock { state in
            if !state.decodeFailureLogged.isEmpty { state.decodeFailureLogged[key] = nil }
        }
        guard case let .syncResponse(response) = decoded.message, let patch = response.patch, patch.roomID == key.room else { return true }
        enum Merged { case unchanged, changed, recovered(String), changedBehind(ours: UInt64, theirs: UInt64) }
        // Encoded before the lock: the store gets these bytes if the merge changes the room.
        let hasStore = state.withLock { $0.store != nil }
        let encodedPatch = hasStore ? WireCodec.encodePatch(patch) : []
        // Under the room's gate: stored outside the state lock when it brings writes this
        // node lacks, then merged under it (nothing a heartbeat announces lives in memory
        // alone), with no other store, apply or compaction of this room between.
        let (merged, recovering, patchError) = writeGates.withGate(key.room) { () -> (Merged, Bool, StoreError?) in
            enum Plan { case skip, merge(append: NodeStore?) }
            let plan = state.withLock { state -> Plan in
                // Handed off while the pull was in flight: not this node's to bring back.
                guard state.owns(key.room, ownName: name) || state.quarantined[key.room] != nil else { return .skip }
                // Not after a missed append (`appendsPatches`): the patch's vector would cover
                // what the store lacks. Nor a quarantined room's: a snapshot replaces its rows.
                guard state.quarantined[key.room] == nil, let store = state.store, state.engine.appendsPatches(room: key.room),
                      state.engine.patchBringsWrites(room: key.room, patch) else { return .merge(append: nil) }
                return .merge(append: store)
            }
            guard case let .merge(append) = plan else { return (.unchanged, false, nil) }
            var patchError: StoreError?
            var appended = false
            if let append {
                do throws(StoreError) {
                    try append.append(room: key.room, encodedPatch: encodedPatch)
                    appended = true
                } catch {
                    patchError = error
                }
            }
            let (merged, recovering) = state.withLock { state -> (Merged, Bool) in
                let merge = state.engine.merge(room: key.room, patch)
                state.arriving.remove(key.room)
                state.declined.remove(key.room)
                if let why = state.quarantined[key.room] {
                    // A quarantined room, rebuilt from a peer's full state (its sync asked from
                    // nothing). It stays out of service until a snapshot of it replaces its
                    // broken rows (below, outside the lock), so no write is appended to rows
                    // that would quarantine it again on a restart. Its sequence numbers continue
                    // from what the peers hold of this node's (the engine's merge saw to it).
                    // What it holds is in memory only: a miss, until a snapshot taken after it is stored.
                    if state.store != nil {
                        state.engine.storeMissed(room: key.room)
                        state.engine.compactions.appended(room: key.room)
                    }
                    return (.recovered(why), true)
                }
                if appended { state.engine.compactions.appended(room: key.room) }
                // What the merge brought and the store did not take (behind, a failed append,
                // or a change beyond the version vector) is in memory only: a miss.
                if merge.changed && !appended && state.store != nil {
                    state.engine.storeMissed(room: key.room)
                    state.engine.compactions.appended(room: key.room)
                }
                if let behind = merge.ownSequenceBehind { return (.changedBehind(ours: behind.ours, theirs: behind.theirs), false) }
                return (merge.changed ? .changed : .unchanged, false)
            }
            return (merged, recovering, patchError)
        }
        // Not fatal: the room is behind until a snapshot of it is stored (NodeEngine+Store).
        if let patchError { logger.warning("store failed for a repair patch", ["room": key.room, "error": "\(patchError)"]) }
        var storeError: StoreError?
        if recovering {
            // On failure it is served from memory: still behind and dirty, so the tick
            // stores its snapshot until one succeeds.
            if hasStore, case let .failed(error) = compact(room: key.room) { storeError = error }
            state.withLock { state in
                state.quarantined.removeValue(forKey: key.room)
                // Recovered here, kept elsewhere: handed off like any copy.
                if !state.owns(key.room, ownName: name) { state.handingOff.insert(key.room) }
            }
        }
        let changed: Bool
        switch merged {
        case .unchanged:
            changed = false
        case .changed:
            changed = true
        case let .changedBehind(ours, theirs):
            logger.error("peers hold writes of this node's own id above its last sequence: was its store restored from an old copy? Numbering from above them",
                         ["room": key.room, "peer": "\(key.peer)", "ours": "\(ours)", "theirs": "\(theirs)"])
            metrics.add("own_sequence_behind_total")
            changed = true
        case let .recovered(why):
            if let storeError {
                logger.error("a recovered room could not be stored; it stays served from memory", ["room": key.room, "error": "\(storeError)"])
            }
            metrics.add("rooms_recovered_total")
            logger.notice("quarantined room recovered from a peer: back in service", ["room": key.room, "peer": "\(key.peer)", "was": why])
            changed = true
        }
        if changed {
            metrics.add("gaps_repaired_total")
            publishPatch(room: key.room, patch)
        }
        return true
    }
}
