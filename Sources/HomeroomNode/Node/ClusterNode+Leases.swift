import HomeroomCore
import HomeroomWire
import HomeroomSupport

/// Session leases: a client that vanishes (killed, unplugged, its laptop shut) never
/// sends `leave_session`, and its node stays alive, so nothing else would ever end
/// its session: it would stay online. A client that names its session in its syncs
/// renews a lease at the node hosting it; a lease not renewed for
/// `sessionTimeoutMillis` ends the session with a `leave_session` the node writes
/// itself (as system), replicated like any other. Clients that never name a session
/// (older or minimal ones) hold no lease and are unaffected.
extension ClusterNode {
    /// Sessions holding a lease here now, in every room (tests, diagnostics).
    var leasedSessions: Int { state.withLock { $0.leases.values.reduce(0) { $0 + $1.count } } }

    /// A session just joined here: its lease runs from now.
    func startLease(room: String, session: SessionID, user: UserID) {
        guard config.sessionTimeoutMillis > 0, !session.isEmpty, !user.isEmpty else { return }
        let now = WallClock.monotonicMillis()
        state.withLock { state in
            state.leases[room, default: [:]][session] = NodeState.SessionLease(user: user, renewedMillis: now)
        }
    }

    /// A client's sync: renew the lease of the session it names if this node hosts it,
    /// or, when it names none (a minimal client), every lease of its user here.
    func renewLease(room: String, session: SessionID, user: UserID) {
        guard config.sessionTimeoutMillis > 0, !user.isEmpty else { return }
        let now = WallClock.monotonicMillis()
        if session.isEmpty {
            state.withLock { state in
                guard let leases = state.leases[room] else { return }
                for (id, lease) in leases where lease.user == user { state.leases[room]![id]!.renewedMillis = now }
            }
            return
        }
        let current = incarnation   // its own lock: read before taking the state's
        state.withLock { state in
            if state.leases[room]?[session] != nil {
                state.leases[room]![session]!.renewedMillis = now
                return
            }
            // Only sessions of this incarnation, still open: a lease is the host's duty.
            guard let room = state.rooms[room], let record = room.users[user],
                  let hosted = record.sessions.first(where: { $0.id == session }),
                  hosted.host == replica, hosted.incarnation == current,
                  record.isLive(hosted, deadIncarnations: room.deadIncarnations) else { return }
            state.leases[room.roomID, default: [:]][session] = NodeState.SessionLease(user: user, renewedMillis: now)
        }
    }

    /// Ends the sessions whose lease ran out (called from the heartbeat loop).
    func expireIdleSessions() {
        let timeout = config.sessionTimeoutMillis
        guard timeout > 0 else { return }
        let now = WallClock.monotonicMillis()
        let expired = state.withLock { state -> [(room: String, user: UserID, session: SessionID)] in
            var due: [(room: String, user: UserID, session: SessionID)] = []
            for (room, leases) in state.leases {
                for (session, lease) in leases where now &- lease.renewedMillis > timeout {
                    state.leases[room]![session] = nil
                    // Already over (the client left, was kicked, the session moved): nothing to write.
                    guard let current = state.rooms[room], current.users[lease.user]?.isLive(session: session, deadIncarnations: current.deadIncarnations) == true
                    else { continue }
                    due.append((room, lease.user, session))
                }
                if state.leases[room]?.isEmpty == true { state.leases[room] = nil }
            }
            return due
        }
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
