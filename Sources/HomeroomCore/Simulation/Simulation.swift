/// A deterministic simulation of one room replicated on several nodes, driven by
/// a seed: random actors write, messages are reordered, dropped, duplicated and
/// cut by partitions, nodes restart, and anti-entropy repairs the rest. At the
/// end every replica must be identical and every invariant must hold.
///
/// Pure: time is simulated, the seed decides everything, so a failing schedule
/// replays exactly.
public struct Simulation {
    struct Actor {
        var id: UserID
        var role: Role
        var replica: Int
        var counter: UInt64 = 0
        var session: SessionID? = nil
        var sessionCount = 0
    }

    struct Node {
        var sequencer: Sequencer
        var state: RoomState
        var incarnation: UInt64 = 1
        var skewMillis: UInt64
        var highestClassState = ClassState.before
        // Mirrors built only from the change sets, checked against the state at the end.
        var mirrorOnline: Set<UserID> = []
        var mirrorStage: Set<UserID> = []
        var mirrorHands: Set<UserID> = []
        var mirrorStreams: [UserID: [StreamState]] = [:]
        var mirrorRewards: [UserID: Int64] = [:]
    }

    struct InFlight {
        var to: Int
        var delta: Delta
    }

    struct AcceptedReward {
        var write: Write
        var target: UserID
    }

    public let seed: UInt64
    public let config: SimulationConfig
    var rng: SplitMix64
    var nowMillis: UInt64 = 1_700_000_000_000
    var nodes: [Node] = []
    var actors: [Actor] = []
    var network: [InFlight] = []
    var partition: Set<Int>? = nil
    var expectedRewards: [UserID: [RewardKey: Int32]] = [:]
    var acceptedRewards: [AcceptedReward] = []
    var highestClassStateWritten = ClassState.before
    public private(set) var report: SimulationReport

    public init(seed: UInt64, config: SimulationConfig = SimulationConfig()) {
        self.seed = seed
        self.config = config
        self.rng = SplitMix64(seed: seed)
        self.report = SimulationReport(seed: seed)
        for index in 0..<config.replicas {
            var state = RoomState(roomID: "sim-room")
            state.stageLimit = Register(config.stageLimit, stamp: .origin)
            state.handLimit = Register(config.handLimit, stamp: .origin)
            state.type = Register(config.roomType, stamp: .origin)
            let skew = UInt64.random(in: 0...2_000, using: &rng)
            nodes.append(Node(sequencer: Sequencer(replica: ReplicaID(UInt64(index + 1))), state: state, skewMillis: skew))
        }
        actors.append(Actor(id: "teacher", role: .teacher, replica: 0))
        actors.append(Actor(id: "assistant", role: .assistant, replica: config.replicas - 1))
        for index in 0..<config.students {
            actors.append(Actor(id: "student-\(index)", role: .student, replica: index % config.replicas))
        }
        actors.append(Actor(id: "observer", role: .observer, replica: 0))
    }

    /// Runs the whole schedule and returns what it found.
    public static func run(seed: UInt64, config: SimulationConfig = SimulationConfig()) -> SimulationReport {
        var simulation = Simulation(seed: seed, config: config)
        simulation.runToEnd()
        return simulation.report
    }

    public mutating func runToEnd() {
        for index in actors.indices { join(index) }
        for _ in 0..<config.steps { step() }
        healAndConverge()
        check()
    }

    // MARK: - Steps

