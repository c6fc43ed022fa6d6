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
    public func sessionsToEndInClosedRooms(nowMillis: UInt64) -> [(room: String, user: UserID, session: SessionID)] {
        var due: [(room: String, user: UserID, session: SessionID)] = []
        for (roomID, room) in rooms where room.isClosed(nowMillis: nowMillis) && room.hasLiveSession {
            for (user, record) in room.users {
                for session in record.sessions where session.host == replica && record.isLive(session, deadIncarnations: room.deadIncarnations) {
                    due.append((roomID, user, session.id))
                }
            }
        }
        return due.sorted { ($0.room, $0.user, $0.session) < ($1.room, $1.user, $1.session) }
    }

    /// Rooms closed for at least `retentionMillis` at `nowMillis`: to remove, tombstone
    /// kept. A class whose breakout groups' rooms are still held here goes with them (a
    /// group's room is gated by its main room, which is closed too).
    public func closedRoomsToRemove(nowMillis: UInt64, retentionMillis: UInt64) -> [String] {
        let closed = Set(rooms.filter { $0.value.isRemovableAfterClosing(nowMillis: nowMillis, retentionMillis: retentionMillis) }.map(\.key))
        let groups = rooms.keys.filter { id in Breakout.parse(roomID: id).map { closed.contains($0.mainRoom) } == true }
        return closed.union(groups).sorted()
    }

    /// Whether the room was removed after closing: nothing about it is taken or answered.
    public func isTombstoned(_ room: String) -> Bool {
        tombstones.covers(room)
    }

    /// Drops a closed room and keeps its tombstone; returns the tombstones that went to
    /// keep the bound (the shell deletes their rows too), or nil when the room is not held.
    public mutating func bury(room roomID: String, nowMillis: UInt64) -> [String]? {
        guard handOff(room: roomID) != nil else { return nil }
        leases[roomID] = nil
        roomSequences[roomID] = nil
        privateSequences[roomID] = nil
        return tombstones.bury(roomID, atMillis: nowMillis)
    }

    /// Tombstones from the store at a restart.
    public mutating func restore(tombstones stored: [String: UInt64]) {
        for (room, at) in stored.sorted(by: { ($0.value, $0.key) < ($1.value, $1.key) }) { tombstones.bury(room, atMillis: at) }
    }
}
