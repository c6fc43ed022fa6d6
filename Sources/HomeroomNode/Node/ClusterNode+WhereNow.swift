import HomeroomCore
import HomeroomEngine
import HomeroomSupport
import HomeroomWire
import Synchronization

/// Where-now across the cluster (docs/PROTOCOL.md, "Where now"): the node asked answers
/// from the rooms it owns and asks every live peer the same, sealed; a peer answers from
/// its own rooms alone. Peers silent for `whereNowWaitMillis`, and suspect ones, are
/// counted as unanswered; down ones are not asked (their rooms have other owners).
extension ClusterNode {
    /// How long the asked node waits for its peers' answers.
    static let whereNowWaitMillis: UInt64 = 1_000

    /// A client's question (its token checked by the caller), or a peer's (`fromNode`).
    func whereNow(user: UserID, fromNode: Bool) -> WireMessage.WhereNowReply {
        let own = ownRooms(of: user)
        if fromNode { return WireMessage.WhereNowReply(rooms: own.rooms, truncated: own.truncated) }
        // Alive peers are asked; suspect ones are counted as unanswered without waiting
        // for them (a silent peer would hold this request worker for the whole wait).
        let (addresses, suspect) = state.withLock { state -> ([String], Int) in
            guard !state.faults.isolated else { return ([], 0) }
            let peers = state.peers.entries.values.filter { !$0.address.isEmpty && !state.faults.cuts($0.node) }
            let alive = Set(peers.filter { $0.liveness.health == .alive }.map(\.address))
            let suspect = Set(peers.filter { $0.liveness.health == .suspect }.map(\.address)).subtracting(alive)
            return (alive.sorted(), suspect.count)
        }
        final class Answers: Sendable {
            let value = Mutex<(rooms: [[String]], truncated: Bool, done: Int)>(([], false, 0))
        }
        let answers = Answers()
        let request = framing.seal(WireCodec.encode(envelope(room: "", .whereNowRequest(user: user))))
        let timeout = Duration.milliseconds(Int64(Self.whereNowWaitMillis))
        var asked = 0
        for address in addresses {
            guard let requester = link(address) else { continue }
            asked += 1
            requester.send(request, timeout: timeout) { [weak self] result in
                let reply: WireMessage.WhereNowReply? = {
                    guard let self, case let .success(bytes) = result, let body = self.openReply(bytes),
                          let decoded = try? WireCodec.decode(Array(body), limits: self.config.limits),
                          case let .whereNowReply(reply) = decoded.message else { return nil }
                    return reply
                }()
                answers.value.withLock { value in
                    value.done += 1
                    if let reply {
                        value.rooms.append(reply.rooms)
                        value.truncated = value.truncated || reply.truncated
                    }
                }
            }
        }
        let deadline = WallClock.monotonicMillis() + Self.whereNowWaitMillis + 200
        while answers.value.withLock({ $0.done }) < asked, WallClock.monotonicMillis() < deadline { NNGSleep.milliseconds(2) }
        let (peerRooms, peerTruncated) = answers.value.withLock { ($0.rooms, $0.truncated) }
        let merged = WhereNow.merge(peerRooms + [own.rooms], truncatedBefore: own.truncated || peerTruncated)
        metrics.add("where_now_total")
        return WireMessage.WhereNowReply(rooms: merged.rooms, truncated: merged.truncated, unanswered: UInt32(asked - peerRooms.count + suspect))
    }

    /// The rooms this node owns in which `user` has a live session (a copy kept for a
    /// handoff is another node's to tell).
    private func ownRooms(of user: UserID) -> (rooms: [String], truncated: Bool) {
        let rooms = state.withLock { state in
            state.rooms.values.filter { $0.users[user] != nil && state.owns($0.roomID, ownName: name) }
        }
        let found = WhereNow.rooms(of: user, in: rooms)
        return (Array(found.prefix(WhereNow.maxRooms)), found.count > WhereNow.maxRooms)
    }
}
