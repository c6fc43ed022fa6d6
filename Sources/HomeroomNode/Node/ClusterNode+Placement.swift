import HomeroomCore
import HomeroomEngine
import HomeroomWire

/// Placement in the shell (docs/PROTOCOL.md, "Placement"): which rooms this node serves,
/// the `not-owner` answer that sends clients to the owners, and the handoff of copies
/// this node no longer owns. With `replicas` 0 every node owns every room and none of
/// this does anything.
extension NodeState {
    /// Placement over this node and every peer it knows by name and address and has not
    /// forgotten (an older store of a name counts once, with the name).
    /// Draining nodes (this one too) are left out; a draining node with no other member
    /// to hand its rooms to stays in (it keeps serving rather than send clients nowhere).
    func placement(ownName: String) -> Placement {
        let others = peers.entries.values.filter(Self.isMember).map(\.name)
        return Placement(replicas: replicas, members: (draining && !others.isEmpty ? [] : [ownName]) + others, pinned: roomReplicas)
    }

    /// Whether the room is kept on fewer nodes than the members (placement with more
    /// members than copies): only then can a node own it without holding it yet. With
    /// every member an owner (3 nodes and the default 3 copies), a node behaves as
    /// without placement.
    func keptApart(_ room: String, ownName: String) -> Bool {
        replicas > 0 && !everyMemberOwnsEverything && placement(ownName: ownName).copies(room) != 0
    }

    /// Whether the room may be owned here without being held yet: kept apart, or owned
    /// only since the members last changed and not rescanned yet (a drain or a forget
    /// that shrank the cluster to its copy count makes this node an owner of rooms it
    /// never held). Members that only grew while every member owned everything (a
    /// node starting, learning its peers) make no room newly owned.
    func mayOwnWithoutHolding(_ room: String, ownName: String) -> Bool {
        guard replicas > 0 else { return false }
        if keptApart(room, ownName: ownName) || (rooms[room] == nil && declined.contains(room)) { return true }
        let current = placement(ownName: ownName)
        guard current.members != placedMembers else { return false }
        let previous = Placement(replicas: replicas, members: placedMembers, pinned: roomReplicas)
        return !previous.owns(ownName, room: room) && current.owns(ownName, room: room)
    }

    /// A peer placement counts (by its name): known other than as an expected origin,
    /// with an address and a name, not draining.
    static func isMember(_ entry: PeerTable.Entry) -> Bool {
        !entry.liveness.isExpectedOnly && !entry.address.isEmpty && !entry.name.isEmpty && !entry.draining
    }

    /// Whether every member owns every room: no more members than copies, nothing pinned,
    /// not draining. Counted without building the member list (every delta and request
    /// asks `owns`); a name counted twice (two stores of one node) only sends the caller
    /// to the full computation.
    var everyMemberOwnsEverything: Bool {
        guard !draining, roomReplicas.isEmpty else { return false }
        var members = 1
        for entry in peers.entries.values where Self.isMember(entry) {
            members += 1
            if members > replicas { return false }
        }
        return true
    }

    /// The node names a room's deltas go to over node streams: its owners by placement,
    /// and every peer whose heartbeats say it holds the room (a handoff, a drain, a
    /// placement this node does not share yet). nil: every node (no placement, or the
    /// room on every member). A node left out still repairs through anti-entropy.
    func deltaAudience(_ room: String, ownName: String) -> Set<String>? {
        guard replicas > 0, !everyMemberOwnsEverything else { return nil }
        let placement = placement(ownName: ownName)
        guard placement.copies(room) != 0 else { return nil }
        var names = Set(placement.owners(of: room))
        for entry in peers.entries.values where !entry.name.isEmpty && entry.view.rooms[room] != nil { names.insert(entry.name) }
        return names
    }

    /// Other members heard alive and not draining: where a drain can hand rooms to.
    var aliveOtherMembers: Int {
        peers.entries.values.filter { $0.status == .alive && !$0.name.isEmpty && !$0.draining }.count
    }

    /// Whether this node is one of the room's owners (a draining node owns none, unless
    /// it is the only node left).
    func owns(_ room: String, ownName: String) -> Bool {
        if replicas == 0 && !draining { return true }
        if everyMemberOwnsEverything { return true }
        return placement(ownName: ownName).owns(ownName, room: room)
    }

