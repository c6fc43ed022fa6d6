import HomeroomCore
import HomeroomNode
import HomeroomHarness

/// Who writes in a run, `homeroom-chaos`'s and `homeroom verify`'s alike: teachers and
/// students spread over the nodes, the user banned mid-run, and the compare-and-set racers
/// starting at different owners of the room (so their races cross nodes).
enum WorkloadCast {
    static let bannedUser: UserID = "mallory"

    /// `nodes` in order; `owners` the indices of the room's owners (empty: every node).
    static func writers(nodes: [NodeEndpoint], owners: [Int], teachers: Int, students: [UserID], racers: Int, seed: UInt64) -> [Writer] {
        let n = nodes.count
        func endpoints(from first: Int) -> [NodeEndpoint] { (0..<n).map { nodes[(first + $0) % n] } }
        var writers: [Writer] = []
        for index in 0..<teachers {
            writers.append(Writer(user: "t\(index + 1)", role: .teacher, endpoints: endpoints(from: index * 2),
                                  seed: seed &+ UInt64(index) &* 7919))
        }
        for (index, student) in students.enumerated() {
            writers.append(Writer(user: student, role: .student, endpoints: endpoints(from: index + 1),
                                  seed: seed &+ UInt64(100 + index) &* 7919))
        }
        writers.append(Writer(user: bannedUser, role: .student, endpoints: endpoints(from: n - 1), seed: seed &+ 999))
        for (index, racer) in CompareAndSetRace.racerNames(racers).enumerated() {
            writers.append(Writer(user: racer, role: CompareAndSetRace.role, endpoints: endpoints(from: owners.isEmpty ? index : owners[index % owners.count]),
                                  seed: seed &+ UInt64(200 + index) &* 7919))
        }
        return writers
    }
}

/// What the checker reads from the writers and observers once the workload stopped,
/// shared by both runs.
struct WorkloadEnd {
    let writers: [Writer]
    let observatory: Observatory
    let history: History

    private func isIn(_ writer: Writer) -> Bool { !writer.banned.load(ordering: .acquiring) }

    /// Every node (through its observer) and every writer still in, as the checker compares them.
    func finalReplicas() -> [FinalReplica] {
        var replicas: [FinalReplica] = []
        for (index, state) in observatory.states().enumerated() {
            if let state { replicas.append(FinalReplica(label: "n\(index + 1)", state: state)) }
        }
        for writer in writers where isIn(writer) {
            if let client = writer.current, client.connectionState != .aborted {
                // Peer messages reach only their two users (observers see none): compared
                // without them; the message check follows each one to its recipient.
                replicas.append(FinalReplica(label: writer.user, state: client.replica.visible(to: nil)))
            }
        }
        return replicas
    }

    func connectedWriters() -> [UserID] {
        writers.filter { isIn($0) && $0.current?.connectionState != .aborted }.map(\.user)
    }

    /// Every client's deliveries, and the labels of the clients connected now.
    func inboxes() -> (all: [ClientInbox], final: Set<String>) {
        var all: [ClientInbox] = []
        var final = Set<String>()
        for writer in writers {
            let mine = writer.inboxes.withLock { $0 }
            all += mine
            if isIn(writer), writer.current?.connectionState != .aborted, let last = mine.last {
                final.insert(MessageCheck.label(last))
            }
        }
        return (all, final)
    }

    /// Deliveries trail the data by up to a message hold (2 s) plus a sync: waits (at most
    /// `millis`) for the clients connected at the end to deliver what they owe.
    func awaitDeliveries(millis: UInt64, reference: RoomState?) -> (all: [ClientInbox], final: Set<String>) {
        let deadline = Clock.now + millis
        while Clock.now < deadline {
            let (all, final) = inboxes()
            let check = MessageCheck(history: history.all, inboxes: all, finalClients: final, reference: reference)
            if all.allSatisfy({ check.missing(in: $0).isEmpty }) { break }
            Clock.sleep(millis: 50)
        }
        return inboxes()
    }

    /// Compare-and-set: each acknowledged write as its writer's client judges it now.
    func compareAndSetKept() -> [Int: Bool?] {
        var kept: [Int: Bool?] = [:]
        let byUser = Dictionary(uniqueKeysWithValues: writers.map { ($0.user, $0) })
        for (index, record) in history.all.enumerated() {
            guard let result = record.compareAndSet?.result, case .acknowledged = record.outcome else { continue }
            kept[index] = byUser[record.client]?.current?.propertyWriteKept(result)
        }
        return kept
    }

    /// Writers connected at the end, whose presence state is checked, and since when (their current client's join).
    func presence() -> (writers: [UserID], since: [UserID: UInt64]) {
        let connected = writers.filter { isIn($0) && $0.current?.connectionState == .connected }
        let since = connected.reduce(into: [UserID: UInt64]()) { since, writer in
            since[writer.user] = writer.inboxes.withLock { $0.last?.joinedAt } ?? .max
        }
        return (connected.map(\.user), since)
    }

    func compareAndSetLossesTold() -> Set<Dot> {
        writers.reduce(into: Set<Dot>()) { told, writer in told.formUnion(writer.compareAndSetLossesTold.withLock { $0 }) }
    }
}
