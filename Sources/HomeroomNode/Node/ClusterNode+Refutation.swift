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
            markEarlierIncarnationDead()
            endReincarnationsOfLeftSessions()
            foldEndedSessions(recheckLater: round % 5 == 0)
            if round % 5 == 0 { foldCompleteRewards() }
            if round % 5 == 0 { stepAsideIfRetired() }
            if round % 5 == 2 { retirePredecessors() }
            if round % 150 == 3 { dropRetiredEntries() }
            var slept: UInt64 = 0
            while slept < config.heartbeatMillis && !state.withLock({ $0.stopping }) {
                Sleep.milliseconds(20)
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
        // Stored first, outside the state lock: a restart then numbers its incarnation above it.
        _ = try? state.withLock({ $0.store })?.setMeta("incarnation", Int64(bitPattern: next))
        state.withLock { $0.engine.liveIncarnation(next, sinceMillis: now) }
        metrics.add("refutations_total")
        logger.notice("declared down while alive: refuting with a new incarnation", ["old": "\(refutation.declared)", "new": "\(next)"])
        for copy in refutation.copies {
            systemWrite(room: copy.room, copy.operation)
            // The copy takes over the lease (renewed by the client's syncs from then on).
            let leaseNow = WallClock.monotonicMillis()
            state.withLock { $0.engine.carryLease(room: copy.room, from: copy.original, to: copy.copy, user: copy.user, nowMillis: leaseNow) }
            carryPresence(room: copy.room, user: copy.user, from: copy.original, to: copy.copy)
        }
    }

    /// A restart refutes nothing: the new boot ends the old incarnation's sessions (and
    /// a graceful stop ends them first). A client that noticed rejoins; one that did not
    /// (nng redials the same address and resends the request, so nothing failed) stays
    /// attached, writing and syncing, with no live session: offline everywhere. When such
    /// a client syncs here, the engine (`NodeEngine.reclaim`) says which copy to write so
    /// its session is live again, as a refutation would. Sessions whose clients are gone
    /// stay over: nothing syncs for them. Called for every client sync, so the common
    /// case (the session, or its copy, live here) is one lookup.
    func reclaimSession(room: String, session named: SessionID, user: UserID) {
        let now = WallClock.monotonicMillis()
        guard let copy = state.withLock({ $0.stopping ? nil : $0.engine.reclaim(room: room, session: named, user: user, nowMillis: now) })
        else { return }
        metrics.add("sessions_reclaimed_total")
        logger.info("a client attached across a restart: its session is live again", ["user": user, "session": copy.copy])
        systemWrite(room: room, copy.operation)
        carryPresence(room: room, user: user, from: copy.original, to: copy.copy)
    }

    /// Writes the `replica_down` of this node's incarnation before its boot where it is
    /// not applied yet (a failed store is tried again here, every presence round).
    func markEarlierIncarnationDead() {
        let due = state.withLock { $0.engine.earlierIncarnationMarks() }
        for mark in due { sequenceSystemWrite(room: mark.room, Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: mark.operation)) }
    }

    /// A client that leaves ends its original session; the copies a refutation made
    /// of it end too (`NodeEngine.orphanedCopies`).
    func endReincarnationsOfLeftSessions() {
        let orphans = state.withLock { $0.engine.orphanedCopies() }
        for orphan in orphans { systemWrite(room: orphan.room, .leaveSession(user: orphan.user, session: orphan.session)) }
    }


}