    /// The peer entry that stands for a node name: alive if any, else the one heard last.
    func entry(named name: String) -> PeerTable.Entry? {
        peers.entries.values.filter { $0.name == name && !$0.address.isEmpty }
            .max { ($0.status == .alive ? 1 : 0, $0.lastHeardMillis, $0.node) < ($1.status == .alive ? 1 : 0, $1.lastHeardMillis, $1.node) }
    }

    /// The room's owners other than this node, as a `not-owner` reply names them.
    func ownerPeers(of room: String, ownName: String) -> [WireMessage.Peer] {
        let wire = Dictionary(peers.wirePeers.map { ($0.node, $0) }, uniquingKeysWith: { first, _ in first })
        return placement(ownName: ownName).owners(of: room).compactMap { entry(named: $0).flatMap { wire[$0.node] } }
    }
}

extension ClusterNode {
    /// Whether some room may be kept elsewhere: placement, or this node draining.
    var placementActive: Bool { config.replicas > 0 || state.withLock { $0.draining } }

    /// Starts a drain (`homeroom node drain`, POST /drain): this node leaves placement,
    /// announces it in its heartbeats, sends clients to the other nodes, and hands every
    /// room it holds to them; once it holds none, the handlers given to `onDrained` run
    /// (the `homeroom node` process then stops). With a single node nothing moves.
    /// False (and nothing changes) when no other node is heard alive to take the rooms.
    @discardableResult
    public func drain() -> Bool {
        let (started, rooms) = state.withLock { state -> (Bool?, Int) in
            if state.draining { return (nil, state.rooms.count) }
            guard state.aliveOtherMembers > 0 else { return (false, state.rooms.count) }
            state.draining = true
            state.placedMembers = []
            return (true, state.rooms.count)
        }
        switch started {
        case nil: return true
        case false?:
            logger.warning("drain refused: no other node is alive to take the rooms", [:])
            return false
        case true?:
            logger.notice("draining: handing every room to the other nodes", ["rooms": "\(rooms)"])
            heartbeatWanted.store(true, ordering: .relaxed)
            return true
        }
    }

    public var isDraining: Bool { state.withLock { $0.draining } }
    /// Draining, and every room it held is on its owners.
    public var isDrained: Bool { drainedReported.load(ordering: .relaxed) }

    /// Runs `handler` once the drain is over (on the tick thread).
    public func onDrained(_ handler: @escaping @Sendable () -> Void) {
        drainedHandlers.withLock { $0.append(handler) }
    }

    /// The `not-owner` answer to a client's request about a room this node does not own
    /// (nil when it owns it): the owners' addresses, best first, for the client to ask.
    func notOwnerReply(room: String) -> WireMessage.ErrorReply? {
        let owners = state.withLock { state -> [WireMessage.Peer]? in
            state.owns(room, ownName: name) ? nil : state.ownerPeers(of: room, ownName: name)
        }
        guard let owners else { return nil }
        let names = owners.map { $0.nodeName.isEmpty ? $0.address : "\($0.nodeName) (\($0.address))" }
        return WireMessage.ErrorReply(code: "not-owner", message:
            "room \(room) is kept on \(names.joined(separator: ", ")), not on this node: ask one of them", owners: owners)
    }

    /// Once a second: when the members changed, compares every peer's view again for the
    /// rooms this node now owns (a new owner pulls them) and notes the rooms it holds and
    /// no longer owns. Each such copy goes once every other owner is alive and holds all
    /// of it, and has for `handoffSettleMillis` (its store has then taken it: compactions
    /// store dirty rooms every 25 ticks), and no session hosted here is still leased in
    /// it. Sessions hosted here that hold no lease are ended first (their clients have
    /// moved): once the copy is gone, no node would end them.
    func handOffRooms() {
        guard config.replicas > 0 || state.withLock({ $0.draining }) else { return }
        let now = WallClock.monotonicMillis()
        let (due, sessions) = state.withLock { state -> ([String], [(room: String, user: UserID, session: SessionID)]) in
            let placement = state.placement(ownName: name)
            if placement.members != state.placedMembers {
                let previous = Placement(replicas: state.replicas, members: state.placedMembers, pinned: state.roomReplicas)
                state.placedMembers = placement.members
                rescanPlacement(placement, previous: previous, in: &state)
            }
            var due: [String] = []
            var sessions: [(room: String, user: UserID, session: SessionID)] = []
            for room in state.handingOff.sorted() {
                guard !state.engine.holdsLeases(in: room), coveredByOwners(room, placement, in: state) else {
                    state.coveredSince[room] = nil
                    continue
                }
                let hosted = liveSessionsHostedHere(room, in: state)
                if !hosted.isEmpty {
                    sessions += hosted
                    state.coveredSince[room] = nil
                    continue
                }
                let since = state.coveredSince[room] ?? now
                state.coveredSince[room] = since
                if now &- since >= config.handoffSettleMillis { due.append(room) }
            }
            return (due, sessions)
        }
        for session in sessions { _ = endSessionAsNode(room: session.room, user: session.user, session: session.session) }
        for room in due { handOff(room: room) }
        if state.withLock({ $0.draining && $0.rooms.isEmpty && $0.handingOff.isEmpty && $0.quarantined.isEmpty }), !drainedReported.exchange(true, ordering: .relaxed) {
            logger.notice("drained: every room this node held is on its owners", [:])
            for handler in drainedHandlers.withLock({ $0 }) { handler() }
        }
    }

