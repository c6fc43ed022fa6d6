import HomeroomCore
import HomeroomWire

/// What a node needs to fold rewards exactly (docs/ARCHITECTURE.md, "Lifetime"): for
/// each peer and room, a heartbeat the peer sent at a known time (its clock) and the
/// peer's own sequence in the room then. Once this node has seen the peer's writes up
/// to that sequence, it holds every reward the peer admitted before that time, and so
/// every copy the peer will ever make of a reward issued a reward window earlier.
struct RewardCheckpoint: Equatable {
    struct Mark: Equatable {
        var sentAtMillis: UInt64
        var sequence: UInt64
    }
    /// The newest heartbeat whose writes this node has all seen.
    var confirmed: Mark?
    /// A later heartbeat, waiting for its writes to arrive.
    var pending: Mark?

    /// Notes a heartbeat; the first one since the last confirmation waits for its writes.
    mutating func heard(_ mark: Mark) {
        if pending == nil { pending = mark }
    }

    /// Confirms the pending heartbeat once this node has the peer's writes up to it.
    mutating func confirm(seen: UInt64) {
        guard let waiting = pending, seen >= waiting.sequence else { return }
        confirmed = waiting
        pending = nil
    }
}

extension PeerTable.Entry {
    mutating func noteCheckpoints(_ heartbeat: WireMessage.Heartbeat) {
        guard heartbeat.sentAtMillis != 0 else { return }
        for room in heartbeat.rooms {
            let mark = RewardCheckpoint.Mark(sentAtMillis: heartbeat.sentAtMillis, sequence: room.seen.contiguous(heartbeat.node))
            rewardCheckpoints[room.roomID, default: RewardCheckpoint()].heard(mark)
        }
    }
}
