import HomeroomCore

/// Session leases: a client that vanishes (killed, unplugged, its laptop shut) never
/// sends `leave_session`, and its node stays alive, so nothing else would ever end its
/// session: it would stay online. A client that names its session in its syncs renews a
/// lease at the node hosting it; a lease not renewed for `EnginePolicy.sessionTimeoutMillis`
/// ends the session with a `leave_session` the node writes itself (as system). Clients
/// that never name a session (older or minimal ones) renew every lease of their user.
///
/// Lease times are whatever clock the caller passes (the node: monotonic ms), never
/// compared with stamps. Leases live in memory: a restart ends the old incarnation's
/// sessions anyway, and a client that stays attached reclaims its session (`reclaim`).
public struct SessionLease: Sendable, Equatable {
    public var user: UserID
    public var renewedMillis: UInt64
    /// When its expiry was last reported (its leave asked for): asked again only after
    /// `NodeEngine.leaseRetryMillis`, while the leave does not apply (a failing store).
    public var reportedMillis: UInt64? = nil
}

extension NodeEngine {
    /// Sessions holding a lease here now, in every room.
    public var leasedSessions: Int { leases.values.reduce(0) { $0 + $1.count } }

    /// How long a leave asked for by an expired lease has to apply before it is asked again.
    public var leaseRetryMillis: UInt64 { max(1, min(policy.sessionTimeoutMillis, 5_000)) }

    /// Whether a session of this room holds a lease here (a room is not handed off while one does).
    public func holdsLeases(in room: String) -> Bool { leases[room] != nil }

    /// A session just joined here: its lease runs from now.
    public mutating func startLease(room: String, session: SessionID, user: UserID, nowMillis: UInt64) {
        guard policy.sessionTimeoutMillis > 0, !session.isEmpty, !user.isEmpty else { return }
        leases[room, default: [:]][session] = SessionLease(user: user, renewedMillis: nowMillis)
    }

    /// A client's sync: renews the lease of the session it names if this node hosts it
    /// (a live session of this incarnation, whose lease a restart lost: it gets one
    /// again), or, when it names none, every lease of its user here.
    public mutating func renewLease(room: String, session: SessionID, user: UserID, nowMillis: UInt64) {
        guard policy.sessionTimeoutMillis > 0, !user.isEmpty else { return }
        if session.isEmpty {
            guard let held = leases[room] else { return }
            for (id, lease) in held where lease.user == user { renew(room: room, session: id, nowMillis: nowMillis) }
            return
        }
        if leases[room]?[session] != nil {
            renew(room: room, session: session, nowMillis: nowMillis)
            return
        }
        guard let state = rooms[room], let record = state.users[user],
              let hosted = record.sessions.first(where: { $0.id == session }),
              hosted.host == replica, hosted.incarnation == incarnation,
              record.isLive(hosted, deadIncarnations: state.deadIncarnations) else { return }
        leases[room, default: [:]][session] = SessionLease(user: user, renewedMillis: nowMillis)
    }

    /// Renews a held lease while its session is open; one whose session is over (its leave
    /// applied) goes instead of coming back to life.
    mutating func renew(room: String, session: SessionID, nowMillis: UInt64) {
        guard let lease = leases[room]?[session] else { return }
        if stillOpen(room: room, user: lease.user, session: session) {
            leases[room]![session] = SessionLease(user: lease.user, renewedMillis: nowMillis)
        } else {
            leases[room]![session] = nil
            if leases[room]?.isEmpty == true { leases[room] = nil }
        }
    }

