import HomeroomCore
import HomeroomHarness

/// One verdict of the checker.
struct Check {
    var name: String
    var passed: Bool
    /// A target only fails the run with --strict.
    var isTarget = false
    var detail: String
}

/// A replica at the end of the run: a node (through its observer) or a client.
struct FinalReplica {
    var label: String
    var state: RoomState
}

/// The checker: after the final heal, every replica identical; every acknowledged
/// write present (Jepsen's set-full: lost, stable, and how long until stable);
/// rewards between the acknowledged and the attempted ones; invariants held.
struct Checker {
    var history: [WriteRecord]
    var tracking: Observatory.Tracking
    var replicas: [FinalReplica]
    /// Milliseconds from the final heal until every replica was identical; nil if never (within the wait).
    var finalConvergenceMillis: UInt64?
    var finalHealAt: UInt64
    var convergedAt: UInt64?
    /// Times the cluster became whole during the run, and when the next fault began after each.
    var heals: [(at: UInt64, nextFault: UInt64?, kinds: String)]
    var options: ChaosOptions
    var bannedUser: UserID
    var banAcknowledged: Bool
    var connectedWriters: [UserID]
    /// Milliseconds from the final heal until every connected writer was online; nil if not within the wait.
    var presenceMillis: UInt64?
    /// Milliseconds from the final heal to the check.
    var checkedAt: UInt64
    var nodeLogFindings: [String]
    /// Every "peer declared down" in the node logs, and those no fault explains.
    var declaredDowns: Int
    /// Whether a fault silenced some node past the down period (then downs must be read).
    var downsExpected: Bool
    var falseDowns: [DeclaredDown]
    /// The downs by the kinds of fault that explain them (`FalseDowns.byFault`).
    var downsByFault = ""
    var unexpectedExits: [String]
    var nemesisFailures: [String]
    var stuckWriters: [String]
    /// Every writer's clients' deliveries, and which clients were connected at the end.
    var inboxes: [ClientInbox] = []
    var finalClients: Set<String> = []
    /// By history index: each acknowledged compare-and-set write as its writer's client judges it.
    var compareAndSetKept: [Int: Bool?] = [:]
    /// Connected at the end: their presence state is checked, from when their current client joined.
    var presenceWriters: [UserID] = []
    var presenceSince: [UserID: UInt64] = [:]
    /// Compare-and-set writes their writers' clients were told they lost (`.propertyConflict`).
    var compareAndSetLossesTold: Set<Dot> = []
    /// When partitions cut links between nodes, for the splits made across one.
    var cutWindows: [ClosedRange<UInt64>] = []
    /// What the workload must at least have done (kicks, contention); none by default.
    var floors = WorkloadFloors.none

    struct Result {
        var checks: [Check]
        var acknowledged = 0
        var refused: [String: Int] = [:]
        var indeterminate = 0
        var lost: [String] = []
        var lostCount = 0
        var stableLatency = Percentiles([])
        var healConvergence = Percentiles([])
        var healSamples: [JSON] = []
        var healLines: [String] = []
        var rewards: JSON = .null
        var properties: JSON = .null
        var byOperation: [String: (attempted: Int, acknowledged: Int)] = [:]
        var differences: [String] = []
        /// For each writer shown offline: its sessions and why none counts (for the report).
        var presenceDetails: [String] = []
        var passed: Bool { checks.allSatisfy { $0.passed || $0.isTarget } }
        func passed(strict: Bool) -> Bool { checks.allSatisfy { $0.passed || ($0.isTarget && !strict) } }
    }