    /// Sessions this node's incarnation hosts in a room, still live.
    private func liveSessionsHostedHere(_ roomID: String, in state: NodeState) -> [(room: String, user: UserID, session: SessionID)] {
        guard let room = state.rooms[roomID] else { return [] }
        var hosted: [(room: String, user: UserID, session: SessionID)] = []
        for (user, record) in room.users {
            for session in record.sessions where session.host == replica && record.isLive(session, deadIncarnations: room.deadIncarnations) {
                hosted.append((roomID, user, session.id))
            }
        }
        return hosted
    }

    /// A room this node owns but does not hold, or holds only from deltas that reached it
    /// (`NodeState.arriving`), while other nodes' heartbeats show more of it (it has just
    /// become an owner), or while it does not know yet what some peer that
    /// is not down holds (its view of that peer is not confirmed: it has just heard of
    /// it, or missed its changes): answering from an empty room would check writes against nothing. Pulls
    /// are queued; clients are answered `unavailable` (another owner serves them) until
    /// it arrives. Nil when the room is not on its way here: a new room.
    func roomOnItsWay(_ room: String) -> String? {
        guard config.replicas > 0 else { return nil }
        let now = WallClock.monotonicMillis()
        // Peers that may hold more than this node: heard within the down period. Not a
        // peer only probes keep from down (a bridge or ring partition): it cannot send
        // this node its rooms, and waiting for it would last the whole partition.
        func recent(_ entry: PeerTable.Entry) -> Bool {
            entry.status != .dead && PeerLiveness.elapsed(since: entry.lastHeardMillis, now: now) < config.downMillis
        }
        return state.withLock { state -> String? in
            guard state.rooms[room] == nil || state.arriving.contains(room), state.quarantined[room] == nil else { return nil }
            // Every member keeps it, and has since before the last change of members, and
            // it is not on its way here: as without placement, served from what is here.
            guard state.arriving.contains(room) || state.mayOwnWithoutHolding(room, ownName: name) else { return nil }
            let ours = state.rooms[room]?.seen ?? VersionVector()
            let holders = state.peers.entries.filter { entry in
                recent(entry.value) && entry.value.rooms[room].map { !ours.dominates($0) } == true
            }.map(\.key)
            for holder in holders { state.pulls.wantUntilClosed(NodeState.SyncKey(peer: holder, room: room)) }
            if !holders.isEmpty {
                return "room \(room) is moving to this node from \(holders.count) other node(s): retry in a moment, or at another of its owners"
            }
            // Peers not down (met, or only heard of) whose rooms this node cannot vouch for.
            let unknown = state.peers.entries.values.filter {
                recent($0) && !$0.address.isEmpty && !$0.liveness.isExpectedOnly && ($0.viewMismatched || $0.view.verifiedAtMillis == nil)
            }
            guard !unknown.isEmpty else {
                state.arriving.remove(room)
                return nil
            }
            return "this node is still learning which rooms \(unknown.count) other node(s) hold: retry in a moment, or at another of the room's owners"
        }
    }