    /// The sessions whose lease ran out, to be ended (`leave_session` as system). A lease
    /// goes once its session is over (the leave applied, or the client left, was kicked,
    /// the session moved), not before: a leave the store failed to take is asked for again
    /// at the next call, or the session would stay online for ever.
    public mutating func expiredLeases(nowMillis: UInt64) -> [(room: String, user: UserID, session: SessionID)] {
        let timeout = policy.sessionTimeoutMillis
        guard timeout > 0 else { return [] }
        var due: [(room: String, user: UserID, session: SessionID)] = []
        for (room, held) in leases {
            // Walks every lease without copying them; only what ran out is looked at.
            for (session, lease) in held where nowMillis > lease.renewedMillis && nowMillis - lease.renewedMillis > timeout {
                guard stillOpen(room: room, user: lease.user, session: session) else {
                    leases[room]![session] = nil
                    continue
                }
                if let reported = lease.reportedMillis, nowMillis >= reported, nowMillis - reported < leaseRetryMillis { continue }
                leases[room]![session]!.reportedMillis = nowMillis
                due.append((room, lease.user, session))
            }
            if leases[room]?.isEmpty == true { leases[room] = nil }
        }
        return due.sorted { ($0.room, $0.session) < ($1.room, $1.session) }
    }

    /// Whether a session still needs its lease: live, or of this node's current
    /// incarnation, open, and only marked dead (declared down, awaiting the refutation
    /// that copies it: the copy takes the lease over).
    func stillOpen(room: String, user: UserID, session id: SessionID) -> Bool {
        guard let state = rooms[room], let record = state.users[user],
              let session = record.sessions.first(where: { $0.id == id }) else { return false }
        if record.isLive(session, deadIncarnations: state.deadIncarnations) { return true }
        return session.ended == nil && !record.isBanned && record.kicked < session.started
            && session.host == replica && session.incarnation == incarnation
    }

    /// A refutation's copy takes over its original's lease: the client keeps renewing it
    /// by naming the original, and a copy of a client that vanished lapses like it. An
    /// original without a lease (its client never synced since this node's memory began)
    /// gives the copy one from now, so no copy lives on without a client.
    public mutating func carryLease(room: String, from original: SessionID, to copy: SessionID, user: UserID, nowMillis: UInt64) {
        guard policy.sessionTimeoutMillis > 0 else { return }
        leases[room, default: [:]][copy] = leases[room]?[original] ?? SessionLease(user: user, renewedMillis: nowMillis)
    }

    /// A client syncing here names a session: if a restart of this node ended it under the
    /// client (nng redials and resends, so the client noticed nothing), the copy to write
    /// under this incarnation, with its lease started; nil when there is nothing to do.
    /// It is the named session (older clients name none: the user's newest here) when it
    /// is open but of an earlier, dead incarnation of this node, not kicked, not banned,
    /// and not reclaimed once already in this incarnation (a copy whose lease ran out
    /// means the client has to join again). A live copy of it here gets the lease the
    /// client renews by naming its original.
    public mutating func reclaim(room: String, session named: SessionID, user: UserID, nowMillis: UInt64) -> SessionCopy? {
        let current = incarnation
        let leasing = policy.sessionTimeoutMillis > 0 && !named.isEmpty
        guard let state = rooms[room], let record = state.users[user], !record.isBanned else { return nil }
        let dead = state.deadIncarnations[replica] ?? 0
        let wanted = named.isEmpty ? nil : SessionIDs.base(named)
        var newest: SessionRecord?
        for session in record.sessions where session.host == replica && session.ended == nil && record.kicked < session.started {
            if let wanted, SessionIDs.base(session.id) != wanted { continue }
            // Live here (or awaiting this incarnation's own refutation): nothing to write.
            if session.incarnation > dead || session.incarnation >= current {
                if leasing && session.id != named && session.incarnation == current {
                    leases[room, default: [:]][session.id] = SessionLease(user: user, renewedMillis: nowMillis)
                }
                return nil
            }
            if newest.map({ $0.started < session.started }) ?? true { newest = session }
        }
        guard let newest else { return nil }
        let copy = SessionIDs.copy(of: newest.id, incarnation: current)
        if record.sessions.contains(where: { $0.id == copy }) { return nil }
        if leasing { leases[room, default: [:]][copy] = SessionLease(user: user, renewedMillis: nowMillis) }
        return SessionCopy(room: room, user: user, original: newest.id, copy: copy,
                           operation: .joinSession(user: user, session: copy, name: record.name.value, role: record.role.value,
                                                   host: replica, incarnation: current))
    }
}
