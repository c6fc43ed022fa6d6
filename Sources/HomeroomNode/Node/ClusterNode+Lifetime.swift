import HomeroomCore

/// Lifetime (docs/ARCHITECTURE.md, "Lifetime"): the node folds away the sessions it
/// started once enough of them are over, so a user who joins thousands of times in a
/// semester keeps a handful of session records, on every replica.
extension ClusterNode {
    /// Writes a `foldSessions` for each user whose sessions changed and who has at
    /// least `RoomState.sessionFoldThreshold` sessions started here that are over.
    /// Called from the presence loop; the decision is Core's, pure.
    func foldEndedSessions(recheckLater: Bool) {
        let now = wallMillis()
        let folds = state.withLock { state -> [(room: String, operation: HomeroomCore.Operation)] in
            guard !state.stopping else { return [] }
            // Users whose fold was not due yet are looked at again every few rounds.
            if recheckLater {
                for (roomID, users) in state.foldLater { state.foldCandidates[roomID, default: []].formUnion(users) }
                state.foldLater.removeAll()
            }
            guard !state.foldCandidates.isEmpty else { return [] }
            let candidates = state.foldCandidates
            state.foldCandidates.removeAll()
            var folds: [(room: String, operation: HomeroomCore.Operation)] = []
            for (roomID, users) in candidates {
                guard let room = state.rooms[roomID] else { continue }
                for user in users.sorted() {
                    switch room.sessionFoldPlan(for: user, origin: replica, nowMillis: now) {
                    case let .due(fold): folds.append((roomID, fold))
                    case .notYet: state.foldLater[roomID, default: []].insert(user)
                    case .nothingOver: break
                    }
                }
            }
            return folds
        }
        for fold in folds {
            let write = Write(author: "node:\(name)", authorRole: .system, authorCounter: 0, operation: fold.operation)
            if sequenceSystemWrite(room: fold.room, write) { metrics.add("session_folds_total") }
        }
    }

    /// Every user of every room is a candidate once, at start: a store written before
    /// folds existed (or while this node was down) is folded too.
    func noteEveryUserForFolding() {
        state.withLock { state in
            for (roomID, room) in state.rooms where !room.users.isEmpty {
                state.foldCandidates[roomID, default: []].formUnion(room.users.keys)
            }
        }
    }
}