    /// After a change of members: rooms to pull (owned now, and a peer's view shows more)
    /// and rooms to hand off (held, no longer owned).
    private func rescanPlacement(_ placement: Placement, previous: Placement, in state: inout NodeState) {
        let wasHandingOff = state.handingOff
        state.handingOff = Set(state.rooms.keys.filter { !placement.owns(name, room: $0) })
        state.coveredSince = state.coveredSince.filter { state.handingOff.contains($0.key) }
        // Owned again: the copy took no deltas meanwhile, so clients wait until it has caught up.
        for room in wasHandingOff.subtracting(state.handingOff) where state.rooms[room] != nil { state.arriving.insert(room) }
        for (peer, entry) in state.peers.entries where entry.status != .dead {
            for (room, theirs) in entry.rooms where placement.owns(name, room: room) && !state.engine.isTombstoned(room)
                && !(state.rooms[room]?.seen ?? VersionVector()).dominates(theirs) {
                state.pulls.wantUntilClosed(NodeState.SyncKey(peer: peer, room: room))
                // Owned only since this change (every member owns it now, say): clients
                // wait until it has caught up, as in any room kept apart.
                if !previous.owns(name, room: room) { state.arriving.insert(room) }
            }
        }
        // Gaps in rooms this node no longer owns are not its to close.
        state.pulls.forget { $0.room != NodeState.SyncKey.completeList && !placement.owns(name, room: $0.room) }
    }

    private func coveredByOwners(_ room: String, _ placement: Placement, in state: NodeState) -> Bool {
        let views = placement.owners(of: room).filter { $0 != name }.map { owner -> VersionVector? in
            guard let entry = state.entry(named: owner), entry.status == .alive, !entry.viewMismatched else { return nil }
            return entry.rooms[room]
        }
        return state.engine.coveredByOwners(room: room, views: views)
    }

    /// Drops one copy this node no longer owns, with its store rows, keeping its sequence floor.
    private func handOff(room: String) {
        let outcome = removeCopy(of: room) { state in
            let placement = state.placement(ownName: name)
            return !placement.owns(name, room: room) && !state.engine.holdsLeases(in: room) && coveredByOwners(room, placement, in: state)
        }
        switch outcome {
        case .success:
            metrics.add("rooms_handed_off_total")
            logger.info("room handed off: every owner holds it", ["room": room])
        case let .failure(error):
            // The room left memory; its rows stay until the next handoff of it (a restart
            // loads it again, and it goes again once covered).
            logger.warning("a handed-off room's rows could not be removed", ["room": room, "error": "\(error)"])
        case nil:
            break
        }
    }

    /// Removes this node's copy of `room` while `stillDue` holds (checked under the state
    /// lock), with its store rows, keeping its sequence floor: nil when not due (or not
    /// held). Under the compaction lock (taken before the state lock, as compactions do),
    /// so no snapshot in flight stores the room again after its rows are gone, and under
    /// the room's write gate, so no write of it is between its store and its commit. The
    /// rows go outside the state lock (the gate keeps this room's writes out meanwhile).
    func removeCopy(of room: String, stillDue: (inout NodeState) -> Bool) -> Result<Void, StoreError>? {
        removeRoom(room, dropping: { state in stillDue(&state) ? state.engine.handOff(room: room) : nil },
                   storing: { store, floor throws(StoreError) in try store.handOff(room: room, floor: floor) })
    }

    /// Drops `room` from memory with `dropping` (nil: not now) and its rows with `storing`,
    /// and forgets what the node keeps about it: the locking a handoff and a closed room's
    /// removal share (see `removeCopy`).
    func removeRoom<Dropped>(_ room: String, dropping: (inout NodeState) -> Dropped?,
                             storing: (NodeStore, Dropped) throws(StoreError) -> Void) -> Result<Void, StoreError>? {
        compacting.withLock { _ in writeGates.withGate(room) { () -> Result<Void, StoreError>? in
            let dropped = state.withLock { state -> (Dropped, NodeStore?)? in
                guard let dropped = dropping(&state) else { return nil }
                state.handingOff.remove(room)
                state.arriving.remove(room)
                state.coveredSince[room] = nil
                state.lastTrim[room] = nil
                state.retirementRooms.remove(room)
                state.historyRooms.remove(room)
                state.pulls.forget { $0.room == room }
                return (dropped, state.store)
            }
            guard let (value, store) = dropped else { return nil }
            guard let store else { return .success(()) }
            do throws(StoreError) {
                try storing(store, value)
                return .success(())
            } catch {
                return .failure(error)
            }
        } }
    }
}