    mutating func step() {
        nowMillis += UInt64.random(in: 0...25, using: &rng)
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<45: randomWrite()
        case 45..<82: deliverOne()
        case 82..<90: antiEntropy()
        case 90..<(90 + config.partitionPercent): flipPartition()
        case 93..<95: retryReward()
        case 95..<98: reconnect()
        default: restartNode()
        }
    }

    mutating func join(_ index: Int) {
        actors[index].sessionCount += 1
        let actor = actors[index]
        let session = "\(actor.id)#\(actor.sessionCount)"
        actors[index].session = session
        let node = nodes[actor.replica]
        submit(from: index, .joinSession(user: actor.id, session: session, name: actor.id.prefix(1).uppercased() + actor.id.dropFirst(), role: actor.role,
                                         host: node.sequencer.replica, incarnation: node.incarnation))
    }

    mutating func randomWrite() {
        let index = Int.random(in: 0..<actors.count, using: &rng)
        let actor = actors[index]
        let students = actors.filter { $0.role == .student }.map(\.id)
        let someone = students.randomElement(using: &rng) ?? actor.id
        let device = Bool.random(using: &rng) ? Device.camera : Device.microphone
        let on = Bool.random(using: &rng)
        let operation: Operation
        switch actor.role {
        case .teacher, .assistant, .system:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<30: operation = .setStage(user: someone, on: rng.chance(65))
            case 30..<40: operation = .setPrivilege(user: someone, device: device, allowed: rng.chance(70))
            case 40..<48: operation = .setBoard(user: someone, granted: on)
            case 48..<62: operation = .reward(user: someone, amount: Int32.random(in: 1...3, using: &rng))
            case 62..<67: operation = .setHand(user: someone, raised: false)
            case 67..<72: operation = .setClassState(ClassState.allCases.randomElement(using: &rng)!)
            case 72..<75: operation = .muteAll
            case 75..<78: operation = .kick(user: someone)
            case 78..<79: operation = .ban(user: someone)
            case 79..<84: operation = .setRoomProperty(key: ["topic", "board", "quiz"].randomElement(using: &rng)!,
                                                       value: rng.chance(80) ? [UInt8.random(in: 0...255, using: &rng)] : nil, cause: "sim")
            case 84..<87: operation = .setStageLimit(UInt32.random(in: 1...4, using: &rng))
            case 87..<92: operation = .setUserProperty(user: someone, key: "note", value: [1, 2], cause: "sim")
            default: operation = .setRoomName("Room \(Int.random(in: 0..<5, using: &rng))")
            }
        case .student:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40: operation = .setDevice(user: actor.id, device: device, on: on)
            case 40..<65: operation = .setHand(user: actor.id, raised: rng.chance(60))
            case 65..<70: operation = .setName(user: actor.id, name: "S\(Int.random(in: 0..<9, using: &rng))")
            case 70..<75: operation = .setUserProperty(user: actor.id, key: "mood", value: [UInt8(on ? 1 : 0)], cause: "sim")
            // What a hostile student might send.
            case 75..<82: operation = .setStage(user: actor.id, on: true)
            case 82..<88: operation = .reward(user: actor.id, amount: 100)
            case 88..<94: operation = .setDevice(user: someone, device: device, on: true)
            default: operation = .setPrivilege(user: actor.id, device: device, allowed: true)
            }
        case .observer:
            operation = [.setClassState(.after), .setStage(user: someone, on: true), .muteAll].randomElement(using: &rng)!
        }
        submit(from: index, operation)
    }

    /// Sends a write through the actor's node: admission (unless forged), stamp, apply, broadcast.
    mutating func submit(from index: Int, _ operation: Operation) {
        actors[index].counter += 1
        let actor = actors[index]
        let write = Write(author: actor.id, authorRole: actor.role, authorCounter: actor.counter, operation: operation)
        submit(write, at: actor.replica, forged: rng.chance(config.forgedPercent))
    }

    mutating func submit(_ write: Write, at replica: Int, forged: Bool) {
        report.writes += 1
        let now = nowMillis + nodes[replica].skewMillis
        if !forged, nodes[replica].state.admit(write, nowMillis: now) != nil {
            report.refusedAtOrigin += 1
            return
        }
        let delta = nodes[replica].sequencer.stamp(write, nowMillis: now)
        let outcome = apply(delta, at: replica)
        if case .rejected = outcome { report.rejectedByMerge += 1 }
        if case .applied = outcome {
            if case let .reward(target, amount) = write.operation {
                expectedRewards[target, default: [:]][RewardKey(author: write.author, authorCounter: write.authorCounter)] = amount
                acceptedRewards.append(AcceptedReward(write: write, target: target))
            }
            if case let .setClassState(state) = write.operation { highestClassStateWritten = max(highestClassStateWritten, state) }
        }
        for other in nodes.indices where other != replica {
            network.append(InFlight(to: other, delta: delta))
            report.messagesSent += 1
        }
    }

    @discardableResult
    mutating func apply(_ delta: Delta, at replica: Int) -> ApplyOutcome {
        let now = nowMillis + nodes[replica].skewMillis
        guard (try? nodes[replica].sequencer.observe(delta.clock, nowMillis: now)) != nil else { return .duplicate }
        let outcome = nodes[replica].state.apply(delta)
        record(outcome.changes, at: replica)
        return outcome
    }

    mutating func deliverOne() {
        guard !network.isEmpty else { return }
        let index = Int.random(in: 0..<network.count, using: &rng)
        let message = network[index]
        if rng.chance(config.duplicatePercent) {
            report.messagesDuplicated += 1
        } else {
            network.swapAt(index, network.count - 1)
            network.removeLast()
        }
        if rng.chance(config.dropPercent) || !connected(message.delta.origin, message.to) {
            report.messagesDropped += 1
            return
        }
        apply(message.delta, at: message.to)
    }

    func connected(_ origin: ReplicaID, _ to: Int) -> Bool {
        guard let partition else { return true }
        let from = Int(origin.rawValue) - 1
        return partition.contains(from) == partition.contains(to)
    }

    mutating func antiEntropy() {
        let a = Int.random(in: 0..<nodes.count, using: &rng)
        let b = Int.random(in: 0..<nodes.count, using: &rng)
        guard a != b, connected(ReplicaID(UInt64(a + 1)), b) else { return }
        sync(from: a, to: b)
    }

    mutating func sync(from a: Int, to b: Int) {
        let patch = nodes[a].state.missing(since: nodes[b].state.seen)
        report.patchesSent += 1
        let changes = nodes[b].state.merge(patch)
        record(changes, at: b)
    }

    mutating func flipPartition() {
        if partition == nil {
            var side = Set<Int>()
            for index in nodes.indices where Bool.random(using: &rng) { side.insert(index) }
            partition = side
            report.partitions += 1
        } else {
            partition = nil
        }
    }

    /// A client whose acknowledgement was lost sends the same reward again, through another node.
    mutating func retryReward() {
        guard let old = acceptedRewards.randomElement(using: &rng) else { return }
        let replica = Int.random(in: 0..<nodes.count, using: &rng)
        submit(old.write, at: replica, forged: true)
    }

    /// A user's connection moves to another node: the old session ends, a new one starts.
    mutating func reconnect() {
        let index = Int.random(in: 0..<actors.count, using: &rng)
        if let session = actors[index].session {
            submit(from: index, .leaveSession(user: actors[index].id, session: session))
        }
        actors[index].replica = Int.random(in: 0..<nodes.count, using: &rng)
        join(index)
    }

    /// A node crashes and restarts as a new incarnation; another node declares the old one down.
    mutating func restartNode() {
        let crashed = Int.random(in: 0..<nodes.count, using: &rng)
        let old = nodes[crashed].incarnation
        nodes[crashed].incarnation += 1
        let witness = (crashed + 1) % nodes.count
        let write = Write(author: "node-\(witness + 1)", authorRole: .system, authorCounter: 0,
                          operation: .replicaDown(replica: nodes[crashed].sequencer.replica, incarnation: old))
        submit(write, at: witness, forged: false)
        for index in actors.indices where actors[index].replica == crashed { join(index) }
    }

    // MARK: - The end

    mutating func healAndConverge() {
        partition = nil
        network.removeAll()
        for round in 1...8 {
            report.syncRounds = round
            for a in nodes.indices {
                for b in nodes.indices where a != b { sync(from: a, to: b) }
            }
            if nodes.allSatisfy({ $0.state == nodes[0].state }) { return }
        }
    }

    mutating func record(_ changes: [RoomChange], at replica: Int) {
        for change in changes {
            switch change {
            case let .userJoined(user): nodes[replica].mirrorOnline.insert(user)
            case let .userLeft(user): nodes[replica].mirrorOnline.remove(user)
            case let .coHostsAdded(users): nodes[replica].mirrorStage.formUnion(users)
            case let .coHostsRemoved(users): nodes[replica].mirrorStage.subtract(users)
            case let .handWaved(user): nodes[replica].mirrorHands.insert(user)
            case let .handLowered(user): nodes[replica].mirrorHands.remove(user)
            case let .streamUpdated(user, device, state):
                var states = nodes[replica].mirrorStreams[user] ?? [.inoperable, .inoperable]
                states[Int(device.rawValue)] = state
                nodes[replica].mirrorStreams[user] = states
            case let .userRewarded(user, _, total): nodes[replica].mirrorRewards[user] = total
            case let .classStateUpdated(state):
                if state < nodes[replica].highestClassState {
                    report.violations.append("replica \(replica + 1): class state moved back from \(nodes[replica].highestClassState) to \(state)")
                }
                nodes[replica].highestClassState = state
            default: break
            }
        }
    }

    mutating func check() {
        let reference = nodes[0].state
        for (index, node) in nodes.enumerated() where node.state != reference {
            report.violations.append("replica \(index + 1) differs from replica 1 after \(report.syncRounds) sync rounds")
        }
        for (index, node) in nodes.enumerated() where node.state.snapshot() != reference.snapshot() {
            report.violations.append("replica \(index + 1)'s snapshot differs from replica 1's")
        }
        for (index, node) in nodes.enumerated() {
            checkInvariants(node, name: "replica \(index + 1)")
        }
        report.finalRoster = reference.roster()
    }

    mutating func checkInvariants(_ node: Node, name: String) {
        let state = node.state
        let stage = state.stageWinners
        if stage.count > state.stageLimitValue {
            report.violations.append("\(name): \(stage.count) on stage, limit \(state.stageLimitValue)")
        }
        if state.raisedHands.count > Int(state.handLimit.value) {
            report.violations.append("\(name): \(state.raisedHands.count) hands up, limit \(state.handLimit.value)")
        }
        if state.classState.state < highestClassStateWritten {
            report.violations.append("\(name): class state \(state.classState.state) is behind \(highestClassStateWritten)")
        }
        for (user, record) in state.users {
            let expected = expectedRewards[user]?.values.reduce(Int64(0)) { $0 + Int64($1) } ?? 0
            if record.rewardTotal != expected {
                report.violations.append("\(name): \(user) has \(record.rewardTotal) rewards, acknowledged \(expected)")
            }
            let online = record.isOnline(deadIncarnations: state.deadIncarnations)
            if record.isBanned && (online || stage.contains(user)) {
                report.violations.append("\(name): banned \(user) is still online or on stage")
            }
            if online && !record.sessions.contains(where: { $0.ended == nil && record.kicked < $0.started }) {
                report.violations.append("\(name): kicked \(user) is online without a later session")
            }
            // Change sets must add up to the state.
            if online != node.mirrorOnline.contains(user) {
                report.violations.append("\(name): \(user) online=\(online) but the change set said \(!online)")
            }
            let streams = [Device.camera, .microphone].map { device -> StreamState in
                let onStage = state.isOnStage(user)
                return device == .camera
                    ? .derive(onStage: onStage, deviceOn: record.cameraDevice.value, privilegeOn: record.cameraPrivilege.value)
                    : .derive(onStage: onStage, deviceOn: record.microphoneDevice.value, privilegeOn: state.microphonePrivilege(record, muteAll: state.muteAll))
            }
            if streams != (node.mirrorStreams[user] ?? [.inoperable, .inoperable]) {
                report.violations.append("\(name): \(user) streams \(streams) but the change set said \(node.mirrorStreams[user] ?? [])")
            }
            if record.rewardTotal != (node.mirrorRewards[user] ?? 0) {
                report.violations.append("\(name): \(user) reward change set says \(node.mirrorRewards[user] ?? 0), state \(record.rewardTotal)")
            }
        }
        if Set(stage) != node.mirrorStage {
            report.violations.append("\(name): stage \(stage.sorted()) but the change set said \(node.mirrorStage.sorted())")
        }
        if Set(state.raisedHands) != node.mirrorHands {
            report.violations.append("\(name): hands \(state.raisedHands.sorted()) but the change set said \(node.mirrorHands.sorted())")
        }
    }
}