    func run() -> Result {
        var result = Result(checks: [])
        for record in history {
            result.byOperation[record.operation, default: (0, 0)].attempted += 1
            switch record.outcome {
            case .acknowledged:
                result.acknowledged += 1
                result.byOperation[record.operation, default: (0, 0)].acknowledged += 1
            case let .refused(code): result.refused[code, default: 0] += 1
            case .indeterminate: result.indeterminate += 1
            }
        }

        // 1. Identical replicas within the bound.
        let reference = replicas.first?.state
        var differing: [String] = []
        if let reference {
            for replica in replicas.dropFirst() where replica.state != reference {
                differing.append(replica.label)
                result.differences += describeDifference(replicas[0].label, reference, replica.label, replica.state)
            }
        }
        let bound = options.convergenceBoundMillis
        if let millis = finalConvergenceMillis, differing.isEmpty {
            result.checks.append(Check(name: "converged", passed: millis <= bound,
                                       detail: "\(replicas.count) replicas (\(options.nodes) nodes through observers, \(replicas.count - options.nodes) clients) identical \(millis) ms after the last heal (bound \(bound) ms)"))
        } else {
            result.checks.append(Check(name: "converged", passed: false,
                                       detail: "replicas still differ after the wait: \(differing.joined(separator: ", ")) differ from \(replicas.first?.label ?? "-")"))
        }

        // 2. Every acknowledged write present in every replica (set-full).
        var lost: [String] = []
        var stableSamples: [UInt64] = []
        for (index, record) in history.enumerated() {
            guard case let .acknowledged(dot) = record.outcome else { continue }
            var missingAt: [String] = []
            for replica in replicas where !replica.state.seen.contains(dot) { missingAt.append(replica.label) }
            if let mark = record.property {
                for replica in replicas where !hasProperty(replica.state, mark) && !missingAt.contains(replica.label) {
                    missingAt.append(replica.label + " (value)")
                }
            }
            if !missingAt.isEmpty {
                lost.append("\(record.client) \(record.operation) \(dot) acknowledged at \(record.completedAt) ms: missing at \(missingAt.joined(separator: ", "))")
                continue
            }
            let stable = tracking.stableAt[index] ?? convergedAt ?? Clock.now
            stableSamples.append(stable >= record.invokedAt ? stable - record.invokedAt : 0)
        }
        result.lostCount = lost.count
        result.lost = Array(lost.prefix(30))
        result.stableLatency = Percentiles(stableSamples)
        result.checks.append(Check(name: "no-lost-writes", passed: lost.isEmpty,
                                   detail: "\(result.acknowledged) acknowledged writes: \(result.acknowledged - lost.count) stable, \(lost.count) lost"))

        // 3. Rewards: acknowledged <= present <= attempted, per (author, target, amount).
        var attempted: [RewardMark: Int] = [:]
        var acknowledged: [RewardMark: Int] = [:]
        for record in history {
            guard let mark = record.reward else { continue }
            attempted[mark, default: 0] += 1
            if case .acknowledged = record.outcome { acknowledged[mark, default: 0] += 1 }
        }
        var rewardProblems: [String] = []
        var foldedAmount: Int64 = 0
        var totals: [(String, Int64, Int64, Int64, Int64)] = []
        if let reference {
            // A reward a node folded is counted in a floor, no longer listed: for a student
            // with floors, a mark may be missing from the records (the total says whether
            // it is counted), never listed more often than attempted.
            var present: [RewardMark: Int] = [:]
            var folds = Set<UserID>()
            for (user, record) in reference.users {
                if !record.rewardFloors.isEmpty { folds.insert(user) }
                foldedAmount += record.rewardFloors.values.reduce(Int64(0)) { $0 + $1.sum }
                for (key, entry) in record.rewards {
                    present[RewardMark(author: key.author, target: user, amount: entry.amount), default: 0] += 1
                }
            }
            for mark in Set(attempted.keys).union(present.keys) {
                let have = present[mark] ?? 0
                let low = acknowledged[mark] ?? 0
                let high = attempted[mark] ?? 0
                if (have < low && !folds.contains(mark.target)) || have > high {
                    rewardProblems.append("\(mark.author) -> \(mark.target) amount \(mark.amount): present \(have), acknowledged \(low), attempted \(high)")
                }
            }
            for student in Set(attempted.keys.map(\.target)).sorted() {
                let ack = acknowledged.filter { $0.key.target == student }.reduce(Int64(0)) { $0 + Int64($1.key.amount) * Int64($1.value) }
                let tried = attempted.filter { $0.key.target == student }.reduce(Int64(0)) { $0 + Int64($1.key.amount) * Int64($1.value) }
                let total = reference.users[student]?.rewardTotal ?? 0
                let fromRecords = present.filter { $0.key.target == student }.reduce(Int64(0)) { $0 + Int64($1.key.amount) * Int64($1.value) }
                totals.append((student, ack, total, tried, fromRecords))
                if total < ack || total > tried {
                    rewardProblems.append("\(student): total \(total) outside acknowledged \(ack) ... attempted \(tried)")
                }
            }
        }
        result.rewards = .object([
            ("attempted", .int(attempted.values.reduce(0, +))), ("acknowledged", .int(acknowledged.values.reduce(0, +))),
            ("per_student", .array(totals.map { .object([("user", .string($0.0)), ("acknowledged_total", .integer($0.1)),
                                                          ("total", .integer($0.2)), ("attempted_total", .integer($0.3))]) })),
            ("problems", .array(rewardProblems.prefix(20).map { .string($0) })),
        ])
        result.checks.append(Check(name: "rewards", passed: rewardProblems.isEmpty,
                                   detail: rewardProblems.isEmpty
                                       ? "\(acknowledged.values.reduce(0, +)) acknowledged of \(attempted.values.reduce(0, +)) attempted rewards: every total between the two, each reward counted once (amount \(foldedAmount) of them folded into floors)"
                                       : "\(rewardProblems.count) problems, first: \(rewardProblems[0])"))

        // 3b. Locks: every acknowledged grant has its own fence (renewals by the holder
        // excepted), no replica ends below the largest one, and the guarded key holds a
        // write made under the largest fence any of its writes had: an older holder's
        // writes never overwrite a newer one's (docs/MESSAGING.md, "Locks").
        var lockProblems: [String] = []
        var grantHolders: [UInt64: Set<String>] = [:]
        var guardedValues: [UInt64: Set<String>] = [:]
        var acknowledgedGuarded: UInt64 = 0
        var acknowledgedGrants = 0, acknowledgedGuardedWrites = 0
        for record in history {
            guard let mark = record.lock else { continue }
            switch mark.kind {
            case .acquire:
                if case .acknowledged = record.outcome {
                    acknowledgedGrants += 1
                    grantHolders[mark.fence, default: []].insert(record.client)
                }
            case let .guardedWrite(value):
                guardedValues[mark.fence, default: []].insert(value)
                if case .acknowledged = record.outcome {
                    acknowledgedGuardedWrites += 1
                    acknowledgedGuarded = max(acknowledgedGuarded, mark.fence)
                }
            case .release: break
            }
        }
        for (fence, holders) in grantHolders where holders.count > 1 {
            lockProblems.append("fence \(fence) was granted to \(holders.sorted().joined(separator: " and "))")
        }
        let largestGrant = grantHolders.keys.max() ?? 0
        for replica in replicas {
            let highest = replica.state.locks[WorkloadPlan.lockName]?.highestFence ?? 0
            if highest < largestGrant { lockProblems.append("\(replica.label): lock fence \(highest) below the acknowledged grant \(largestGrant)") }
            guard acknowledgedGuarded > 0 else { continue }
            let value = replica.state.properties[WorkloadPlan.guardedKey]?.value
            let fence = value?.fence?.fence ?? 0
            let text = String(decoding: value?.bytes ?? [], as: UTF8.self)
            if fence < acknowledgedGuarded {
                lockProblems.append("\(replica.label): \(WorkloadPlan.guardedKey) holds a write of fence \(fence), below the acknowledged guarded write of fence \(acknowledgedGuarded)")
            } else if guardedValues[fence]?.contains(text) != true {
                lockProblems.append("\(replica.label): \(WorkloadPlan.guardedKey) = \(text) under fence \(fence): no write of that fence had that value")
            }
        }
        result.checks.append(Check(name: "locks", passed: lockProblems.isEmpty,
                                   detail: lockProblems.isEmpty
                                       ? "\(acknowledgedGrants) acknowledged grants (\(grantHolders.count) fences, each one holder's) and \(acknowledgedGuardedWrites) acknowledged guarded writes: every replica at the largest fence, the guarded key holding a write of the largest fence"
                                       : "\(lockProblems.count) problems, first: \(lockProblems[0])"))

        // 3c. Register effects: every register a workload write won holds that write's value
        // (found by the winning stamp's dot), on every replica: no value applied to the wrong
        // user or field, none made up for an acknowledged dot.
        let registerOrder = RegisterOrder(history: history, stamps: tracking.stamps)
        var registerProblems: [String] = []
        var registersChecked = 0
        for replica in replicas {
            for held in replica.state.workloadRegisters() {
                guard held.stamp.sequence != 0, let mark = registerOrder.acknowledged[held.stamp.dot] else { continue }
                registersChecked += 1
                if mark.key != held.key || mark.value != held.value {
                    registerProblems.append("\(replica.label): \(held.key) = \(held.value) by \(held.stamp.dot), which wrote \(mark.key) = \(mark.value)")
                }
            }
        }
        let acknowledgedRegisters = registerOrder.acknowledged.count
        result.checks.append(Check(name: "register-effects", passed: registerProblems.isEmpty && (acknowledgedRegisters == 0 || registersChecked > 0),
                                   detail: registerProblems.isEmpty
                                       ? "\(registersChecked) registers across the replicas hold the value of the acknowledged write that won them (\(acknowledgedRegisters) acknowledged register writes)"
                                       : "\(registerProblems.count) problems, first: \(registerProblems[0])"))

        // 3d. Register order: a register's own dot cannot show that an older write won it.
        // Every replica holds, in each register, the acknowledged write the merge order
        // (the stamps) puts last, or a later one.
        var orderProblems: [String] = []
        var orderedRegisters = 0
        for replica in replicas { orderedRegisters += registerOrder.olderThanLast(in: replica, into: &orderProblems) }
        // Acknowledged writes but none with a stamp seen: nothing was compared.
        let unordered = acknowledgedRegisters > 0 && registerOrder.ordered == 0
        result.checks.append(Check(name: "register-order", passed: orderProblems.isEmpty && !unordered,
                                   detail: unordered
                                       ? "\(acknowledgedRegisters) acknowledged register writes, none with a stamp seen on a node: no order to compare with"
                                       : orderProblems.isEmpty
                                       ? "\(orderedRegisters) registers across the replicas hold the last acknowledged write the merge order gives, or a later one (\(registerOrder.ordered) of \(acknowledgedRegisters) acknowledged register writes ordered by a stamp seen on a node, \(registerOrder.unstamped) never seen on a node)"
                                       : "\(orderProblems.count) problems, first: \(orderProblems[0])"))

        // 3e. Stage and hands: who should have won, from the acknowledged promotions and
        // hand writes, against what every replica shows (the invariants only count them).
        result.checks.append(StageModel(order: registerOrder, kicks: KickOrder(history: history, stamps: tracking.stamps),
                                        bannedUser: bannedUser, banAcknowledged: banAcknowledged).check(replicas))

        // 3e'. Kicks: every acknowledged one reflected on every replica, unless a later write explains otherwise.
        if floors.kicks > 0 || history.contains(where: { $0.kick != nil }) {
            result.checks.append(KickCheck(history: history, replicas: replicas, stamps: tracking.stamps, floor: floors.kicks).check())
        }

        // 3f. Messages: delivered once, in each sender's order, caught up after cuts.
        if history.contains(where: { $0.message != nil }) || !inboxes.isEmpty {
            result.checks.append(MessageCheck(history: history, inboxes: inboxes, finalClients: finalClients, reference: reference).check())
        }

        // 3g. Compare-and-set and presence state, when the workload wrote them.
        if history.contains(where: { $0.compareAndSet != nil }) || floors.contendedCompareAndSets > 0 {
            result.checks.append(CompareAndSetCheck(history: history, replicas: replicas, kept: compareAndSetKept,
                                                    seen: tracking.compareAndSetSeen, lossesTold: compareAndSetLossesTold,
                                                    contentionFloor: floors.contendedCompareAndSets, splitFloor: floors.splits, cutWindows: cutWindows,
                                                    mergeGraceMillis: options.healBoundMillis).check())
        }
        if history.contains(where: { $0.presence != nil }) {
            result.checks.append(PresenceStateCheck(history: history, replicas: replicas, writers: presenceWriters, since: presenceSince).check())
        }

        // 4. Invariants: sampled during the run on every node, and on every final replica.
        var invariantProblems = tracking.violations
        for replica in replicas {
            for problem in Invariants.check(replica.state, bannedUser: bannedUser) { invariantProblems.append("\(replica.label) final: \(problem)") }
            if replica.state.classState.state != .during {
                invariantProblems.append("\(replica.label) final: class state \(replica.state.classState.state), written: during")
            }
            let ended = replica.state.breakoutEnded
            if replica.state.breakoutGroups.values.contains(where: { !(ended < $0.stamp) })
                || replica.state.breakoutAssignments.values.contains(where: { !(ended < $0.stamp) }) {
                invariantProblems.append("\(replica.label) final: a breakout write older than the last end is still there")
            }
            if banAcknowledged && replica.state.users[bannedUser]?.isBanned != true {
                invariantProblems.append("\(replica.label) final: the acknowledged ban of \(bannedUser) is missing")
            }
        }
        result.checks.append(Check(name: "invariants", passed: invariantProblems.isEmpty && tracking.violationCount == 0,
                                   detail: invariantProblems.isEmpty
                                       ? "stage <= limit, hands <= limit, rewards add up, class state forward only, banned user out: held in \(tracking.samples) samples of every node and in every final replica"
                                       : "\(max(invariantProblems.count, tracking.violationCount)) violations, first: \(invariantProblems[0])"))

        // 5. Presence: every writer still connected is online everywhere, waited for (bounded).
        if let reference {
            let offline = connectedWriters.filter { !reference.isOnline($0) }
            let bound = options.presenceBoundMillis
            let detail: String
            if offline.isEmpty {
                let when = presenceMillis.map { "\($0) ms after the last heal" } ?? "at the check, \(checkedAt) ms after the last heal"
                detail = "all \(connectedWriters.count) connected writers online on every replica \(when) (bound \(bound) ms)"
            } else {
                detail = "\(offline.count) of \(connectedWriters.count) connected writers shown offline \(checkedAt) ms after the last heal (waited up to \(bound) ms): \(offline.joined(separator: ", "))"
            }
            result.checks.append(Check(name: "presence", passed: offline.isEmpty && (presenceMillis ?? 0) <= bound, detail: detail))
            result.presenceDetails = offline.map { describeSessions($0, in: reference) }
        }

        // 5b. Progress: a cluster that acknowledges nothing would pass every check above.
        // Every writer gets a share of its writes acknowledged, and the cluster acknowledges
        // writes begun in every fault-free window.
        var progressProblems: [String] = []
        let writers = Dictionary(grouping: history, by: \.client)
        // The banned writer is refused by design once the ban lands.
        for (writer, records) in writers.sorted(by: { $0.key < $1.key }) where writer != bannedUser {
            let acked = records.filter { if case .acknowledged = $0.outcome { return true } else { return false } }.count
            // A conditional write refused as stale is an answer the race is built to get, not a failure.
            let stale = records.filter { $0.outcome == .refused("revision-mismatch") }.count
            let answerable = records.count - stale
            let ratio = Double(acked) / Double(max(1, answerable))
            if answerable > 0 && ratio < options.minimumAcknowledgedRatio {
                progressProblems.append("\(writer): \(acked) of \(answerable) writes acknowledged (\(Int(ratio * 100))%, at least \(Int(options.minimumAcknowledgedRatio * 100))% required; \(stale) refused as stale not counted)")
            }
        }
        if history.isEmpty { progressProblems.append("no write was attempted") }
        var quietWindows = 0
        for heal in heals {
            let end = heal.nextFault ?? finalHealAt
            guard end > heal.at + 1_000 else { continue }
            quietWindows += 1
            let progressed = history.contains { record in
                guard case .acknowledged = record.outcome else { return false }
                return record.invokedAt >= heal.at && record.invokedAt < end
            }
            if !progressed { progressProblems.append("no write begun between the heal of \(heal.kinds) (\(heal.at) ms) and the next fault (\(end) ms) was acknowledged") }
        }
        result.checks.append(Check(name: "progress", passed: progressProblems.isEmpty,
                                   detail: progressProblems.isEmpty
                                       ? "every writer had at least \(Int(options.minimumAcknowledgedRatio * 100))% of its writes acknowledged (\(writers.count) writers); writes were acknowledged in all \(quietWindows) fault-free windows"
                                       : "\(progressProblems.count) problems, first: \(progressProblems[0])"))

        // 6. No crash, no sanitizer report, no node that died on its own, no fault the harness failed to inject.
        let crashes = nodeLogFindings + unexpectedExits
        result.checks.append(Check(name: "no-crash", passed: crashes.isEmpty,
                                   detail: crashes.isEmpty ? "no \"Fatal error\", \"Sanitizer\" or \"panic\" in any node log; no node died unasked"
                                       : crashes.prefix(5).joined(separator: "; ")))
        // 6b. No false down: a peer silent while no fault touched it or its observer, under
        // load, is a bug (a starved tick, a lost heartbeat path); each down ends sessions everywhere.
        let unread = downsExpected && declaredDowns == 0
        result.checks.append(Check(name: "no-false-down", passed: falseDowns.isEmpty && !unread,
                                   detail: unread
                                       ? "no \"peer declared down\" line was read from the node logs although faults silenced nodes past the down period: the check cannot see downs"
                                       : falseDowns.isEmpty
                                       ? "every down had a fault touching its pair during the silence (\(declaredDowns) downs in all\(downsByFault.isEmpty ? "" : ": \(downsByFault)"))"
                                       : "\(falseDowns.count) of \(declaredDowns) downs with no fault touching the pair during the silence, first: \(falseDowns[0].description)"))
        let harness = nemesisFailures + stuckWriters
        result.checks.append(Check(name: "harness", passed: harness.isEmpty,
                                   detail: harness.isEmpty ? "every fault injected and healed; every writer stopped" : harness.prefix(5).joined(separator: "; ")))

        // 7. Targets: convergence within the target after every heal (p99).
        var samples: [UInt64] = []
        for heal in heals {
            let window = heal.nextFault
            var worst: UInt64 = 0
            var censored = false
            for (index, record) in history.enumerated() {
                guard case .acknowledged = record.outcome, record.completedAt <= heal.at else { continue }
                let stable = tracking.stableAt[index] ?? convergedAt ?? UInt64.max
                if stable <= heal.at { continue }
                if let window, stable > window { censored = true; continue }
                worst = max(worst, stable - heal.at)
            }
            let value = censored ? (window ?? heal.at) - heal.at : worst
            samples.append(value)
            result.healLines.append("\(heal.kinds) \(censored ? "not before the next fault" : "\(worst) ms")")
            result.healSamples.append(.object([("heal_at_ms", .int(heal.at)), ("faults", .string(heal.kinds)),
                                               ("converged_ms", censored ? .null : .int(worst)),
                                               ("not_converged_before_next_fault", .bool(censored))]))
        }
        if let final = finalConvergenceMillis {
            samples.append(final)
            result.healSamples.append(.object([("heal_at_ms", .int(finalHealAt)), ("faults", .string("final heal")),
                                               ("converged_ms", .int(final)), ("final", .bool(true))]))
        }
        result.healConvergence = Percentiles(samples)
        result.checks.append(Check(name: "heal-convergence", passed: !samples.isEmpty && result.healConvergence.p99 <= options.healBoundMillis,
                                   detail: "after each heal, every write acknowledged before it on every node: p99 \(result.healConvergence.p99) ms (bound \(options.healBoundMillis) ms)"))
        let target = options.convergenceTargetMillis
        result.checks.append(Check(name: "target-convergence", passed: !samples.isEmpty && result.healConvergence.p99 <= target, isTarget: true,
                                   detail: "after each heal, every write acknowledged before it on every node: \(result.healConvergence.text); target p99 <= \(target) ms"))
        return result
    }

