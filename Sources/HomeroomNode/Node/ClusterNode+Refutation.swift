import HomeroomCore
import HomeroomSupport

/// Refutation, as in SWIM: a node cut off longer than the down period is declared
/// down by the others, who end the sessions of its current incarnation. When the
/// node hears of it (the `replica_down` reaches it after the heal), it is evidently
/// alive: it moves to a new incarnation and announces its live sessions again, so
/// its users are online everywhere without reconnecting.
extension ClusterNode {
    func presenceLoop() {
        var round: UInt64 = 0
        while !state.withLock({ $0.stopping }) {
            round &+= 1
            refuteIfDeclaredDown()
            endReincarnationsOfLeftSessions()
            foldEndedSessions(recheckLater: round % 5 == 0)
            if round % 5 == 0 { foldCompleteRewards() }
            if round % 5 == 0 { stepAsideIfRetired() }
            if round % 5 == 2 { retirePredecessors() }
            if round % 150 == 3 { dropRetiredEntries() }
            var slept: UInt64 = 0
            while slept < config.heartbeatMillis && !state.withLock({ $0.stopping }) {
                NNGSleep.milliseconds(20)
                slept += 20
            }
        }
    }

    /// The engine decides (`NodeEngine.refutation`); the shell moves to the new
    /// incarnation (stored first), writes the copies, and hands each copy its
    /// original's lease and presence state.
    func refuteIfDeclaredDown() {
        guard let refutation = state.withLock({ $0.stopping ? nil : $0.engine.refutation(nowMillis: WallClock.nowMillis()) }) else { return }
        let next = refutation.next
        incarnationBox.withLock { $0 = next }
        let now = wallMillis()
        state.withLock { state in
            _ = try? state.store?.setMeta("incarnation", Int64(bitPattern: next))
            state.engine.liveIncarnation(next, sinceMillis: now)
        }
        metrics.add("refutations_total")
        logger.notice("declared down while alive: refuting with a new incarnation", ["old": "\(refutation.declared)", "new": "\(next)"])
        for copy in refutation.copies {
            systemWrite(room: copy.room, copy.operation)
            // The copy takes over the lease (renewed by the client's syncs from then on).
            state.withLock { state in
                if let lease = state.leases[copy.room]?[copy.original] { state.leases[copy.room]![copy.copy] = lease }
            }
            carryPresence(room: copy.room, user: copy.user, from: copy.original, to: copy.copy)
        }
    }

    /// A restart refutes nothing: the new boot ends the old incarnation's sessions (and
    /// a graceful stop ends them first). A client that noticed rejoins; one that did not
    /// (nng redials the same address and resends the request, so nothing failed) stays
    /// attached, writing and syncing, with no live session: offline everywhere. When such
    /// a client syncs here, the node re-announces the session it names (older clients
    /// name none: then the user's newest) if that is still open but belongs to an earlier
    /// incarnation of this node, as a refutation would. Sessions whose clients are gone
    /// stay over: nothing syncs for them. Called for every client sync, so the common
    /// case (the session, or its copy, live here) is one lookup.
    func reclaimSession(room: String, session named: SessionID, user: UserID) {
        let current = incarnation
        let now = WallClock.monotonicMillis()
        let leasing = config.sessionTimeoutMillis > 0 && !named.isEmpty
        let orphan = state.withLock { state -> (SessionID, String, Role)? in
            guard let roomState = state.rooms[room], let record = roomState.users[user], !record.isBanned else { return nil }
            let dead = roomState.deadIncarnations[replica] ?? 0
            let wanted = named.isEmpty ? nil : SessionIDs.base(named)
            var newest: SessionRecord?
            for session in record.sessions where session.host == replica && session.ended == nil && record.kicked < session.started {
                if let wanted, SessionIDs.base(session.id) != wanted { continue }
                // Live here (or awaiting this incarnation's own refutation): nothing to do.
                if session.incarnation > dead || session.incarnation >= current {
                    // A copy (this one, or a refutation's) holds the lease the client renews
                    // by naming its original, or it would outlive a client that vanishes.
                    if leasing && session.id != named && session.incarnation == current {
                        state.leases[room, default: [:]][session.id] = NodeState.SessionLease(user: user, renewedMillis: now)
                    }
                    return nil
                }
                if newest.map({ $0.started < session.started }) ?? true { newest = session }
            }
            guard let newest else { return nil }
            // Reclaimed once already in this incarnation, and that copy has ended (its lease
            // ran out): the client has to join again; writing the same copy again would not.
            let renewed = SessionIDs.copy(of: newest.id, incarnation: current)
            if record.sessions.contains(where: { $0.id == renewed }) { return nil }
            return (newest.id, record.name.value, record.role.value)
        }
        guard let (session, name, role) = orphan, !state.withLock({ $0.stopping }) else { return }
        let renewed = SessionIDs.copy(of: session, incarnation: current)
        metrics.add("sessions_reclaimed_total")
        logger.info("a client attached across a restart: its session is live again", ["user": user, "session": renewed])
        systemWrite(room: room, .joinSession(user: user, session: renewed, name: name, role: role, host: replica, incarnation: current))
        if leasing { state.withLock { $0.leases[room, default: [:]][renewed] = NodeState.SessionLease(user: user, renewedMillis: now) } }
        carryPresence(room: room, user: user, from: session, to: renewed)
    }

    /// A client that leaves ends its original session; the copies a refutation made
    /// of it end too (`NodeEngine.orphanedCopies`).
    func endReincarnationsOfLeftSessions() {
        let orphans = state.withLock { $0.engine.orphanedCopies() }
        for orphan in orphans { systemWrite(room: orphan.room, .leaveSession(user: orphan.user, session: orphan.session)) }
    }


}
