import HomeroomCore

/// Kicks under the faults. A kick raises the user's `kicked` stamp (max-merge); every
/// session begun before it is over, and the user's stage and hand count only when
/// stamped after it (docs/PROTOCOL.md, "Deriving the roster"; a kicked user may join
/// again, docs/CLI.md). So after the heal, for every acknowledged kick, every replica:
/// holds it (a kicked stamp at least the kick's); shows the user on stage, or with a
/// hand up, only through a stage or hand write stamped after it; online only through a
/// session begun after it (the client joined again); with presence state only from such
/// a session. A run with fewer acknowledged kicks than the floor fails: the check would
/// otherwise pass on nothing.
struct KickCheck {
    var history: [WriteRecord]
    var replicas: [FinalReplica]
    /// Stamps seen on the nodes, by dot (`Observatory.Tracking.stamps`).
    var stamps: [Dot: Stamp]
    /// Acknowledged kicks with a stamp seen that the run must have.
    var floor: Int

    /// Why `replica` does not reflect `kick` (stamped `stamp`), one line per effect missing.
    static func problems(_ kick: KickOrder.Kick, stamp: Stamp, in replica: FinalReplica) -> [String] {
        let state = replica.state
        let user = kick.user
        let what = "\(kick.author)'s acknowledged kick of \(user) (\(kick.dot), stamp \(stamp))"
        guard let record = state.users[user] else { return ["\(replica.label): \(user) unknown after \(what)"] }
        var problems: [String] = []
        if record.kicked < stamp {
            problems.append("\(replica.label): \(what) is lost: \(user)'s kicked stamp is \(record.kicked)")
        }
        if state.stageWinners.contains(user) && !(stamp < record.stage.stamp) {
            problems.append("\(replica.label): \(user) on stage after \(what), through a promotion stamped before it (\(record.stage.stamp))")
        }
        if state.raisedHands.contains(user) && !(stamp < record.hand.stamp) {
            problems.append("\(replica.label): \(user)'s hand up after \(what), through a raise stamped before it (\(record.hand.stamp))")
        }
        let dead = state.deadIncarnations
        let later = record.sessions.filter { session in
            session.ended == nil && stamp < session.started && !(dead[session.host].map { session.incarnation <= $0 } ?? false)
        }
        if state.isOnline(user) && later.isEmpty {
            problems.append("\(replica.label): \(user) online after \(what), with no open session begun after it")
        }
        let laterIDs = Set(later.map(\.id))
        let shown = state.presenceState(of: user)
        for key in shown.keys.sorted() where !laterIDs.contains(record.presence[key]?.value.session ?? "") {
            problems.append("\(replica.label): \(user)'s presence state \(key) shown after \(what), set by session \(record.presence[key]?.value.session ?? "-"), not one begun after it")
        }
        return problems
    }

    func check() -> Check {
        let order = KickOrder(history: history, stamps: stamps)
        var problems: [String] = []
        var judged = 0, unstamped = 0
        let tookStage = order.acknowledged.filter(\.mark.onStage).count
        let tookHand = order.acknowledged.filter(\.mark.handUp).count
        // What the kicks did, on the first replica (they all agree once converged).
        var keptOff = 0, loweredHands = 0, backOnStage = 0, handsAgain = 0, rejoined = 0
        for kick in order.acknowledged {
            guard let stamp = kick.stamp else {
                unstamped += 1
                // Without its stamp, the kick can only be known to have landed somewhere.
                for replica in replicas where (replica.state.users[kick.user]?.kicked ?? .origin) == .origin {
                    problems.append("\(replica.label): \(kick.author)'s acknowledged kick of \(kick.user) (\(kick.dot)) is lost: no kick of \(kick.user) at all")
                }
                continue
            }
            for replica in replicas {
                judged += 1
                problems += Self.problems(kick, stamp: stamp, in: replica)
            }
            guard let record = replicas.first?.state.users[kick.user] else { continue }
            if record.stage.value { if record.stage.stamp < stamp { keptOff += 1 } else { backOnStage += 1 } }
            if record.hand.value { if record.hand.stamp < stamp { loweredHands += 1 } else { handsAgain += 1 } }
            if record.sessions.contains(where: { stamp < $0.started }) { rejoined += 1 }
        }
        let stamped = order.acknowledged.count - unstamped
        if stamped < floor {
            problems.append("\(stamped) acknowledged kicks with a stamp seen, fewer than the floor of \(floor): too few to check")
        }
        return Check(name: "kicks", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(order.acknowledged.count) acknowledged kicks (\(unstamped) without a stamp seen; floor \(floor); \(tookStage) of a user on stage, \(tookHand) of a hand up, as the kicker saw it) reflected on all \(replicas.count) replicas (\(judged) judged): in the end \(keptOff) users kept off a stage their register still promotes and \(loweredHands) hands kept down, \(backOnStage) back on stage and \(handsAgain) hands up through later writes, \(rejoined) users with a session begun after the kick (joined again)"
                         : "\(problems.count) problems, first: \(problems[0])")
    }
}
