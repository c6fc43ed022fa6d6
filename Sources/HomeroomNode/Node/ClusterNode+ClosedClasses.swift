import HomeroomCore
import HomeroomEngine
import HomeroomSupport

/// Closed classes (the policy is the engine's, `NodeEngine+ClosedRooms`): once a class
/// is `after` and its close delay has passed, this node ends the sessions it hosts there
/// and refuses the room's clients `room-closed`; `--closed-room-retention` after closing
/// it removes the room (memory and store rows) and keeps a tombstone, so the id is never
/// opened again. Called every second from the tick.
extension ClusterNode {
    func endClosedClasses() {
        let now = wallMillis()
        let ending = state.withLock { $0.engine.sessionsToEndInClosedRooms(nowMillis: now) }
        for session in ending where endSessionAsNode(room: session.room, user: session.user, session: session.session) {
            metrics.add("sessions_ended_closed_total")
            logger.info("session ended: its class closed", ["room": session.room, "user": session.user, "session": session.session])
        }
        forgetOldTombstones(nowMillis: now)
        removeClosedRooms(nowMillis: now)
    }

    /// The refusal a request for `room` gets because its class closed, or nil. Clients are
    /// refused from the moment the room closes; nodes only once it is removed here (until
    /// then their anti-entropy carries the sessions' ends).
    func closedRoomRefusal(room: String, asNode: Bool) -> String? {
        let now = wallMillis()
        return state.withLock { state -> String? in
            if state.engine.isTombstoned(room) {
                return "room \(room)'s class closed and the room was removed: it cannot be joined or opened again"
            }
            guard !asNode else { return nil }
            let closed = state.rooms[room]?.isClosed(nowMillis: now) == true
                || Breakout.parse(roomID: room).flatMap { state.rooms[$0.mainRoom] }?.isClosed(nowMillis: now) == true
            return closed ? WriteError.roomClosed.description : nil
        }
    }

    private func forgetOldTombstones(nowMillis now: UInt64) {
        let (expired, store) = state.withLock { ($0.engine.tombstones.expire(nowMillis: now), $0.store) }
        guard !expired.isEmpty else { return }
        do throws(StoreError) {
            try store?.forgetTombstones(expired)
        } catch {
            logger.warning("old tombstones of closed rooms could not be forgotten in the store", ["error": "\(error)"])
        }
    }

    private func removeClosedRooms(nowMillis now: UInt64) {
        let retentionMillis = config.closedRoomRetentionSeconds * 1_000
        let due = state.withLock { $0.engine.closedRoomsToRemove(nowMillis: now, retentionMillis: retentionMillis) }
        for room in due {
            // As a handoff's removal: under the compaction lock and the room's gate, so no
            // append or snapshot of the room runs meanwhile.
            let outcome = removeRoom(room, dropping: { state in state.engine.bury(room: room, nowMillis: now) },
                                     storing: { store, burial throws(StoreError) in
                                         try store.bury(room: room, floor: burial.floor, removedAtMillis: now, dropped: burial.dropped)
                                     })
            switch outcome {
            case .success:
                metrics.add("closed_rooms_removed_total")
                logger.info("room removed: its class closed and the closed-room retention passed",
                            ["room": room, "retention-s": "\(config.closedRoomRetentionSeconds)"])
            case let .failure(error):
                // Gone from memory (and refused); the rows come back at a restart and go again then.
                logger.warning("a closed room's rows could not be removed", ["room": room, "error": "\(error)"])
            case nil:
                break
            }
        }
    }
}
