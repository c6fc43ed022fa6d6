import HomeroomCore
import HomeroomNode

/// Compare-and-set under the faults (docs/MESSAGING.md, "What a conditional write
/// guarantees"). An acknowledged conditional write makes exactly the next revision at
/// the node that took it; a racing write at the same expected revision is refused there
/// as stale (`revision-mismatch`), and two taken by two nodes before either heard of the
/// other (across a partition, or within the propagation window) are both accepted: a
/// split, which the protocol allows. After the heal a split is resolved by the merge
/// rule, and this checks it: every replica holds the write that ranks highest by
/// (revision, then stamp) among every write of the key the observers saw; the writes
/// the final value descends from (its chain, rebuilt from the lineages seen) are kept,
/// every other write at a revision the chain covers is lost, and each writer's client
/// judges its own writes so (`propertyWriteKept`: kept on the chain, lost off it, or
/// cannot tell) and was told of each of its writes lost (a `.propertyConflict`, or
/// judged lost: "the loser finds out"), as far as a lineage reaches: a conflict names
/// the lost writes no more than 8 revisions below the write that beat them, so a write
/// lost more than 8 revisions below what the cluster had made by the heal of its
/// partition (plus `mergeGraceMillis`) is only counted, not required to be told (see
/// docs/CHAOS.md, "Findings"). Of the writes accepted at one revision at most one is
/// kept. Every replica holds a value some conditional write sent, at no lower revision
/// than an acknowledged one made. Floors: fewer contended writes (refused as stale, or
/// accepted beside another at one revision) or fewer splits than the race must produce
/// (`WorkloadFloors`) fail the run: contention never happened.
struct CompareAndSetCheck {
    var history: [WriteRecord]
    var replicas: [FinalReplica]
    /// By history index: whether the writer's client judges that acknowledged write kept
    /// (true), lost (false), or cannot tell (nil: too many revisions ago).
    var kept: [Int: Bool?]
    /// Every write of the key the observers saw on a node during the run, by dot.
    var seen: [Dot: SeenPropertyWrite] = [:]
    /// Writes their writers' clients reported lost (`.propertyConflict`), by dot.
    var lossesTold: Set<Dot> = []
    var contentionFloor = 0
    var splitFloor = 0
    /// When partitions cut links between nodes (harness ms): a split whose writes were all
    /// made inside one is counted as one across a partition.
    var cutWindows: [ClosedRange<UInt64>] = []
    /// How long after a write (or after the heal of the partition it was made in) its
    /// writer's client has merged whatever beat it: the heal bound.
    var mergeGraceMillis: UInt64 = 2_500

    typealias Accepted = (index: Int, mark: CompareAndSetMark, result: PropertyWriteResult)

