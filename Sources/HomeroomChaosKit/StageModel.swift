import HomeroomCore

/// Who should be on stage and who should have a hand up once the replicas agree, from
/// the history alone, as the simulation's `modelWinners` has it: each user's stage and
/// hand register and the limits as the acknowledged writes leave them (`RegisterOrder`),
/// the banned user out, a user's promotion or raise not counting unless stamped after
/// the user's last acknowledged kick (`KickOrder`), candidates in Core's order
/// (`CandidateOrder`: stamp, then user id), the first `limit` winning. Each replica's winners come from its incremental
/// queues, cut to the limit; the invariant check only counts them, so a wrong order, a
/// lost promotion or a lowering that did not take shows only against this model.
struct StageModel {
    var order: RegisterOrder
    var kicks = KickOrder()
    var bannedUser: UserID
    var banAcknowledged: Bool

    struct Winners: Equatable {
        var stage: [UserID]
        var hands: [UserID]
        var stageLimit: Int
        var handLimit: Int
    }

    /// The winners `state` should show, for the registers the history accounts for.
    func expected(for state: RoomState) -> Winners {
        func limit(_ field: String, default fallback: Int) -> Int {
            let key = RegisterKey(user: nil, field: field)
            return order.expected(key, held: state.workloadRegister(key)).flatMap { Int($0.value) } ?? fallback
        }
        // An unacknowledged ban may have landed: then the replica says whether it did.
        let banned = banAcknowledged || state.users[bannedUser]?.isBanned == true
        // Users the history promoted and users the replica shows with a register set:
        // a promotion nobody wrote must be judged too.
        var users = Set(order.acknowledged.values.compactMap { $0.field == "stage" || $0.field == "hand" ? $0.user : nil })
        users.formUnion(state.users.keys)
        if banned { users.remove(bannedUser) }
        // A candidate: a user whose register says on (or up), written after its last kick.
        func winners(_ field: String, limit: Int) -> [UserID] {
            var candidates: [(stamp: Stamp, user: UserID)] = []
            for user in users {
                let key = RegisterKey(user: user, field: field)
                guard let write = order.expected(key, held: state.workloadRegister(key)), write.value == "true" else { continue }
                guard kicks.expected(user, held: state.users[user]?.kicked ?? .origin) < write.stamp else { continue }
                candidates.append((write.stamp, user))
            }
            candidates.sort { CandidateOrder.precedes($0.stamp, $0.user, $1.stamp, $1.user) }
            return candidates.prefix(max(0, limit)).map(\.user)
        }
        // The workload never changes the room type: a class room's stage limit applies.
        let stageLimit = limit("stage-limit", default: RoomState.defaultStageLimit)
        let handLimit = limit("hand-limit", default: RoomState.defaultHandLimit)
        return Winners(stage: winners("stage", limit: stageLimit), hands: winners("hand", limit: handLimit),
                       stageLimit: stageLimit, handLimit: handLimit)
    }

    /// Compares every replica's stage and hands with the model; one line per replica
    /// and list that differs, naming the room, the expected and the seen winners.
    func check(_ replicas: [FinalReplica]) -> Check {
        var problems: [String] = []
        var shown: Winners?
        for replica in replicas {
            let state = replica.state
            let want = expected(for: state)
            shown = shown ?? want
            let room = state.roomID
            if state.type.value == .oneToOne {
                problems.append("room \(room) on \(replica.label): type one-to-one, which no write of the run set")
            }
            if state.stageWinners != want.stage {
                problems.append("room \(room) on \(replica.label): stage should be [\(want.stage.joined(separator: ", "))] (limit \(want.stageLimit)), shows [\(state.stageWinners.joined(separator: ", "))]")
            }
            if state.raisedHands != want.hands {
                problems.append("room \(room) on \(replica.label): hands up should be [\(want.hands.joined(separator: ", "))] (limit \(want.handLimit)), shows [\(state.raisedHands.joined(separator: ", "))]")
            }
        }
        let writes = order.acknowledged.values.filter { $0.field == "stage" || $0.field == "hand" }
        let promotions = writes.filter { $0.field == "stage" && $0.value == "true" }.count
        let raises = writes.filter { $0.field == "hand" && $0.value == "true" }.count
        // Writes acknowledged but none placed in the merge order: the model would be empty.
        let vacuous = !writes.isEmpty && order.ordered == 0
        let detail: String
        if vacuous {
            detail = "\(writes.count) acknowledged stage and hand writes, none with a stamp seen: the model has nothing to order"
        } else if problems.isEmpty {
            let winners = shown ?? Winners(stage: [], hands: [], stageLimit: RoomState.defaultStageLimit, handLimit: RoomState.defaultHandLimit)
            detail = "\(replicas.count) replicas show the stage [\(winners.stage.joined(separator: ", "))] (limit \(winners.stageLimit)) and the hands [\(winners.hands.joined(separator: ", "))] (limit \(winners.handLimit)) the model gives from \(writes.count) acknowledged stage and hand writes (\(promotions) promotions, \(raises) raises, \(kicks.acknowledged.count) kicks; \(order.ordered) of \(order.acknowledged.count) acknowledged register writes ordered by a seen stamp)"
        } else {
            detail = "\(problems.count) problems, first: \(problems[0])"
        }
        return Check(name: "stage-and-hands", passed: problems.isEmpty && !vacuous, detail: detail)
    }
}
