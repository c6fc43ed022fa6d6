import Dispatch
import HomeroomCore
import HomeroomEngine
import HomeroomSupport
import HomeroomWire
import Synchronization

/// Where a request handler leaves how to send a reply it gives later; the worker that
/// ran the handler then goes back to other requests (`SPReply.later`).
final class ReplyDeferral {
    var start: (@Sendable (_ send: @escaping @Sendable ([UInt8]) -> Void) -> Void)?
}

/// Where-now across the cluster (docs/PROTOCOL.md, "Where now"): the node asked answers
/// from the rooms it owns and asks every live peer the same, sealed; a peer answers from
/// its own rooms alone. Peers silent for `whereNowWaitMillis`, and suspect ones, are
/// counted as unanswered; down ones are not asked (their rooms have other owners).
extension ClusterNode {
    /// How long the asked node waits for its peers' answers.
    static let whereNowWaitMillis: UInt64 = 1_000
    /// Clients' questions gathered at once; more are refused `rate-limited`. They hold no
    /// worker while the peers answer, but each asks every live peer.
    static let maxWhereNowInFlight = 4

    /// A peer's question: the rooms this node owns in which `user` has a live session.
    func ownWhereNow(of user: UserID) -> WireMessage.WhereNowReply {
        let own = ownRooms(of: user)
        return WireMessage.WhereNowReply(rooms: own.rooms, truncated: own.truncated)
    }

    /// A client's question (its token checked by the caller), answered before returning.
    func whereNow(user: UserID) -> WireMessage.WhereNowReply {
        final class Box: Sendable { let reply = Mutex<WireMessage.WhereNowReply?>(nil) }
        let box = Box(), done = DispatchSemaphore(value: 0)
        gatherWhereNow(user: user) { reply in
            box.reply.withLock { $0 = reply }
            done.signal()
        }
        done.wait()
        return box.reply.withLock { $0 } ?? WireMessage.WhereNowReply(rooms: [], truncated: false)
    }

    /// Asks every live peer and calls `completion` once, with this node's rooms and every
    /// answer that came: when the last peer answered or failed, or after the wait at most.
    func gatherWhereNow(user: UserID, completion: @escaping @Sendable (WireMessage.WhereNowReply) -> Void) {
        let own = ownRooms(of: user)
        // Alive peers are asked; suspect ones are counted as unanswered without waiting
        // for them (a silent peer would hold the question for the whole wait).
        let (addresses, suspect) = state.withLock { state -> ([String], Int) in
            guard !state.faults.isolated else { return ([], 0) }
            let peers = state.peers.entries.values.filter { !$0.address.isEmpty && !state.faults.cuts($0.node) }
            let alive = Set(peers.filter { $0.liveness.health == .alive }.map(\.address))
            let suspect = Set(peers.filter { $0.liveness.health == .suspect }.map(\.address)).subtracting(alive)
            return (alive.sorted(), suspect.count)
        }
        let requesters = addresses.compactMap { link($0) }
        let gathering = WhereNowGathering(asked: requesters.count, own: own, suspect: suspect, metrics: metrics, completion: completion)
        let request = framing.seal(WireCodec.encode(envelope(room: "", .whereNowRequest(user: user))))
        let timeout = Duration.milliseconds(Int64(Self.whereNowWaitMillis))
        for requester in requesters {
            requester.send(request, timeout: timeout) { [weak self] result in
                guard let self, case let .success(bytes) = result, let body = self.openReply(bytes),
                      let decoded = try? WireCodec.decode(Array(body), limits: self.config.limits),
                      case let .whereNowReply(reply) = decoded.message else {
                    gathering.answered(nil)
                    return
                }
                gathering.answered(reply)
            }
        }
        gathering.answered(nil, counts: false)
        // A requester's own timeout answers each ask; this is the backstop.
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(Self.whereNowWaitMillis) + 200)) { gathering.finish() }
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

/// One client's where-now while the peers answer: completes once, with what came.
private final class WhereNowGathering: Sendable {
    private struct Progress {
        var rooms: [[String]] = []
        var truncated = false
        var done = 0
        var finished = false
    }
    private let progress = Mutex(Progress())
    private let asked: Int
    private let own: (rooms: [String], truncated: Bool)
    private let suspect: Int
    private let metrics: NodeMetrics
    private let completion: @Sendable (WireMessage.WhereNowReply) -> Void

    init(asked: Int, own: (rooms: [String], truncated: Bool), suspect: Int, metrics: NodeMetrics,
         completion: @escaping @Sendable (WireMessage.WhereNowReply) -> Void) {
        self.asked = asked
        self.own = own
        self.suspect = suspect
        self.metrics = metrics
        self.completion = completion
    }

    /// A peer's answer (nil: it failed or said nothing useful); `counts: false` only
    /// checks whether every peer is in (none asked).
    func answered(_ reply: WireMessage.WhereNowReply?, counts: Bool = true) {
        let complete = progress.withLock { p -> Bool in
            if counts { p.done += 1 }
            if let reply {
                p.rooms.append(reply.rooms)
                p.truncated = p.truncated || reply.truncated
            }
            return p.done >= asked
        }
        if complete { finish() }
    }

    /// Completes with what came so far, once.
    func finish() {
        let taken = progress.withLock { p -> (rooms: [[String]], truncated: Bool)? in
            guard !p.finished else { return nil }
            p.finished = true
            return (p.rooms, p.truncated)
        }
        guard let (peerRooms, peerTruncated) = taken else { return }
        let merged = WhereNow.merge(peerRooms + [own.rooms], truncatedBefore: own.truncated || peerTruncated)
        metrics.add("where_now_total")
        completion(WireMessage.WhereNowReply(rooms: merged.rooms, truncated: merged.truncated,
                                             unanswered: UInt32(max(0, asked - peerRooms.count) + suspect)))
    }
}
