import HomeroomCore
import HomeroomEngine
import HomeroomWire
import HomeroomSupport

/// Lifetime (docs/ARCHITECTURE.md, "Lifetime"): the node folds away the sessions it
/// started once enough of them are over, so a user who joins thousands of times in a
/// semester keeps a handful of session records, on every replica.
extension ClusterNode {
    /// Writes a `foldSessions` for each user whose sessions changed and who has at
    /// least `RoomState.sessionFoldThreshold` sessions started here that are over.
    /// Called from the presence loop; the decision is Core's, pure.
    func foldEndedSessions(recheckLater: Bool) {
        let now = wallMillis()
        let folds = state.withLock { state -> [NodeEngine.Fold] in
            guard !state.stopping else { return [] }
            return state.engine.dueSessionFolds(nowMillis: now, recheckLater: recheckLater)
        }
        for fold in folds {
            let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: fold.operation)
            if sequenceSystemWrite(room: fold.room, write) { metrics.add("session_folds_total") }
        }
    }

    /// Writes a `foldRewards` for each user whose rewards this node sequenced and can
    /// now fold exactly: every copy of them is here and no node will make another
    /// (`PeerTable.rewardsCompleteBefore`, `RoomState.rewardFoldPlan`). The decision is
    /// the engine's, pure; this only gathers what the peers confirmed.
    func foldCompleteRewards() {
        let now = wallMillis()
        let window = config.rewardWindowMillis
        let folds = state.withLock { state -> [NodeEngine.Fold] in
            guard !state.stopping else { return [] }
            var completeBefore: [String: UInt64] = [:]
            let folding = state.engine.roomsWithRewardsToFold
            // A writer of these rooms this node has not heard of (a room fetched from a peer
            // names it) is waited for too, until heard or forgotten.
            state.peers.expect(state.engine.writersToHearFrom(in: folding.map(\.0)), nowMillis: WallClock.monotonicMillis())
            for (room, seen) in folding {
                completeBefore[room] = state.peers.rewardsCompleteBefore(room: room, seen: seen, nowMillis: now, windowMillis: window,
                                                                    driftMillis: config.maxClockDriftMillis)
            }
            return state.engine.dueRewardFolds(nowMillis: now, completeBefore: completeBefore)
        }
        for fold in folds {
            let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: fold.operation)
            if sequenceSystemWrite(room: fold.room, write) { metrics.add("reward_folds_total") }
        }
    }

    /// Retires the older replica ids of this node's name (stores it had before this one)
    /// in every room that holds something of them, once every known node holds all their
    /// writes (`RoomState.retirementPlan`; the decision is Core's, pure). Not while one of
    /// them is alive: an old store running at the same time is a misconfiguration, and
    /// its writes must not be dropped.
    func retirePredecessors() {
        let writes = retirementPlans().compactMap { room, plan -> (room: String, operation: HomeroomCore.Operation)? in
            if case let .due(operation) = plan { return (room, operation) }
            return nil
        }
        for write in writes {
            let system = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: write.operation)
            if sequenceSystemWrite(room: write.room, system) {
                metrics.add("replica_retirements_total")
                if case let .retirePredecessors(generation, floors) = write.operation {
                    logger.info("older stores of this node retired", ["room": write.room, "up_to_generation": "\(generation)",
                                                                       "reward_floors": "\(floors.count)"])
                }
            }
        }
    }

    /// Drops the version-vector entries of retired ids once nothing in a room carries
    /// their stamp any more (`RoomState.dropRetiredEntries`); every 30 s by default.
    func dropRetiredEntries() {
        state.withLock { state in
            for roomID in Array(state.rooms.keys) where !state.rooms[roomID]!.retiredGenerations.isEmpty {
                _ = state.rooms[roomID]!.dropRetiredEntries()
            }
        }
    }

    /// What the retirement of older stores of this node's name waits for, per room that
    /// holds something of them (for `retirePredecessors`, logs and tests).
    func retirementPlans() -> [String: RoomState.RetirementPlan] {
        let now = wallMillis()
        let window = config.rewardWindowMillis
        let own = replica
        return state.withLock { state -> [String: RoomState.RetirementPlan] in
            guard !state.stopping, state.superseded == nil else { return [:] }
            var plans: [String: RoomState.RetirementPlan] = [:]
            let aliveOlder = state.peers.entries.values.first { $0.status == .alive && PeerTable.supersedes(own, name, $0.node, $0.name) }
            let colliding = state.peers.nameCollision(own: own, name: name)?.name ?? state.collidingNames.sorted().first
            state.refreshRetirementRooms(own: own)
            for roomID in state.retirementRooms.sorted() {
                guard let room = state.rooms[roomID], !room.predecessors(of: own).isEmpty else { continue }
                if let colliding {
                    plans[roomID] = .waiting("node \(colliding) shares this node's replica-id name hash: rename one of them")
                    continue
                }
                if let aliveOlder {
                    plans[roomID] = .waiting("an older store of this node's name is alive (\(aliveOlder.node) at \(aliveOlder.address))")
                    continue
                }
                // A writer of the room not heard of yet (a room fetched from a peer names it) is waited for too.
                state.peers.expect(state.engine.writersToHearFrom(in: [roomID]), nowMillis: WallClock.monotonicMillis())
                let peers = state.peers.entries.values.filter { !PeerTable.supersedes(own, name, $0.node, $0.name) }.map { $0.rooms[roomID] ?? VersionVector() }
                let before = state.peers.rewardsCompleteBefore(room: roomID, seen: room.seen, nowMillis: now, windowMillis: window,
                                                                  driftMillis: config.maxClockDriftMillis)
                plans[roomID] = room.retirementPlan(successor: own, peers: peers, completeBeforeMillis: before)
            }
            return plans
        }
    }

    /// Steps aside for good once a room shows this node's own replica id retired: a
    /// newer store of its name runs elsewhere, and every replica drops this one's writes.
    func stepAsideIfRetired() {
        let own = replica
        guard let room = state.withLock({ state -> String? in
            state.refreshRetirementRooms(own: own)
            return state.retirementRooms.sorted().first { state.rooms[$0]?.isRetired(own) == true }
        }) else { return }
        stepAside(superseded: "a newer store of node \(name) retired this one's replica id \(own) (seen in room \(room))")
    }

    /// Steps aside for good: this is an old store of the node's name started again, and
    /// a newer one is (or was) the name. What this store acknowledged after that is
    /// dropped everywhere, so it acknowledges nothing more.
    func stepAside(superseded reason: String) {
        let why = reason + ": this is an old store started again; stop this node and start it on a new data directory"
        let first = state.withLock { state -> Bool in
            guard state.superseded == nil else { return false }
            state.superseded = why
            state.wedged = why
            return true
        }
        if first {
            metrics.add("wedged_total")
            logger.error("node superseded: stepping aside for good (no heartbeats, requests refused unavailable, /healthz 503)", ["why": why])
        }
    }

    /// While a node restarted on its store has heard no peer yet (`NodeState.peersAwaitedUntil`):
    /// what to tell a client whose write or join waits; nil once writes are taken.
    func awaitingPeers() -> String? {
        let now = WallClock.monotonicMillis()
        let waiting = state.withLock { state -> Bool in
            guard let until = state.peersAwaitedUntil else { return false }
            if now >= until { state.peersAwaitedUntil = nil; return false }
            return true
        }
        guard waiting else { return nil }
        metrics.add("writes_awaiting_peers_total")
        return "node \(name) restarted on its store and takes writes once it hears a peer (at most \(config.downMillis) ms): "
            + "retry in a moment or use another node"
    }

    /// A newer store of this node's own name, in a heartbeat's sender or its peer list
    /// (names must match: a name-hash collision is not a newer store).
    func newerStoreOfThisName(in heartbeat: WireMessage.Heartbeat) -> ReplicaID? {
        if heartbeat.nodeName == name, heartbeat.node.supersedes(replica) { return heartbeat.node }
        return heartbeat.peers.first { $0.nodeName == name && $0.node.supersedes(replica) }?.node
    }

    /// Two node names with one replica-id name hash: reported once per name; while the
    /// other is known, this node retires nothing (`retirementPlans`).
    func noteNameCollision(_ heartbeat: WireMessage.Heartbeat) {
        guard replica.isStructured else { return }
        let names = ([heartbeat.nodeName] + heartbeat.peers.map(\.nodeName)).filter {
            !$0.isEmpty && $0 != name && ReplicaID.nameHash(of: $0) == replica.nameHash
        }
        for other in Set(names) where state.withLock({ $0.collidingNames.insert(other).inserted }) {
            metrics.add("replica_name_collisions_total")
            logger.error("node names collide: their replica ids share one name hash, so neither node retires older stores; rename one of them",
                         ["name": name, "other": other, "hash": String(replica.nameHash, radix: 16)])
        }
    }

    /// Every user of every room is a candidate once, at start: a store written before
    /// folds existed (or while this node was down) is folded too.
    func noteEveryUserForFolding() {
        state.withLock { $0.engine.noteEveryUserForFolding() }
    }
}
