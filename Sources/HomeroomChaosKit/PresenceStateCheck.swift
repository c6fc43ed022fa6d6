import HomeroomCore

/// Presence state under the faults: a writer connected at the end shows, on every
/// replica, the value of its last acknowledged presence write (or of a later one whose
/// answer was lost): the client sets it again after every reconnect (a new session).
struct PresenceStateCheck {
    var history: [WriteRecord]
    var replicas: [FinalReplica]
    /// Writers connected at the end.
    var writers: [UserID]
    /// When each writer's current client joined: a new client (after a kick, or a refusal
    /// for good) starts with no presence state, and an earlier client's
    /// state ended with its session, so only writes made since count.
    var since: [UserID: UInt64] = [:]

    func check() -> Check {
        var problems: [String] = []
        var checked = 0, acknowledgedWrites = 0
        for writer in writers {
            let records = history.filter { $0.client == writer && $0.presence != nil && $0.invokedAt >= since[writer] ?? 0 }
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
        if sent && checked == 0 { problems.append("presence writes were sent, but no connected writer had one acknowledged through its current client: nothing to check") }
        return Check(name: "presence-state", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(checked) connected writers show their last acknowledged presence state (of \(acknowledgedWrites) acknowledged presence writes) on all \(replicas.count) replicas"
                         : "\(problems.count) problems, first: \(problems[0])")
    }
}