    func hasProperty(_ state: RoomState, _ mark: PropertyMark) -> Bool {
        let register: Register<PropertyValue>?
        if let user = mark.user {
            register = state.users[user]?.properties[mark.key]
        } else {
            register = state.properties[mark.key]
        }
        guard let value = register?.value.bytes else { return false }
        return value == Array(mark.value.utf8)
    }

    /// One line on why a user shows offline: each session with its host, incarnation and
    /// what ends it (left, kicked, or its host incarnation declared dead).
    func describeSessions(_ user: UserID, in state: RoomState) -> String {
        guard let record = state.users[user] else { return "\(user): unknown" }
        let names = Dictionary(uniqueKeysWithValues: (1...max(options.nodes, 1)).map { (ReplicaID(name: "n\($0)"), "n\($0)") })
        // Open sessions say why they do not count; ended ones only how many there are.
        let open = record.sessions.filter { $0.ended == nil }
        let sessions = open.map { session -> String in
            let host = names[session.host] ?? session.host.description
            var why: [String] = []
            if record.kicked >= session.started { why.append("kicked") }
            if let dead = state.deadIncarnations[session.host], session.incarnation <= dead { why.append("host dead up to \(dead)") }
            return "\(session.id)@\(host)#\(session.incarnation) \(why.isEmpty ? "live" : why.joined(separator: "+"))"
        }
        return "\(user) (\(record.sessions.count - open.count) sessions ended, \(open.count) open): " + sessions.joined(separator: "; ")
    }