    func check() -> Check {
        var problems: [String] = []
        var acknowledged: [Accepted] = []
        // A refused retry may follow a try that landed (docs: refused "unless an earlier,
        // timed-out try was"): any value sent may be the one held.
        var sent = Set<String>()
        var stale = 0
        for (index, record) in history.enumerated() {
            guard let mark = record.compareAndSet else { continue }
            sent.insert(mark.value)
            switch record.outcome {
            case .acknowledged: if let result = mark.result { acknowledged.append((index, mark, result)) }
            case .refused("revision-mismatch"): stale += 1
            case .refused, .indeterminate: break
            }
        }
        for write in acknowledged where write.result.revision != write.mark.expected + 1 {
            problems.append("\(history[write.index].client)'s write \(write.mark.value) expected revision \(write.mark.expected) and made \(write.result.revision)")
        }
        // A split: several accepted at one revision. At most one of them is kept.
        let byExpected = Dictionary(grouping: acknowledged, by: \.mark.expected)
        let splitRevisions = byExpected.filter { $0.value.count > 1 }.keys.sorted()
        for revision in splitRevisions {
            let keptOnes = byExpected[revision]!.filter { kept[$0.index] == .some(true) }
            if keptOnes.count > 1 {
                problems.append("\(keptOnes.count) writes accepted at revision \(revision) all judged kept: \(keptOnes.map(\.mark.value).joined(separator: ", "))")
            }
        }
        let acrossCuts = splitRevisions.filter { revision in
            cutWindows.contains { window in byExpected[revision]!.allSatisfy { window.contains(history[$0.index].invokedAt) } }
        }.count
        let judgedLost = kept.values.filter { $0 == .some(false) }.count
        let largest = acknowledged.map(\.result.revision).max() ?? 0
        var everySeen = seen
        for replica in replicas {
            if let held = SeenPropertyWrite(replica.state.properties[WorkloadPlan.compareAndSetKey]) { everySeen[held.dot] = held }
        }
        let highest = everySeen.values.max { $1.outranks($0) }
        for replica in replicas {
            guard let property = replica.state.properties[WorkloadPlan.compareAndSetKey], let held = SeenPropertyWrite(property) else {
                if !acknowledged.isEmpty { problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) missing after \(acknowledged.count) acknowledged writes") }
                continue
            }
            if !sent.contains(held.value) { problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) = \(held.value), which no write wrote") }
            if held.revision < largest {
                problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) at revision \(held.revision), below the acknowledged \(largest)")
            }
            // The value held now is kept, by its own writer's judgement too.
            if let holder = acknowledged.first(where: { $0.mark.value == held.value }), kept[holder.index] == .some(false) {
                problems.append("\(replica.label): holds \(held.value), which its writer's client judges lost")
            }
            // The merge rule: nothing seen outranks what is held.
            if let highest, highest.outranks(held) {
                problems.append("\(replica.label): holds \(held.value) (revision \(held.revision), stamp \(held.stamp)), but \(highest.value) (revision \(highest.revision), stamp \(highest.stamp)) was seen on a node: the merge keeps the higher revision, then the later stamp")
            }
        }
        let resolution = judgeAgainstChain(acknowledged, seen: everySeen, splitRevisions: splitRevisions, problems: &problems)
        if history.contains(where: { $0.compareAndSet != nil }) && acknowledged.isEmpty {
            problems.append("compare-and-set writes were sent, none acknowledged: nothing to check")
        }
        // Contention shows as a refusal at a node, or as a second write accepted at one revision.
        let contended = stale + splitRevisions.reduce(0) { $0 + byExpected[$1]!.count - 1 }
        if contended < contentionFloor {
            problems.append("\(contended) contended conditional writes (\(stale) refused revision-mismatch), fewer than the floor of \(contentionFloor): the racers never contended")
        }
        if splitRevisions.count < splitFloor {
            problems.append("\(splitRevisions.count) revisions accepted twice (splits), fewer than the floor of \(splitFloor): no contention crossed nodes")
        }
        return Check(name: "compare-and-set", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(acknowledged.count) acknowledged conditional writes each made the next revision (\(stale) refused revision-mismatch; \(contended) contended, floor \(contentionFloor)); \(splitRevisions.count) revisions accepted twice under a split (floor \(splitFloor); \(acrossCuts) while a partition cut links), at most one kept, \(judgedLost) judged lost by their writers; every replica holds the highest (revision, stamp) of \(everySeen.count) writes seen; \(resolution); every replica at revision \(largest) or later, holding a written value"
                         : "\(problems.count) problems, first: \(problems[0])")
    }

    /// Judges the acknowledged writes at the revisions the final value's chain covers:
    /// kept on the chain, lost off it, and each writer's client saying the same (or
    /// that it cannot tell). Returns what it found, for the detail.
    func judgeAgainstChain(_ acknowledged: [Accepted], seen: [Dot: SeenPropertyWrite], splitRevisions: [UInt64],
                           problems: inout [String]) -> String {
        guard let final = SeenPropertyWrite(replicas.first?.state.properties[WorkloadPlan.compareAndSetKey]) else {
            return "no value to rebuild a chain from"
        }
        let chain = CompareAndSetChain(final: final, seen: seen)
        problems += chain.contradictions.map { "lineages disagree at \($0)" }
        var onChain = 0, offChain = 0, told = 0, beyondReach = 0, outside = 0, judgedKept = 0, judgedLost = 0
        // The highest revision made by a write begun by `deadline`: what beat a lost write, at most.
        func reached(by deadline: UInt64) -> UInt64 {
            acknowledged.filter { history[$0.index].invokedAt <= deadline }.map(\.result.revision).max() ?? 0
        }
        for write in acknowledged {
            let client = history[write.index].client
            let judged = kept[write.index] ?? nil
            guard let keeps = chain.keeps(write.result.dot, revision: write.result.revision) else {
                outside += 1
                continue
            }
            if judged == true { judgedKept += 1 }
            if judged == false { judgedLost += 1 }
            if keeps {
                onChain += 1
                if judged == false {
                    problems.append("\(client)'s write \(write.mark.value) (revision \(write.result.revision)) is judged lost by its client, but the final value descends from it")
                }
            } else {
                offChain += 1
                if judged == true {
                    problems.append("\(client)'s write \(write.mark.value) (revision \(write.result.revision)) is judged kept by its client, but the final value descends from \(chain.byRevision[write.result.revision]!) there")
                }
                // "The loser finds out": its client reported the conflict, or judges it lost now.
                if judged == false || lossesTold.contains(write.result.dot) {
                    told += 1
                    continue
                }
                let invoked = history[write.index].invokedAt
                let healed = cutWindows.first { $0.contains(invoked) }?.upperBound ?? history[write.index].completedAt
                if reached(by: healed + mergeGraceMillis) > write.result.revision + UInt64(PropertyRevision.lineageLength) {
                    beyondReach += 1
                } else {
                    problems.append("\(client)'s write \(write.mark.value) (revision \(write.result.revision)) was lost to \(chain.byRevision[write.result.revision]!), and its client was never told (no conflict reported, not judged lost)")
                }
            }
        }
        // A split is keyed by the revision its writes expected; they made the next one.
        let resolved = splitRevisions.filter { chain.covers($0 + 1) }.count
        return "the chain of the final value covers revisions \(chain.lowestRevision ?? final.revision)-\(final.revision) (\(resolved) splits within it, each resolved to one write): \(onChain) acknowledged writes on it kept, \(offChain) off it lost (\(told) told to their writers by a conflict or judged lost, \(beyondReach) lost too far below the write that beat them for a lineage to tell), \(outside) below it; their clients judge \(judgedKept) kept and \(judgedLost) lost, all as the chain has it, and cannot tell for the rest (more than 8 revisions back)"
    }
}
