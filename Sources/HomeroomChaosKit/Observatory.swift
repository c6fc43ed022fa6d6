@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport
import HomeroomHarness

/// One observer client per node, attached to that node only, so its replica is what
/// that node holds. A sampler reads them every 100 ms: it timestamps when each
/// acknowledged write became visible on every node (Jepsen's "stable"), and checks
/// the invariants on every node's state as it goes.
final class Observatory: Sendable {
    struct Tracking {
        var cursor = 0
        /// (history index, dot, acknowledged at), not yet on every node.
        var pending: [(Int, Dot, UInt64)] = []
        var stableAt: [Int: UInt64] = [:]
        var highestClassState: [ClassState]
        var violations: [String] = []
        var violationCount = 0
        var samples = 0
        var recreated = 0
        /// The stamp of each register write and each kick seen on a node, by dot: an
        /// acknowledgement carries only the dot, and the checker orders acknowledged
        /// writes (and kicks against them) by stamp.
        var stamps: [Dot: Stamp] = [:]
        /// Each write of the compare-and-set key seen on a node, by dot: its rank and
        /// lineage, from which the checker rebuilds the chain the merge kept.
        var compareAndSetSeen: [Dot: SeenPropertyWrite] = [:]
    }

    let room: String
    let endpoints: [NodeEndpoint]
    let logger: Logger
    let history: History
    let bannedUser: UserID
    private let observers: Mutex<[RoomClient?]>
    /// Whether node i is running (set by the nemesis), so the sampler re-attaches only then.
    private let nodeUp: Mutex<[Bool]>
    private let tracking: Mutex<Tracking>
    private let stopFlag = Atomic<Bool>(false)
    private let worker = Mutex<Worker?>(nil)

    init(room: String, endpoints: [NodeEndpoint], logger: Logger, history: History, bannedUser: UserID) {
        self.room = room
        self.endpoints = endpoints
        self.logger = logger
        self.history = history
        self.bannedUser = bannedUser
        observers = Mutex(Array(repeating: nil, count: endpoints.count))
        nodeUp = Mutex(Array(repeating: true, count: endpoints.count))
        tracking = Mutex(Tracking(highestClassState: Array(repeating: .before, count: endpoints.count)))
    }

    func observerName(_ index: Int) -> UserID { "observer-n\(index + 1)" }

    private func makeObserver(_ index: Int) throws(ClientError) -> RoomClient {
        var options = Writer.options(syncMillis: 200, room: room, user: observerName(index), role: .observer)
        let client = RoomClient(room: room, user: observerName(index), role: .observer, name: observerName(index),
                                endpoints: [endpoints[index]], options: options, logger: logger)
        try client.connect()
        return client
    }

    /// Attaches every observer (bounded); throws when one cannot attach.
    func attachAll() throws(ClientError) {
        for index in endpoints.indices {
            let client = try makeObserver(index)
            observers.withLock { $0[index] = client }
        }
    }

    func setNode(_ index: Int, up: Bool) { nodeUp.withLock { $0[index] = up } }

    func start() {
        let thread = Worker { [self] in
            while !stopFlag.load(ordering: .acquiring) {
                let started = Clock.now
                sample()
                let spent = Clock.now - started
                if spent < 100 { Clock.sleep(millis: 100 - spent) }
            }
        }
        worker.withLock { $0 = thread }
    }

    func stop() {
        stopFlag.store(true, ordering: .releasing)
        _ = worker.withLock { $0 }?.wait(millis: 5_000)
    }

    /// Each node's state as its observer holds it (nil while an observer is detached).
    func states() -> [RoomState?] {
        observers.withLock { $0 }.map { client in
            guard let client, client.connectionState != .aborted else { return nil }
            return client.replica
        }
    }

    var clients: [RoomClient?] { observers.withLock { $0 } }

    func sample(reattach: Bool = true) {
        // Replace observers whose link ended (aborted) once their node runs again; one
        // whose node was down keeps trying by itself (reconnecting, suspended).
        let up = nodeUp.withLock { $0 }
        for (index, client) in observers.withLock({ $0 }).enumerated() where up[index] && reattach {
            if client == nil || client?.connectionState == .aborted {
                if let fresh = try? makeObserver(index) {
                    observers.withLock { $0[index] = fresh }
                    tracking.withLock { $0.recreated += 1 }
                }
            }
        }
        let states = states()
        let now = Clock.now
        let fresh = history.since(tracking.withLock { $0.cursor })
        tracking.withLock { tracking in
            for (offset, record) in fresh.enumerated() {
                if case let .acknowledged(dot) = record.outcome {
                    tracking.pending.append((tracking.cursor + offset, dot, record.completedAt))
                }
            }
            tracking.cursor += fresh.count
            tracking.samples += 1
            if states.allSatisfy({ $0 != nil }) {
                let all = states.map { $0! }
                tracking.pending.removeAll { entry in
                    guard all.allSatisfy({ $0.seen.contains(entry.1) }) else { return false }
                    tracking.stableAt[entry.0] = max(now, entry.2)
                    return true
                }
            }
            for (index, state) in states.enumerated() {
                guard let state else { continue }
                for held in state.workloadRegisters() where held.stamp.sequence != 0 { tracking.stamps[held.stamp.dot] = held.stamp }
                for record in state.users.values where record.kicked.sequence != 0 { tracking.stamps[record.kicked.dot] = record.kicked }
                if let seen = SeenPropertyWrite(state.properties[WorkloadPlan.compareAndSetKey]) { tracking.compareAndSetSeen[seen.dot] = seen }
                for problem in Invariants.check(state, bannedUser: bannedUser) {
                    record(&tracking, "n\(index + 1) at \(now) ms: \(problem)")
                }
                let current = state.classState.state
                if current < tracking.highestClassState[index] {
                    record(&tracking, "n\(index + 1) at \(now) ms: class state went back from \(tracking.highestClassState[index]) to \(current)")
                }
                tracking.highestClassState[index] = max(tracking.highestClassState[index], current)
            }
        }
    }

    private func record(_ tracking: inout Tracking, _ message: String) {
        tracking.violationCount += 1
        if tracking.violations.count < 50 { tracking.violations.append(message) }
    }

    var snapshot: Tracking { tracking.withLock { $0 } }
}

/// What must hold on every replica at every moment, whatever the partitions did.
enum Invariants {
    static func check(_ state: RoomState, bannedUser: UserID) -> [String] {
        var problems: [String] = []
        let stage = state.stageWinners
        let limit = state.type.value == .oneToOne ? 2 : Int(state.stageLimit.value)
        if stage.count > limit {
            problems.append("\(stage.count) users on stage, limit \(limit)")
        }
        if state.raisedHands.count > Int(state.handLimit.value) {
            problems.append("\(state.raisedHands.count) hands up, limit \(state.handLimit.value)")
        }
        for (user, record) in state.users {
            let folded = record.rewardFloors.values.reduce(Int64(0)) { $0 + $1.sum }
            let sum = record.rewards.values.reduce(folded) { $0 + Int64($1.amount) }
            if sum != record.rewardTotal {
                problems.append("\(user): reward total \(record.rewardTotal) but its rewards and floors add up to \(sum)")
            }
        }
        if let record = state.users[bannedUser], record.isBanned {
            if state.isOnline(bannedUser) { problems.append("banned \(bannedUser) is online") }
            if stage.contains(bannedUser) { problems.append("banned \(bannedUser) is on stage") }
        }
        return problems
    }
}
