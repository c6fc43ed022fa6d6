import HomeroomCore

/// How a node sees a peer: heard lately, silent past the suspect period, or declared down.
public enum PeerHealth: Sendable {
    case alive
    case suspect
    case dead
}

/// A peer's liveness as one node sees it, from the heartbeats it hears (failure detection).
/// Pure: the shell (`PeerTable`) and the simulation feed it the same events with their
/// clocks, and carry out what it decides (a peer newly dead: write `replica_down` for
/// the incarnation it had, so its sessions end on every replica).
public struct PeerLiveness: Equatable, Sendable {
    /// The highest incarnation heard of it.
    public private(set) var incarnation: UInt64
    /// When it was last heard from, or learned of (this node's clock).
    public private(set) var lastHeardMillis: UInt64
    public private(set) var health: PeerHealth
    /// Whether it was heard from directly (not only named in another node's list).
    public private(set) var heardDirectly: Bool
    /// When a probe last found it alive (`IndirectProber`): it answered this node's own
    /// probe, or another node vouched that it hears it. It keeps the peer from being
    /// declared down, not suspect: its heartbeats (the gossip) still do not arrive here.
    public private(set) var lastVouchedMillis: UInt64 = 0

    /// The last sign of life this node has of it: heard, or vouched for by a probe.
    public var lastEvidenceMillis: UInt64 { max(lastHeardMillis, lastVouchedMillis) }

    /// A peer heard from directly now.
    public static func heard(incarnation: UInt64, nowMillis: UInt64) -> PeerLiveness {
        PeerLiveness(incarnation: incarnation, lastHeardMillis: nowMillis, health: .alive, heardDirectly: true)
    }

    /// A peer only learned of (from another node's peer list): suspect until it is heard,
    /// so a stale list never keeps a node alive.
    public static func learned(incarnation: UInt64, nowMillis: UInt64) -> PeerLiveness {
        PeerLiveness(incarnation: incarnation, lastHeardMillis: nowMillis, health: .suspect, heardDirectly: false)
    }

    /// A node this node's rooms name as a writer but that it has not heard from since it
    /// started (`NodeEngine.writersToHearFrom`): known to exist, not to run. Reward folds
    /// wait for it like for any peer (a copy of a reward may be there and nowhere else)
    /// until it is heard, or forgotten after the permanent-down period. With no
    /// incarnation known, its silence declares nothing down.
    public static func expected(nowMillis: UInt64) -> PeerLiveness {
        PeerLiveness(incarnation: 0, lastHeardMillis: nowMillis, health: .suspect, heardDirectly: false)
    }

    /// Only expected: neither heard nor named with an incarnation by another node.
    public var isExpectedOnly: Bool { incarnation == 0 && !heardDirectly }

    /// A heartbeat (or hello) from it; returns true when it was down (it came back).
    @discardableResult
    public mutating func heard(incarnation heardIncarnation: UInt64, nowMillis: UInt64) -> Bool {
        let cameBack = health == .dead
        incarnation = max(incarnation, heardIncarnation)
        lastHeardMillis = nowMillis
        heardDirectly = true
        health = .alive
        return cameBack
    }

    /// A probe found it alive now, at `incarnation` (its own answer, or a node that hears
    /// it): it is not declared down for `downMillis` from now. Only for the incarnation
    /// known: an older one proves nothing, and a newer one means the known one is over
    /// (its sessions must end, so its down must come). Not for a dead peer either (it
    /// comes back when heard, or refutes).
    /// `unheardLimitMillis`: past this long without its heartbeats, probes keep it no
    /// longer (nil: no limit): it goes down, and is forgotten after the permanent-down
    /// period, so reward folds and retirement stop waiting for it.
    public mutating func vouched(incarnation vouchedIncarnation: UInt64, nowMillis: UInt64, unheardLimitMillis: UInt64? = nil) {
        guard health != .dead, !isExpectedOnly, vouchedIncarnation == incarnation else { return }
        if let limit = unheardLimitMillis, Self.elapsed(since: lastHeardMillis, now: nowMillis) >= limit { return }
        lastVouchedMillis = max(lastVouchedMillis, nowMillis)
    }

