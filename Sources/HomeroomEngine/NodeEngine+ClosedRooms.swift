import HomeroomCore

/// Closed classes (Agora's class state 3; docs/ARCHITECTURE.md, "Closed classes"). Once
/// a class is `after` and its schedule's close delay has passed, the room is closed:
/// every write is refused `room-closed` (`RoomState.admit`), each node ends the live
/// sessions it hosts there, and after the node's closed-room retention the room is
/// removed and a tombstone kept (`ClosedRoomTombstones`). Every verdict here reads only
/// the replicated class-state stamp and schedule plus the time passed in, so every
/// replica reaches the same one (within the nodes' clock drift).
extension NodeEngine {
    /// Sessions this node hosts, still live, in rooms closed at `nowMillis`: to end with a
    /// `leave_session` as system (as an expired lease is), sorted so the order is fixed.
    /// Each node ends only its own sessions, so no two nodes write the same leave.
    /// At most `limit` a pass: each is a stored write, and the pass runs on the tick that
    /// also sends the heartbeats (a closing lecture hall ends the rest in later passes).
    public func sessionsToEndInClosedRooms(nowMillis: UInt64, limit: Int = 512) -> [(room: String, user: UserID, session: SessionID)] {
        var due: [(room: String, user: UserID, session: SessionID)] = []
        for (roomID, room) in rooms where room.isClosed(nowMillis: nowMillis) && room.hasLiveSession {
            for (user, record) in room.users {
                for session in record.sessions where session.host == replica && record.isLive(session, deadIncarnations: room.deadIncarnations) {
                    due.append((roomID, user, session.id))
                }
            }
        }
        return Array(due.sorted { ($0.room, $0.user, $0.session) < ($1.room, $1.user, $1.session) }.prefix(limit))
    }

    /// Rooms closed for at least `retentionMillis` at `nowMillis`: to remove, tombstone
    /// kept, at most `limit` a pass (classes end on the hour; the rest go next pass). A
    /// class goes with the rooms of the breakout groups it made that are held here (a
    /// group's room is gated by its main room, closed too); a room merely named like one
    /// of its groups is an ordinary room and stays.
    public func closedRoomsToRemove(nowMillis: UInt64, retentionMillis: UInt64, limit: Int = 64) -> [String] {
        var closed: [String] = []
        for (id, room) in rooms where room.isRemovableAfterClosing(nowMillis: nowMillis, retentionMillis: retentionMillis) { closed.append(id) }
        guard !closed.isEmpty else { return [] }
        let classes = Set(closed)
        let groups = rooms.keys.filter { id in
            guard let group = Breakout.parse(roomID: id), classes.contains(group.mainRoom) else { return false }
            return rooms[group.mainRoom]?.breakoutGroups[group.group] != nil
        }
        return Array(classes.union(groups).sorted().prefix(limit))
    }

    /// Whether the room was removed after closing: nothing about it is taken or answered.
    public func isTombstoned(_ room: String) -> Bool {
        tombstones.covers(room)
    }

    /// Drops a closed room and keeps its tombstone and its sequence floor (numbering
    /// continues above it if the id is ever opened again); returns the floor to store and
    /// the tombstones that went to keep the bound, or nil when the room is not held.
    public mutating func bury(room roomID: String, nowMillis: UInt64) -> (floor: SequenceFloor, dropped: [String])? {
        guard let floor = handOff(room: roomID) else { return nil }
        leases[roomID] = nil
        return (floor, tombstones.bury(roomID, atMillis: nowMillis))
    }

    /// Tombstones from the store at a restart.
    public mutating func restore(tombstones stored: [String: UInt64]) {
        for (room, at) in stored.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }) { tombstones.bury(room, atMillis: at) }
    }
}
