import HomeroomCore
import HomeroomEngine

/// Rooms nobody is in and nothing was written to for `--room-retention` go, with their
/// store rows (`NodeEngine+IdleRooms` decides which). Every 10 s the node looks at the
/// next slice of its rooms, so a removal comes at most a scan round after it is due.
extension ClusterNode {
    func removeIdleRooms() {
        let retentionMillis = config.roomRetentionSeconds * 1_000
        guard retentionMillis > 0 else { return }
        let now = wallMillis()
        let due = state.withLock { state -> [String] in
            let (slice, next) = state.engine.idleScanSlice(after: state.idleScanCursor)
            state.idleScanCursor = next
            return state.engine.idleRooms(among: slice, nowMillis: now, retentionMillis: retentionMillis)
        }
        for room in due {
            // Checked again under the locks: a join may have come since.
            let outcome = removeCopy(of: room) { state in
                !state.handingOff.contains(room) && !state.arriving.contains(room)
                    && state.engine.idleRooms(among: [room], nowMillis: wallMillis(), retentionMillis: retentionMillis) == [room]
            }
            switch outcome {
            case .success:
                metrics.add("rooms_removed_idle_total")
                logger.info("room removed: empty and idle for the room retention", ["room": room, "retention-s": "\(config.roomRetentionSeconds)"])
            case let .failure(error):
                logger.warning("an idle room's rows could not be removed", ["room": room, "error": "\(error)"])
            case nil:
                break
            }
        }
    }
}