    /// A few lines saying where two replicas differ.
    func describeDifference(_ aLabel: String, _ a: RoomState, _ bLabel: String, _ b: RoomState) -> [String] {
        var lines: [String] = []
        if a.seen != b.seen { lines.append("\(bLabel) vs \(aLabel): seen \(b.seen) vs \(a.seen)") }
        if a.users.count != b.users.count { lines.append("\(bLabel) vs \(aLabel): \(b.users.count) users vs \(a.users.count)") }
        for (user, record) in a.users.sorted(by: { $0.key < $1.key }) where b.users[user] != record {
            let other = b.users[user]
            lines.append("\(bLabel) vs \(aLabel): user \(user) differs (rewards \(other?.rewardTotal ?? -1) vs \(record.rewardTotal), sessions \(other?.sessions.count ?? -1) vs \(record.sessions.count), stage \(other?.stage.value ?? false) vs \(record.stage.value))")
            if lines.count > 8 { break }
        }
        if a.properties.count != b.properties.count { lines.append("\(bLabel) vs \(aLabel): \(b.properties.count) room properties vs \(a.properties.count)") }
        if a.stageLimit != b.stageLimit || a.classState != b.classState || a.muteAll != b.muteAll || a.deadIncarnations != b.deadIncarnations
            || a.cameraMute != b.cameraMute || a.microphoneMute != b.microphoneMute {
            lines.append("\(bLabel) vs \(aLabel): room registers differ (stage limit \(b.stageLimit.value) vs \(a.stageLimit.value), dead incarnations \(b.deadIncarnations.count) vs \(a.deadIncarnations.count))")
        }
        return lines
    }
}
