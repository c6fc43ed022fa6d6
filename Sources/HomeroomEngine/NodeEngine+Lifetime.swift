import HomeroomCore

/// Lifetime (docs/ARCHITECTURE.md, "Lifetime"): the node folds away the sessions it
/// started once enough of them are over, and the rewards it sequenced once every copy
/// of them is known, so a user who joins and is rewarded thousands of times in a
/// semester keeps a handful of records on every replica. The decisions are Core's; the
/// engine keeps the candidates (users whose sessions or rewards changed) and asks.
extension NodeEngine {
    /// A fold the node should write now (as system, through the write pipeline).
    public struct Fold: Sendable, Equatable {
        public var room: String
        public var operation: Operation
    }

    /// Notes the users whose sessions or rewards these deltas touched.
    /// `state` is the room as it is now (callers hold it out of `rooms` while it changes).
    mutating func noteFoldCandidates(room: String, _ deltas: [Delta], in state: RoomState) {
        for delta in deltas {
            switch delta.operation {
            case let .joinSession(user, _, _, _, _, _), let .leaveSession(user, _, _), let .kick(user), let .ban(user):
                foldCandidates[room, default: []].insert(user)
            case let .reward(target, _, _) where delta.origin == replica:
                rewardFoldCandidates[room, default: []].insert(target)
            case let .replicaDown(down, _) where down == replica:
                // An earlier incarnation of this node is dead: its sessions can be folded.
                noteUsersWithSessionsHostedHere(room: room, in: state)
            default:
                break
            }
        }
    }

    /// Notes the users of a merged patch that carry sessions this node started (only those,
    /// or kicked and banned ones, can need a fold by this node; a 100,000-user snapshot of
    /// others' sessions notes none).
    mutating func noteFoldCandidates(room: String, patch: RoomState, in state: RoomState) {
        let own = replica
        for (user, record) in patch.users
        where record.sessions.contains(where: { $0.started.clock.replica == own }) || record.kicked != .origin || record.isBanned {
            foldCandidates[room, default: []].insert(user)
        }
        if patch.deadIncarnations[own] != nil { noteUsersWithSessionsHostedHere(room: room, in: state) }
    }

    mutating func noteUsersWithSessionsHostedHere(room roomID: String, in room: RoomState) {
        let own = replica
        for (user, record) in room.users where record.sessions.contains(where: { $0.host == own }) {
            foldCandidates[roomID, default: []].insert(user)
        }
    }

    /// Every user of every room, once (at start): a store written before folds existed,
    /// or while this node was down, is folded too.
    public mutating func noteEveryUserForFolding() {
        let own = replica
        for (roomID, room) in rooms where !room.users.isEmpty {
            foldCandidates[roomID, default: []].formUnion(room.users.keys)
            for (user, record) in room.users where record.rewards.values.contains(where: { $0.stamp.clock.replica == own }) {
                rewardFoldCandidates[roomID, default: []].insert(user)
            }
        }
    }

    /// The session folds due now for the users noted since the last call; those whose fold
    /// is not due yet are looked at again when `recheckLater` (every few rounds).
    public mutating func dueSessionFolds(nowMillis now: UInt64, recheckLater: Bool) -> [Fold] {
        if recheckLater {
            for (roomID, users) in foldLater { foldCandidates[roomID, default: []].formUnion(users) }
            foldLater.removeAll()
        }
        guard !foldCandidates.isEmpty else { return [] }
        let candidates = foldCandidates
        foldCandidates.removeAll()
        var folds: [Fold] = []
        // Sessions of earlier incarnations, once their clients had time to reclaim them.
        let graceOver = now >= incarnationSinceMillis &+ policy.reclaimGraceMillis
        for (roomID, users) in candidates.sorted(by: { $0.key < $1.key }) {
            guard let room = rooms[roomID] else { continue }
            for user in users.sorted() {
                switch room.sessionFoldPlan(for: user, origin: replica, nowMillis: now,
                                            threshold: policy.sessionFoldThreshold, quietMillis: policy.sessionFoldQuietMillis,
                                            deadBelowIncarnation: graceOver ? incarnation : 0) {
                case let .due(fold):
                    folds.append(Fold(room: roomID, operation: fold))
                    // Looked at again: a fold whose store failed is made later (a done one plans nothing).
                    foldLater[roomID, default: []].insert(user)
                case .notYet: foldLater[roomID, default: []].insert(user)
                case .nothingOver:
                    // Sessions of an earlier incarnation wait for the grace to pass.
                    if !graceOver, room.hasSessionsToFold(for: user, origin: replica, deadBelowIncarnation: incarnation) {
                        foldLater[roomID, default: []].insert(user)
                    }
                }
            }
        }
        return folds
    }

    /// The rooms with rewards this node sequenced that are not folded yet, and their
    /// version vectors: the shell says, for each, the time before which every copy of
    /// every reward is here (`RewardCheckpoint.completeBefore` over every known peer).
    public var roomsWithRewardsToFold: [(room: String, seen: VersionVector)] {
        rewardFoldCandidates.keys.sorted().compactMap { roomID in rooms[roomID].map { (roomID, $0.seen) } }
    }

    /// The reward folds due now, given per room the time before which its rewards are
    /// complete (rooms missing from `completeBefore` wait).
    public mutating func dueRewardFolds(nowMillis now: UInt64, completeBefore: [String: UInt64]) -> [Fold] {
        var folds: [Fold] = []
        for roomID in rewardFoldCandidates.keys.sorted() {
            guard let room = rooms[roomID] else {
                rewardFoldCandidates[roomID] = nil
                continue
            }
            guard let before = completeBefore[roomID], let users = rewardFoldCandidates[roomID] else { continue }
            var remaining = Set<UserID>()
            for user in users.sorted() {
                switch room.rewardFoldPlan(for: user, origin: replica, completeBeforeMillis: before, nowMillis: now,
                                           threshold: policy.rewardFoldThreshold, quietMillis: policy.rewardFoldQuietMillis) {
                case let .due(fold):
                    folds.append(Fold(room: roomID, operation: fold))
                    remaining.insert(user)  // newer rewards may be left; the next pass says
                case .notYet:
                    remaining.insert(user)
                case .nothing:
                    break
                }
            }
            rewardFoldCandidates[roomID] = remaining.isEmpty ? nil : remaining
        }
        return folds
    }
}
