import HomeroomCore

/// Refutation, as in SWIM: a node cut off longer than the down period is declared down
/// by the others, who end the sessions of its current incarnation (`replica_down`).
/// When the declaration reaches it, the node is evidently alive: it moves to a new
/// incarnation and writes a copy of each of its live sessions under it, so its users
/// are online everywhere without reconnecting. A copy's id is the client's session id
/// with the copy mark and the new incarnation (`SessionIDs`); when the client's own
/// session ends (it left), its copies end too (`orphanedCopies`).
extension NodeEngine {
    /// A session of the incarnation declared down, written again under the new one.
    public struct SessionCopy: Sendable, Equatable {
        public var room: String
        public var user: UserID
        /// The session the copy stands for (the client keeps naming it).
        public var original: SessionID
        public var copy: SessionID
        public var operation: Operation
    }

    public struct Refutation: Sendable, Equatable {
        /// The incarnation declared down (this node's current one).
        public var declared: UInt64
        /// The incarnation to move to: above the declared one, above every incarnation of
        /// this node any room marks dead, and (so it also orders across restarts) at least now.
        public var next: UInt64
        public var copies: [SessionCopy]
    }

    /// Whether a room says this node's current incarnation is down, and if so what to
    /// write: the copies of its live sessions (not banned, not kicked since they began).
    /// The caller moves to `next` (`liveIncarnation`) and writes the copies as system.
    /// Only rooms changed since the last call are looked at again (`RoomTable.Pass`).
    public mutating func refutation(nowMillis: UInt64) -> Refutation? {
        let current = incarnation
        for roomID in rooms.takeChanged(for: .refutation) { deadMarks[roomID] = rooms[roomID]?.deadIncarnations[replica] }
        let marks = deadMarks.values
        guard marks.contains(where: { $0 >= current }) else { return nil }
        let next = max(current + 1, (marks.max() ?? 0) + 1, nowMillis)
        var copies: [SessionCopy] = []
        for roomID in rooms.keys.sorted() {
            let room = rooms[roomID]!
            for (user, record) in room.users where !record.isBanned {
                // Only sessions of the incarnation just declared down; older ones ended at boot.
                for session in record.sessions
                where session.host == replica && session.incarnation == current && session.ended == nil && record.kicked < session.started {
                    let copy = SessionIDs.copy(of: session.id, incarnation: next)
                    copies.append(SessionCopy(room: roomID, user: user, original: session.id, copy: copy,
                                              operation: .joinSession(user: user, session: copy, name: record.name.value, role: record.role.value,
                                                                      host: replica, incarnation: next)))
                }
            }
        }
        copies.sort { ($0.room, $0.user, $0.copy) < ($1.room, $1.user, $1.copy) }
        return Refutation(declared: current, next: next, copies: copies)
    }

    /// Live copies hosted here whose client's own session has ended: each must end too
    /// (`leaveSession`), or it would stay online as a ghost.
    /// Only rooms changed since the last call are looked at, and rooms that had orphans
    /// then (until their copies end): whether a copy is orphaned depends on its room alone.
    public mutating func orphanedCopies() -> [(room: String, user: UserID, session: SessionID)] {
        var orphans: [(room: String, user: UserID, session: SessionID)] = []
        let candidates = roomsWithOrphans.union(rooms.takeChanged(for: .orphanedCopies))
        roomsWithOrphans = []
        for roomID in candidates.sorted() {
            guard let room = rooms[roomID] else { continue }
            for (user, record) in room.users {
                // Allocates nothing for the users (nearly all, in a lecture hall) without a live copy here.
                let copies = record.sessions.filter { $0.ended == nil && $0.host == replica && SessionIDs.copyMarkStart(in: $0.id) != nil }
                guard !copies.isEmpty else { continue }
                let ended = Set(record.sessions.lazy.filter { $0.ended != nil }.map { SessionIDs.base($0.id) })
                for copy in copies where ended.contains(SessionIDs.base(copy.id)) {
                    orphans.append((roomID, user, copy.id))
                    roomsWithOrphans.insert(roomID)
                }
            }
        }
        // In a fixed order (users are kept by hash): the simulation's random draws follow
        // the writes made for them, so a replay must see the same list.
        orphans.sort { ($0.room, $0.user, $0.session) < ($1.room, $1.user, $1.session) }
        return orphans
    }

    /// At boot: each of `rooms` must mark `previous` (this node's incarnation before the
    /// boot) dead, ending the sessions it hosted: no ghosts. Until a room's
    /// `replica_down` is applied there it is asked for again (`earlierIncarnationMarks`),
    /// so a store that failed the write does not leave them online for ever.
    public mutating func endEarlierIncarnation(_ previous: UInt64, in rooms: [String]) {
        for room in rooms { earlierIncarnationsToMark[room] = max(earlierIncarnationsToMark[room] ?? 0, previous) }
    }

    /// The `replica_down` writes still due for this node's earlier incarnation (written as
    /// system); a room whose state marks it dead already needs none any more.
    public mutating func earlierIncarnationMarks() -> [(room: String, operation: Operation)] {
        var due: [(room: String, operation: Operation)] = []
        for (room, previous) in earlierIncarnationsToMark.sorted(by: { $0.key < $1.key }) {
            // Done once applied; never due in a room gone from here, or one that retired this
            // replica id (it takes nothing of it any more: asking again would never end).
            guard let state = rooms[room], !state.isRetired(replica), (state.deadIncarnations[replica] ?? 0) < previous else {
                earlierIncarnationsToMark[room] = nil
                continue
            }
            due.append((room, .replicaDown(replica: replica, incarnation: previous)))
        }
        return due
    }
}

