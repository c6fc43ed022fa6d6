import HomeroomCore
import HomeroomEngine
import HomeroomWire
import HomeroomSupport

/// Session leases (the policy is the engine's, `NodeEngine+Leases`): the shell feeds it
/// joins, syncs and the monotonic clock, and writes the leaves it asks for.
extension ClusterNode {
    /// Sessions holding a lease here now, in every room (tests, diagnostics).
    var leasedSessions: Int { state.withLock { $0.engine.leasedSessions } }

    /// A session just joined here: its lease runs from now.
    func startLease(room: String, session: SessionID, user: UserID) {
        let now = WallClock.monotonicMillis()
        state.withLock { $0.engine.startLease(room: room, session: session, user: user, nowMillis: now) }
    }

    /// A client's sync: renew the lease of the session it names if this node hosts it,
    /// or, when it names none (a minimal client), every lease of its user here.
    func renewLease(room: String, session: SessionID, user: UserID) {
        let now = WallClock.monotonicMillis()
        state.withLock { $0.engine.renewLease(room: room, session: session, user: user, nowMillis: now) }
    }

    /// Ends the sessions whose lease ran out (called from the heartbeat loop).
    func expireIdleSessions() {
        let now = WallClock.monotonicMillis()
        let expired = state.withLock { $0.engine.expiredLeases(nowMillis: now) }
        for lease in expired {
            if endSessionAsNode(room: lease.room, user: lease.user, session: lease.session) {
                metrics.add("sessions_expired_total")
                logger.info("session expired: its client stopped syncing", ["room": lease.room, "user": lease.user, "session": lease.session])
            }
        }
    }

    /// Ends one session with a leave this node writes itself (a lease that ran out, a
    /// revoked user); true when it was sequenced.
    func endSessionAsNode(room: String, user: UserID, session: SessionID) -> Bool {
        sequenceSystemWrite(room: room, Write(author: "node:\(name)", authorRole: .system, authorCounter: 0,
                                              operation: .leaveSession(user: user, session: session)))
    }
}
