import HomeroomCore
import HomeroomNode

/// Compare-and-set under the faults (docs/MESSAGING.md, "What a conditional write
/// guarantees"): an acknowledged conditional write makes exactly the next revision;
/// two writes accepted at one revision (a split) leave at most one kept, and the
/// writer's client says which was lost; every replica holds a value some write of the
/// workload wrote, at no lower revision than an acknowledged one made.
struct CompareAndSetCheck {
    var history: [WriteRecord]
    var replicas: [FinalReplica]
    /// By history index: whether the writer's client judges that acknowledged write kept
    /// (true), lost (false), or cannot tell (nil: too many revisions ago).
    var kept: [Int: Bool?]

    func check() -> Check {
        var problems: [String] = []
        var acknowledged: [(index: Int, mark: CompareAndSetMark, result: PropertyWriteResult)] = []
        var written = Set<String>()
        var mismatches = 0
        for (index, record) in history.enumerated() {
            guard let mark = record.compareAndSet else { continue }
            switch record.outcome {
            case .acknowledged:
                written.insert(mark.value)
                if let result = mark.result { acknowledged.append((index, mark, result)) }
            case .indeterminate: written.insert(mark.value)
            case .refused("revision-mismatch"): mismatches += 1
            case .refused: break
            }
        }
        for write in acknowledged where write.result.revision != write.mark.expected + 1 {
            problems.append("\(history[write.index].client)'s write \(write.mark.value) expected revision \(write.mark.expected) and made \(write.result.revision)")
        }
        // A split: several accepted at one revision. At most one of them is kept.
        let byExpected = Dictionary(grouping: acknowledged, by: \.mark.expected)
        var splits = 0, judgedLost = 0
        for (revision, writes) in byExpected.sorted(by: { $0.key < $1.key }) where writes.count > 1 {
            splits += 1
            let keptOnes = writes.filter { kept[$0.index] == .some(true) }
            if keptOnes.count > 1 {
                problems.append("\(keptOnes.count) writes accepted at revision \(revision) all judged kept: \(keptOnes.map(\.mark.value).joined(separator: ", "))")
            }
        }
        judgedLost = kept.values.filter { $0 == .some(false) }.count
        let largest = acknowledged.map(\.result.revision).max() ?? 0
        for replica in replicas {
            guard let property = replica.state.properties[WorkloadPlan.compareAndSetKey] else {
                if !acknowledged.isEmpty { problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) missing after \(acknowledged.count) acknowledged writes") }
                continue
            }
            let value = String(decoding: property.value.bytes ?? [], as: UTF8.self)
            if !written.contains(value) { problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) = \(value), which no write wrote") }
            if property.value.revision < largest {
                problems.append("\(replica.label): \(WorkloadPlan.compareAndSetKey) at revision \(property.value.revision), below the acknowledged \(largest)")
            }
            // The value held now is kept, by its own writer's judgement too.
            if let holder = acknowledged.first(where: { $0.mark.value == value }), kept[holder.index] == .some(false) {
                problems.append("\(replica.label): holds \(value), which its writer's client judges lost")
            }
        }
        if history.contains(where: { $0.compareAndSet != nil }) && acknowledged.isEmpty {
            problems.append("compare-and-set writes were sent, none acknowledged: nothing to check")
        }
        return Check(name: "compare-and-set", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(acknowledged.count) acknowledged conditional writes each made the next revision (\(mismatches) refused revision-mismatch); \(splits) revisions accepted twice under a split, at most one kept, \(judgedLost) judged lost by their writers; every replica at revision \(largest) or later, holding a written value"
                         : "\(problems.count) problems, first: \(problems[0])")
    }
}

/// Presence state under the faults: a writer connected at the end shows, on every
/// replica, the value of its last acknowledged presence write (or of a later one whose
/// answer was lost): the client sets it again after every reconnect (a new session).
struct PresenceStateCheck {
    var history: [WriteRecord]
    var replicas: [FinalReplica]
    /// Writers connected at the end through their first client (a new client starts
    /// with no presence state of its own).
    var writers: [UserID]

    func check() -> Check {
        var problems: [String] = []
        var checked = 0, acknowledgedWrites = 0
        for writer in writers {
            let records = history.filter { $0.client == writer && $0.presence != nil }
            guard let lastAcknowledged = records.lastIndex(where: { if case .acknowledged = $0.outcome { return true } else { return false } }) else { continue }
            acknowledgedWrites += records.filter { if case .acknowledged = $0.outcome { return true } else { return false } }.count
            var allowed: Set<String> = [records[lastAcknowledged].presence!]
            for record in records[(lastAcknowledged + 1)...] {
                if case .indeterminate = record.outcome { allowed.insert(record.presence!) }
            }
            checked += 1
            for replica in replicas {
                let shown = replica.state.presenceState(of: writer)[WorkloadPlan.presenceKey].map { String(decoding: $0, as: UTF8.self) }
                if shown == nil || !allowed.contains(shown!) {
                    problems.append("\(replica.label): \(writer)'s \(WorkloadPlan.presenceKey) is \(shown ?? "unset"), the last acknowledged is \(records[lastAcknowledged].presence!)")
                }
            }
        }
        let sent = history.contains { $0.presence != nil }
        if sent && checked == 0 { problems.append("presence writes were sent, but no connected writer had one acknowledged: nothing to check") }
        return Check(name: "presence-state", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(checked) connected writers show their last acknowledged presence state (of \(acknowledgedWrites) acknowledged presence writes) on all \(replicas.count) replicas"
                         : "\(problems.count) problems, first: \(problems[0])")
    }
}