    /// Not heard for `suspectMillis`: suspect; without any sign of life (heard, or vouched
    /// for by a probe) for `downMillis`: dead. Returns true when it is declared dead now
    /// (the caller ends the sessions of the incarnation it had); an expected node goes
    /// dead silently (it has no incarnation to end).
    public mutating func sweep(nowMillis: UInt64, suspectMillis: UInt64, downMillis: UInt64) -> Bool {
        guard health != .dead else { return false }
        if Self.elapsed(since: lastEvidenceMillis, now: nowMillis) >= downMillis {
            health = .dead
            return !isExpectedOnly
        }
        if Self.elapsed(since: lastHeardMillis, now: nowMillis) >= suspectMillis { health = .suspect }
        return false
    }

    /// How long since `then`, 0 when `then` is later: a sign of life noted by another
    /// thread between this caller's clock read and its lock is not a wrap to "silent for ever".
    public static func elapsed(since then: UInt64, now: UInt64) -> UInt64 { now > then ? now - then : 0 }

    /// An expected node named by another node with an incarnation: from now on as a node
    /// learned of (suspect, its silence counted from now).
    public mutating func learned(incarnation learnedIncarnation: UInt64, nowMillis: UInt64) {
        incarnation = max(incarnation, learnedIncarnation)
        lastHeardMillis = nowMillis
        health = .suspect
    }

    /// It said goodbye: dead at once. Returns true when it was not dead already.
    public mutating func markDead() -> Bool {
        guard health != .dead, !isExpectedOnly else { return false }
        health = .dead
        return true
    }
}

extension RewardCheckpoint {
    /// The time before which this node holds every copy of every reward of a room that
    /// will ever exist, or nil while a peer in `peers` has not confirmed a heartbeat for it
    /// (see `RoomState.rewardFoldPlan`): each peer's confirmed heartbeat less the window,
    /// and its own clock less the window and `driftMillis`. Every peer the caller passes
    /// counts, down ones included (they may come back with writes). `seen` is this node's
    /// vector of the room.
    ///
    /// The own clock stands in for nodes this one has not heard of (after a restart it
    /// knows none): their clocks may lag its own by up to the drift limit, and each admits
    /// a copy of a reward while its own clock is within the window. Without that margin a
    /// node that had just restarted (knowing no peer, its clock 0.7 s ahead) folded a
    /// reward that another node, not knowing it, then took again: counted twice (found by
    /// the simulation, one schedule in 10,000).
    public static func completeBefore(peers: inout [ReplicaID: RewardCheckpoint], seen: VersionVector,
                                      nowMillis: UInt64, windowMillis: UInt64, driftMillis: UInt64) -> UInt64? {
        let margin = windowMillis &+ driftMillis
        var before = nowMillis > margin ? nowMillis - margin : 0
        for node in peers.keys.sorted() {
            guard let complete = peers[node]!.completeBefore(seen: seen.contiguous(node), windowMillis: windowMillis) else { return nil }
            before = min(before, complete)
        }
        return before
    }
}

extension NodeEngine {
    /// The origins this node's rooms name as writers, besides its own (and their private
    /// forms), its older stores and retired ids: after a start, reward folds wait for each
    /// of them to be heard (or forgotten) as for any peer (`PeerLiveness.expected`). An
    /// origin may be another node's private-topic origin: which one cannot be told from
    /// the id alone (ids from before structured ids have any bits), so the caller drops
    /// an expected origin once the node it is the private form of is known. Without this, a node that
    /// restarts cut off from the others knows no peer, takes its rewards as complete, and
    /// folds one whose earlier copy, retried through a node it has not heard from, that
    /// node counts too (found by the simulation: one schedule in about 3,000).
    public func writersToHearFrom(in roomIDs: [String]? = nil) -> Set<ReplicaID> {
        let own = replica
        var writers = Set<ReplicaID>()
        for room in (roomIDs ?? Array(rooms.keys)).compactMap({ rooms[$0] }) {
            for origin in room.seen.origins.keys {
                guard origin != own, origin != own.privateForm, !own.supersedes(origin),
                      !room.isRetired(origin), !room.isRetired(origin.privateForm) else { continue }
                writers.insert(origin)
            }
        }
        return writers
    }
}
