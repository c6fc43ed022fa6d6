import HomeroomCore
import HomeroomEngine

/// A deterministic simulation of several rooms replicated on several nodes, driven by
/// a seed: random actors write, messages are reordered, dropped, duplicated and
/// cut by partitions, stores fail, nodes crash and restart from what they stored,
/// and anti-entropy repairs the rest. At the end every replica of every room must be
/// identical and every invariant must hold, room by room.
///
/// Each node is the real node's policy, `NodeEngine`: the same admission, numbering,
/// store-then-commit pipeline, remote apply and patch merge that `ClusterNode` runs. As
/// the node does, it has at most one write in flight per room (stamped, being stored,
/// not committed yet) while other rooms' writes and every room's deltas and patches go
/// on. The rooms share the node's clock and numbering state; a breakout group's room
/// (of the first room) is admitted by the first room's state.
/// The oracles come from the workload alone: what each client was acknowledged.
///
/// Pure: time is simulated, the seed decides everything, so a failing schedule
/// replays exactly.
public struct Simulation {
    static let roomID = "sim-room"
    /// The group whose room the schedule holds besides the ordinary rooms.
    static let breakoutGroup = "g1"

    struct Actor {
        var id: UserID
        var role: Role
        var replica: Int
        var counter: UInt64 = 0
        var session: SessionID? = nil
        /// The session the actor's node acknowledged joining (nil after a leave, or when the
        /// join was refused): the presence check expects the user online while it is set.
        var acknowledgedSession: SessionID? = nil
        var sessionCount = 0
        /// Gone without a leave (killed, unplugged): it neither writes nor syncs, so its
        /// node's lease must end its session (and any copy of it) on every replica.
        var vanished = false
    }

    /// One room: its clients (a user in two rooms is a client of each) and what they were
    /// told, the oracles.
    struct RoomWorld {
        var id: String
        var actors: [Actor] = []
        var expectedRewards: [UserID: [RewardKey: Int32]] = [:]
        var acceptedRewards: [AcceptedReward] = []
        var highestClassStateWritten = ClassState.before
        /// Per message, the stamps of the copies that were sequenced and kept at their origin.
        var acceptedMessages: [MessageKey: [Stamp]] = [:]
        var recentMessageWrites: [Write] = []
        var acceptedPropertyWrites: [AcceptedPropertyWrite] = []
        /// Per accepted grant's fence, who got it (a renewal keeps the fence and the holder).
        var grantedFences: [UInt64: Set<UserID>] = [:]
        /// The largest fence of an accepted guarded write.
        var largestGuardedFence: UInt64 = 0
        /// The breakout group this room is the room of (its main room is room 0), or nil.
        var group: String? = nil
        /// Every write a client was told ACCEPTED, for the acknowledged-write oracle.
        var acknowledgedWrites: [AcknowledgedWrite] = []

        init(id: String) {
            self.id = id
            group = Breakout.parse(roomID: id)?.group
        }
    }

    /// One room as one node holds it: what its change sets told a UI, and the deltas it took.
    struct RoomReplica {
        var highestClassState = ClassState.before
        // Mirrors built only from the change sets, checked against the state at the end.
        var mirrorOnline: Set<UserID> = []
        var mirrorStage: Set<UserID> = []
        var mirrorHands: Set<UserID> = []
        var mirrorStreams: [UserID: [StreamState]] = [:]
        var mirrorRewards: [UserID: Int64] = [:]
        // Messaging mirrors, also built only from change sets.
        var mirrorMessages: Set<MessageKey> = []
        var mirrorPresence: [UserID: [String: [UInt8]]] = [:]
        var mirrorRoomMuted = false
        var mirrorUserMuted: [UserID: Bool] = [:]
        /// Every write a conflict report said was lost here.
        var reportedLost: Set<Dot> = []
        /// The highest set revision seen per property set ("room", or a user id): it must never go down.
        var highestSetRevisions: [String: UInt64] = [:]
        /// Messages that left this node's history (counted when one comes back).
        var evictedHere: Set<MessageKey> = []
        /// Board, ban, property, lock, breakout and mute-all views, from change sets only.
        var views = ChangeSetViews()
        /// A snapshot copied and not stored yet (the node encodes it outside its lock while
        /// writes and merges go on), with the engine's mark taken with the copy.
        var compaction: Compaction? = nil
        /// Per origin, the clock reading of every delta of this room the node committed or
        /// was sent, by sequence number: one origin's readings must rise with its numbers.
        var clocks: [ReplicaID: [UInt64: HybridTimestamp]] = [:]
    }

    struct Node {
        /// The node's policy and in-memory rooms.
        var engine: NodeEngine
        /// What the node's store holds, per room: a restart loads it (and loses the rest).
        var stores: [StoreModel]
        var incarnation: UInt64 = 1
        var skewMillis: UInt64
        /// Per room (as `Simulation.worlds`).
        var rooms: [RoomReplica]
        var sequencer: Sequencer { engine.sequencer }
        /// The nodes it knows, as the node's membership table (`PeerTable`, the engine's):
        /// heard, learned from lists, expected writers; their liveness, rooms and reward
        /// checkpoints. Memory only: a restart forgets it.
        var peers = PeerTable()
        /// Its probes of the nodes it no longer hears (the engine's `IndirectProber`, as
        /// `ClusterNode.probeSilentPeers` runs it); memory only too.
        var prober: IndirectProber? = nil
        /// Per room, the write stamped and being stored (the node's lock is free meanwhile):
        /// at most one per room; a crash loses it unacknowledged.
        var inFlight: [PendingWrite?]

        /// The room as this node holds it now.
        func state(of room: String) -> RoomState { engine.rooms[room] ?? RoomState(roomID: room) }
    }

    /// A write decided (or stamped, for the node's own) and not committed yet.
    struct PendingWrite {
        var room: Int
        var write: Write
        var stamped: StampedWrite
        /// A client's write (acknowledged to it), or the node's own.
        var client: Bool
        var forged: Bool
        /// What the client sent, when `SimulationConfig.unappliedOperations` put another write in its place.
        var intended: Operation? = nil
    }

    struct AcceptedPropertyWrite {
        var scope: PropertyScope
        var key: String
        var dot: Dot
        var revision: UInt64
    }

    struct InFlight {
        var to: Int
        var room: Int
        var delta: Delta
    }

    struct AcceptedReward {
        var write: Write
        var target: UserID
    }

    public let seed: UInt64
    public private(set) var config: SimulationConfig
    var rng: SplitMix64
    var nowMillis: UInt64 = 1_700_000_000_000
    /// When the nodes' next tick is due (heartbeats, failure detection).
    var nextTickMillis: UInt64 = 1_700_000_000_000
    var nodes: [Node] = []
    /// The rooms: `config.rooms` ordinary ones, then a breakout group's room of the first.
    var worlds: [RoomWorld] = []
    var network: [InFlight] = []
    var partition: Set<Int>? = nil
    /// (from, to, room): pulls the engines asked for when a gap showed.
    var pendingPulls: [(from: Int, to: Int, room: Int)] = []
    /// Whether writes may stay in flight (not in the heal).
    var interleaving = true
    /// The nodes' ticks so far (clients sync at every other one).
    var ticks = 0
    static let lockName = "sim-lock"
    static let guardedKey = "guarded"
    // Internal: the checks in the other files of this extension write it too.
    public internal(set) var report: SimulationReport

    public init(seed: UInt64, config: SimulationConfig = SimulationConfig()) {
        self.seed = seed
        self.config = config
        self.rng = SplitMix64(seed: seed)
        self.report = SimulationReport(seed: seed)
        var ids = (0..<max(config.rooms, 1)).map { $0 == 0 ? Self.roomID : "\(Self.roomID)-\($0 + 1)" }
        if config.breakoutRoom && config.roomType == .smallClassroom { ids.append(Breakout.roomID(of: Self.breakoutGroup, in: Self.roomID)) }
        worlds = ids.map(RoomWorld.init(id:))
        report.rooms = ids.count
        for index in 0..<config.replicas {
            let states = ids.map { id -> RoomState in
                var state = RoomState(roomID: id)
                state.stageLimit = Register(config.stageLimit, stamp: .origin)
                state.handLimit = Register(config.handLimit, stamp: .origin)
                state.type = Register(config.roomType, stamp: .origin)
                state.historyLimit = Register(config.historyLimit, stamp: .origin)
                return state
            }
            // Now and then a clock beyond the drift limit: the others refuse its deltas
            // (anti-entropy brings its writes instead).
            let skew = rng.chance(config.farSkewPercent)
                ? config.policy.maxClockDriftMillis + UInt64.random(in: 1_000...30_000, using: &rng)
                : UInt64.random(in: 0...2_000, using: &rng)
            if skew > config.policy.maxClockDriftMillis { report.farSkewedNodes += 1 }
            var engine = NodeEngine(replica: ReplicaID(UInt64(index + 1)), rooms: Dictionary(uniqueKeysWithValues: zip(ids, states)), policy: config.policy)
            engine.liveIncarnation(1, sinceMillis: nowMillis + skew)
            nodes.append(Node(engine: engine, stores: states.map(StoreModel.init(snapshot:)), skewMillis: skew,
                              rooms: states.map { RoomReplica(views: ChangeSetViews(from: $0)) }, inFlight: Array(repeating: nil, count: ids.count)))
            nodes[nodes.count - 1].prober = makeProber(nodes.count - 1)
        }
        // Each room's clients spread over the nodes from another node. A group's room has
        // the teacher and every other student.
        for room in worlds.indices {
            let at = { (index: Int) in (index + room) % config.replicas }
            let group = worlds[room].group != nil
            worlds[room].actors.append(Actor(id: "teacher", role: .teacher, replica: at(0)))
            if !group { worlds[room].actors.append(Actor(id: "assistant", role: .assistant, replica: at(config.replicas - 1))) }
            for index in stride(from: 0, to: config.students, by: group ? 2 : 1) {
                worlds[room].actors.append(Actor(id: "student-\(index)", role: .student, replica: at(index)))
            }
            if !group { worlds[room].actors.append(Actor(id: "observer", role: .observer, replica: at(0))) }
        }
    }

    /// Runs the whole schedule and returns what it found.
    public static func run(seed: UInt64, config: SimulationConfig = SimulationConfig()) -> SimulationReport {
        var simulation = Simulation(seed: seed, config: config)
        simulation.runToEnd()
        return simulation.report
    }

    public mutating func runToEnd() {
        for room in worlds.indices {
            for index in worlds[room].actors.indices { join(index, in: room) }
        }
        openGroup()
        for _ in 0..<config.steps { step() }
        healAndConverge()
        check()
    }

    /// The room as node `replica` holds it now.
    func state(_ replica: Int, _ room: Int) -> RoomState { nodes[replica].state(of: worlds[room].id) }

    /// The index of the room with this id (every room an engine names is one of the schedule's).
    func room(_ id: String) -> Int { worlds.firstIndex { $0.id == id }! }

    // MARK: - Steps

    mutating func step() {
        nowMillis += UInt64.random(in: 0...25, using: &rng)
        while nextTickMillis <= nowMillis {
            tick()
            nextTickMillis += config.heartbeatMillis
        }
        // A write in flight finishes now and then: its store returns, and it is committed.
        if rng.chance(config.inFlightFinishPercent) { finishOneInFlight() }
        let room = Int.random(in: 0..<worlds.count, using: &rng)
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<45: randomWrite(in: room)
        case 45..<78: deliverOne()
        case 78..<82: housekeeping(at: Int.random(in: 0..<nodes.count, using: &rng))
        case 82..<90: antiEntropy(in: room)
        case 90..<(90 + config.partitionPercent): flipPartition()
        case 93..<94: retryReward(in: room)
        case 94..<95: retryMessage(in: room)
        case 95..<97: reconnect(in: room)
        case 97: vanishOrReturn(in: room)
        default: if config.restarts { restartNode() }
        }
    }

    /// With a group's room: the teacher opens the group in the first room and moves every
    /// fourth student into it, so the group's room shuts the other students out (until the
    /// schedule's own breakout writes move them, or end the groups).
    mutating func openGroup() {
        guard worlds.contains(where: { $0.group != nil }), let teacher = worlds[0].actors.firstIndex(where: { $0.role == .teacher }) else { return }
        submit(from: teacher, in: 0, .setBreakoutGroup(id: Self.breakoutGroup, name: "Group \(Self.breakoutGroup)"))
        for student in stride(from: 0, to: config.students, by: 4) {
            submit(from: teacher, in: 0, .assignBreakoutGroup(user: "student-\(student)", group: Self.breakoutGroup))
        }
    }

    mutating func join(_ index: Int, in room: Int) {
        worlds[room].actors[index].sessionCount += 1
        let actor = worlds[room].actors[index]
        let session = "\(actor.id)#\(actor.sessionCount)"
        worlds[room].actors[index].session = session
        let node = nodes[actor.replica]
        submit(from: index, in: room, .joinSession(user: actor.id, session: session, name: actor.id.prefix(1).uppercased() + actor.id.dropFirst(), role: actor.role,
                                                   host: node.sequencer.replica, incarnation: node.incarnation))
        // Acknowledged: the origin applied it (a refusal or a failed store leaves no record).
        let joined = state(actor.replica, room).users[actor.id]?.sessions.contains { $0.id == session } == true
        worlds[room].actors[index].acknowledgedSession = joined ? session : nil
        // As `ClusterNode.handleJoin`: the lease starts with an accepted join.
        if joined { nodes[actor.replica].engine.startLease(room: worlds[room].id, session: session, user: actor.id, nowMillis: nowMillis) }
    }

    mutating func randomWrite(in room: Int) {
        let actors = worlds[room].actors
        let index = Int.random(in: 0..<actors.count, using: &rng)
        // A vanished client writes nothing.
        guard !actors[index].vanished else { return }
        if rng.chance(config.messagingPercent) {
            submit(from: index, in: room, messagingOperation(for: index, in: room), mayLinger: true)
            return
        }
        let actor = actors[index]
        let students = actors.filter { $0.role == .student }.map(\.id)
        let someone = students.randomElement(using: &rng) ?? actor.id
        let device = Bool.random(using: &rng) ? Device.camera : Device.microphone
        let on = Bool.random(using: &rng)
        let operation: Operation
        switch actor.role {
        case .teacher, .assistant, .system:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<24: operation = .setStage(user: someone, on: rng.chance(65))
            // An invitation to the stage (some short enough that answers come too late): the
            // invited student answers it, racing stage writes, kicks and the duration.
            case 24..<30: operation = .inviteToStage(user: someone, seconds: UInt32.random(in: 5...60, using: &rng))
            case 30..<40: operation = .setPrivilege(user: someone, device: device, allowed: rng.chance(70))
            case 40..<48: operation = .setBoard(user: someone, granted: on)
            case 48..<62: operation = .reward(user: someone, amount: Int32.random(in: 1...3, using: &rng), issuedAtMillis: nowMillis)
            case 62..<67: operation = .setHand(user: someone, raised: false)
            case 67..<72: operation = .setClassState(ClassState.allCases.randomElement(using: &rng)!)
            case 72..<75: operation = .muteAll
            case 75..<78: operation = .kick(user: someone)
            case 78..<79: operation = .ban(user: someone)
            case 79..<84: operation = .setRoomProperty(key: ["topic", "board", "quiz"].randomElement(using: &rng)!,
                                                       value: rng.chance(80) ? [UInt8.random(in: 0...255, using: &rng)] : nil, cause: "sim")
            case 84..<87: operation = .setStageLimit(UInt32.random(in: 1...4, using: &rng))
            case 87..<92: operation = .setUserProperty(user: someone, key: "note", value: [1, 2], cause: "sim")
            // The room's camera or microphone mute, on or off: students' device writes race it.
            case 92..<95: operation = .setDeviceMuted(device: device, muted: rng.chance(55))
            // Hand raising off, or on (with auto-stage or not): students' raises race it.
            case 95..<97: operation = .setHandRaising(allowed: rng.chance(60), autoStage: rng.chance(50))
            default: operation = .setRoomName("Room \(Int.random(in: 0..<5, using: &rng))")
            }
        case .student where state(actor.replica, room).openInvitation(for: actor.id) != nil && rng.chance(50):
            // Invited (as its replica knows): answer, before a stage write or the duration ends it.
            operation = .answerInvitation(accept: rng.chance(70))
        case .student:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40: operation = .setDevice(user: actor.id, device: device, on: on)
            case 40..<65: operation = .setHand(user: actor.id, raised: rng.chance(60))
            case 65..<70: operation = .setName(user: actor.id, name: "S\(Int.random(in: 0..<9, using: &rng))")
            case 70..<75: operation = .setUserProperty(user: actor.id, key: "mood", value: [UInt8(on ? 1 : 0)], cause: "sim")
            // What a hostile student might send.
            case 75..<82: operation = .setStage(user: actor.id, on: true)
            case 82..<88: operation = .reward(user: actor.id, amount: 100, issuedAtMillis: nowMillis)
            case 88..<94: operation = .setDevice(user: someone, device: device, on: true)
            // An answer to an invitation (refused without one): an accept is the student's own stage write.
            case 94..<97: operation = .answerInvitation(accept: rng.chance(70))
            default: operation = .setPrivilege(user: actor.id, device: device, allowed: true)
            }
        case .observer:
            operation = [.setClassState(.after), .setStage(user: someone, on: true), .muteAll].randomElement(using: &rng)!
        }
        submit(from: index, in: room, operation, mayLinger: true)
    }

    /// Messages, presence state, chat mutes, history limits and conditional property writes.
    mutating func messagingOperation(for index: Int, in room: Int) -> Operation {
        let actors = worlds[room].actors
        let actor = actors[index]
        let students = actors.filter { $0.role == .student }.map(\.id)
        let someone = students.randomElement(using: &rng) ?? actor.id
        let anyone = actors.randomElement(using: &rng)!.id
        let payload = [UInt8](repeating: UInt8.random(in: 0...255, using: &rng), count: Int.random(in: 0...3, using: &rng))
        let state = self.state(actor.replica, room)
        func condition(_ scope: PropertyScope, _ key: String) -> UInt64? {
            let current = state.propertyRevision(scope: scope, key: key)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<6: return current
            case 6..<8: return current > 0 ? current - 1 : 0
            default: return nil
            }
        }
        // On the whole set (the sum of its keys' revisions): current, stale, or none.
        func setCondition(_ scope: PropertyScope) -> UInt64? {
            let current = state.propertySetRevision(scope: scope)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0..<3: return current
            case 3..<4: return current > 0 ? current - 1 : 0
            default: return nil
            }
        }
        switch actor.role {
        case .teacher, .assistant, .system:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<35: return .sendMessage(type: "chat", payload: payload, previous: 0)
            case 35..<48: return .sendPeerMessage(to: anyone, type: "note", payload: payload, previous: 0)
            case 48..<58: return .setChatMuted(user: rng.chance(50) ? nil : someone, muted: rng.chance(50))
            case 58..<62: return .trimHistory(beforeMillis: nowMillis - UInt64.random(in: 0...3_000, using: &rng))
            case 62..<66: return .setHistoryLimit(UInt32.random(in: 3...40, using: &rng))
            case 92..<95:
                // The stage carousel: started with random settings, or stopped.
                return .setCarousel(Carousel(running: rng.chance(75), intervalSeconds: UInt32.random(in: 10...99, using: &rng),
                                             range: rng.chance(50) ? .all : .cameraOn, order: rng.chance(50) ? .joinOrder : .random))
            case 86..<92:
                // Breakout groups: create, rename or remove one, move a student, or end them all.
                let group = "g\(Int.random(in: 1...3, using: &rng))"
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<3: return .setBreakoutGroup(id: group, name: rng.chance(85) ? "Group \(group)" : nil)
                case 3..<9: return .assignBreakoutGroup(user: someone, group: rng.chance(85) ? group : nil)
                default: return .endBreakout
                }
            case 66..<86:
                // The lock: take it (or renew it), write the key it guards under the fence this
                // node shows (sometimes a stale one), let it go, or revoke whoever holds it.
                let held = state.lockHolding(Self.lockName, atMillis: nowMillis)
                let highest = state.locks[Self.lockName]?.highestFence ?? 0
                let mine = held?.holder == actor.id
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<6 where mine, 5..<7 where !mine && highest > 0:
                    // The holder's write under its fence, or another's under a fence it does not hold.
                    return .setRoomProperty(key: Self.guardedKey, value: [UInt8.random(in: 0...255, using: &rng)], cause: "sim",
                                            revision: PropertyRevision(fence: LockFence(lock: Self.lockName, fence: mine ? held!.fence : highest)))
                case 7..<9: return .releaseLock(name: Self.lockName, revoke: false)
                case 9: return .releaseLock(name: Self.lockName, revoke: true)
                default: return .acquireLock(name: Self.lockName, ttlSeconds: 10)
                }
            default:
                let value: [UInt8]? = rng.chance(85) ? [UInt8.random(in: 0...255, using: &rng)] : nil
                let key = rng.chance(60) ? "cas" : "cas2"
                return .setRoomProperty(key: key, value: value, cause: "sim",
                                        revision: PropertyRevision(condition: condition(.room, key), setCondition: setCondition(.room)))
            }
        case .student:
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<40: return .sendMessage(type: "chat", payload: payload, previous: 0)
            case 40..<60: return .sendPeerMessage(to: anyone, type: "whisper", payload: payload, previous: 0)
            case 60..<82:
                let keys = ["mood", "typing", "k\(Int.random(in: 0..<40, using: &rng))"]
                let items = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                    PresenceItem(key: keys.randomElement(using: &rng)!, value: rng.chance(80) ? payload : nil)
                }
                return .setPresenceState(user: actor.id, session: actor.session ?? "none", items: items)
            default:
                let value: [UInt8]? = rng.chance(85) ? [UInt8.random(in: 0...255, using: &rng)] : nil
                return .setUserProperty(user: actor.id, key: "cas", value: value, cause: "sim",
                                        revision: PropertyRevision(condition: condition(.user(actor.id), "cas"),
                                                                   setCondition: setCondition(.user(actor.id))))
            }
        case .observer:
            return .sendMessage(type: "chat", payload: payload, previous: 0)
        }
    }

    /// Sends a write through the actor's node: admission (unless forged), stamp, store, commit, broadcast.
    mutating func submit(from index: Int, in room: Int, _ operation: Operation, mayLinger: Bool = false) {
        let (sender, at, id) = (worlds[room].actors[index].id, worlds[room].actors[index].replica + 1, worlds[room].id)
        trace(sender, "\(sender) at node \(at) sends \(operation) in \(id)")
        worlds[room].actors[index].counter += 1
        let actor = worlds[room].actors[index]
        let write = Write(author: actor.id, authorRole: actor.role, authorCounter: actor.counter, operation: operation)
        submit(write, at: actor.replica, in: room, forged: rng.chance(config.forgedPercent), mayLinger: mayLinger)
    }

    mutating func submit(_ write: Write, at replica: Int, in room: Int, forged: Bool, mayLinger: Bool = false) {
        // The node's pipeline takes one write of a room at a time: the one in flight goes first.
        settle(room, at: replica)
        // Test only: a kind the nodes acknowledge and never apply (the oracle's own test).
        var write = write
        var intended: Operation? = nil
        if config.unappliedOperations.contains(write.operation.name) {
            intended = write.operation
            if case .answerInvitation = write.operation {
                // The oracle judges an answer by the invitation its origin names (`prepare`).
                intended = state(replica, room).prepare(write, origin: ReplicaID(0), nowMillis: nowMillis + nodes[replica].skewMillis).operation
            }
            write.operation = .sendMessage(type: "unapplied", payload: [], previous: 0)
        }
        report.writes += 1
        let now = nowMillis + nodes[replica].skewMillis
        let id = worlds[room].id
        let stamped: StampedWrite
        if forged && !write.operation.isMessage && !write.operation.isLeave && !outsideRewardWindow(write, nowMillis: now) {
            // Past admission, as a forged or racing write would come: the merge alone keeps the
            // invariants. Not messages (a retry is answered at the origin) and not leaves: a
            // leave whose origin does not know the session's start cannot be admitted (it is
            // refused `session-unknown`), and one made anyway (an old node's, a hostile peer's)
            // leaves an ended record where the start was folded first (docs/ARCHITECTURE.md).
            // Not a reward outside its window either: that check reads only the write and the
            // node's clock, so no race gets past it, and folds rely on it (`RewardFloor`).
            guard let unchecked = nodes[replica].engine.stampSystemWrite(room: id, write, nowMillis: now) else { return }
            stamped = unchecked
        } else {
            let decision = nodes[replica].engine.decide(room: id, write, nowMillis: now)
            checkGroupAdmission(write, at: replica, in: room, decision)
            switch decision {
            case let .answer(outcome):
                switch outcome.status {
                case .duplicate where write.operation.isMessage: report.duplicateMessagesRefused += 1
                case .duplicate: report.duplicatesAcknowledged += 1
                default: report.refusedAtOrigin += 1
                }
                return
            case let .persist(numbered):
                stamped = numbered
            }
        }
        let pending = PendingWrite(room: room, write: write, stamped: stamped, client: true, forged: forged, intended: intended)
        nodes[replica].engine.storing(stamped)
        if mayLinger && interleaving && rng.chance(config.inFlightPercent) {
            // Stored while the node's lock is free: other rooms' writes, and deltas and
            // patches of every room, go on until it is committed (`finishOneInFlight`).
            nodes[replica].inFlight[room] = pending
            report.writesInFlight += 1
            return
        }
        finish(pending, at: replica)
    }

    /// A write's store returns: it is committed (its number consumed, its effects applied,
    /// its author told), or, when the store failed, refused `store-failed` and never committed.
    mutating func finish(_ pending: PendingWrite, at replica: Int) {
        nodes[replica].inFlight[pending.room] = nil
        let (write, room, id) = (pending.write, pending.room, worlds[pending.room].id)
        guard store(pending.stamped.delta, at: replica, in: room) else {
            nodes[replica].engine.storeFailed(pending.stamped)
            if pending.client {
                // Refused `store-failed`: nothing acknowledged, the number not consumed.
                report.storeFailures += 1
            } else {
                trace(write.operation.target, "node \(replica + 1) could not write \(write.operation) in \(id)")
            }
            return
        }
        let committed = nodes[replica].engine.commit(pending.stamped)
        noteClock(committed.delta, at: replica, in: room)
        if pending.client {
            trace(write.operation.target, "node \(replica + 1) took \(write.author)'s \(write.operation) in \(id) (counter \(write.authorCounter)\(pending.forged ? ", past admission" : ""))")
        } else {
            trace(write.operation.target, "node \(replica + 1) wrote \(write.operation) in \(id)")
        }
        record(committed.changes, at: replica, in: room)
        record(committed.messaging, at: replica, in: room)
        if pending.client {
            checkSetRevisions(at: replica, in: room)
            acknowledged(write, committed, intended: pending.intended, in: room)
        }
        for other in nodes.indices where other != replica {
            network.append(InFlight(to: other, room: room, delta: committed.delta))
            if pending.client { report.messagesSent += 1 }
        }
    }

    /// The write in flight in `room` at `replica`, if any, finishes first.
    mutating func settle(_ room: Int, at replica: Int) {
        if let pending = nodes[replica].inFlight[room] { finish(pending, at: replica) }
    }

    /// Every write in flight finishes (before the heal, and at a node's shutdown).
    mutating func settleAll() {
        for replica in nodes.indices {
            for room in worlds.indices { settle(room, at: replica) }
        }
    }

    /// One write in flight, at a random node and room, finishes.
    mutating func finishOneInFlight() {
        let waiting = nodes.indices.flatMap { replica in worlds.indices.compactMap { nodes[replica].inFlight[$0] == nil ? nil : (replica, $0) } }
        guard let (replica, room) = waiting.randomElement(using: &rng) else { return }
        settle(room, at: replica)
    }

    /// Notes a delta of `room` that node `replica` committed or was sent: one origin never
    /// numbers two deltas alike (checked at once), and its clock readings rise with its
    /// numbers (`checkClocks`, at the end).
    mutating func noteClock(_ delta: Delta, at replica: Int, in room: Int) {
        let known = nodes[replica].rooms[room].clocks[delta.origin, default: [:]].updateValue(delta.clock, forKey: delta.sequence)
        if let known, known != delta.clock {
            report.violations.append("replica \(replica + 1), \(worlds[room].id): origin \(delta.origin) numbered two deltas \(delta.sequence), clocks \(known) and \(delta.clock)")
        }
    }

    /// A client's write to a breakout group's room, decided at its origin: refused
    /// (`banned`, `not-in-group`) exactly when the main room as that node holds it says so
    /// (docs/ARCHITECTURE.md, breakout groups): banned there, or, for a group that exists,
    /// not a moderator and not one of its members. Leaves always pass.
    mutating func checkGroupAdmission(_ write: Write, at replica: Int, in room: Int, _ decision: WriteDecision) {
        guard let group = worlds[room].group, !write.operation.isLeave else { return }
        let main = state(replica, 0)
        let shut = main.users[write.author]?.isBanned == true
            || (main.breakoutGroups[group]?.value != nil && !write.authorRole.moderates && main.breakoutGroup(of: write.author) != group)
        var refused = false
        if case let .answer(outcome) = decision, outcome.code == "banned" || outcome.code == "not-in-group" {
            // A ban in the group's room itself is that room's own rule, not the gate's.
            if outcome.code == "banned" && !shut && state(replica, room).users[write.author]?.isBanned == true { return }
            refused = true
        }
        if refused { report.groupRoomRefusals += 1 } else if !shut { report.groupRoomAdmissions += 1 }
        // A write the gate lets through may still be refused by the group room's own rules.
        if shut && !refused {
            report.violations.append("node \(replica + 1) did not refuse \(write.author)'s \(write.operation) in \(worlds[room].id): the main room shuts it out (banned or in group \(main.breakoutGroup(of: write.author) ?? "none"))")
        } else if refused && !shut {
            report.violations.append("node \(replica + 1) refused \(write.author)'s \(write.operation) in \(worlds[room].id), which the main room lets in")
        }
    }

    /// Whether `write` is a reward the node's clock puts outside the reward window: refused
    /// at every node, racing or not (a copy made anyway, by a hostile peer, can count a
    /// reward its origin folded again, as any reward such a peer forges counts).
    func outsideRewardWindow(_ write: Write, nowMillis now: UInt64) -> Bool {
        guard case let .reward(_, _, issuedAt) = write.operation else { return false }
        return RoomState.isOutsideRewardWindow(issuedAtMillis: issuedAt, nowMillis: now, windowMillis: config.policy.rewardWindowMillis)
    }

    /// A node's own write (as system): numbered without admission, stored, committed, sent;
    /// now and then left in flight as a client's write can be.
    mutating func systemWrite(_ write: Write, at replica: Int, in room: Int) {
        settle(room, at: replica)
        let now = nowMillis + nodes[replica].skewMillis
        let id = worlds[room].id
        guard let stamped = nodes[replica].engine.stampSystemWrite(room: id, write, nowMillis: now) else {
            trace(write.operation.target, "node \(replica + 1) could not write \(write.operation) in \(id)")
            return
        }
        let pending = PendingWrite(room: room, write: write, stamped: stamped, client: false, forged: false)
        nodes[replica].engine.storing(stamped)
        if interleaving && rng.chance(config.inFlightPercent / 2) {
            nodes[replica].inFlight[room] = pending
            report.writesInFlight += 1
            return
        }
        finish(pending, at: replica)
    }

    /// Notes what happened to `config.traceUser` (a replay's trace, printed with the report).
    mutating func trace(_ user: UserID?, _ event: @autoclosure () -> String) {
        guard let traced = config.traceUser, user == traced else { return }
        report.trace.append("\(nowMillis - 1_700_000_000_000) ms: \(event())")
    }

    /// The store's append: fails now and then (`storeFailurePercent`); what it took survives a crash.
    mutating func store(_ delta: Delta, at replica: Int, in room: Int) -> Bool {
        if rng.chance(config.storeFailurePercent) { return false }
        nodes[replica].stores[room].append(.delta(delta))
        return true
    }

    /// The oracles: only what the client was told it has.
    mutating func acknowledged(_ write: Write, _ committed: CommittedWrite, intended: Operation? = nil, in room: Int) {
        guard committed.outcome.isAccepted else {
            report.rejectedByMerge += 1
            return
        }
        let delta = committed.delta
        noteAcknowledged(delta, intended: intended, in: room)
        switch delta.operation {
        case .sendMessage, .sendPeerMessage:
            worlds[room].acceptedMessages[MessageKey(sender: write.author, counter: write.authorCounter), default: []].append(delta.stamp)
            report.messagesAccepted += 1
            if !worlds[room].recentMessageWrites.contains(where: { $0.author == write.author && $0.authorCounter == write.authorCounter }) {
                worlds[room].recentMessageWrites.append(write)
                if worlds[room].recentMessageWrites.count > 6 { worlds[room].recentMessageWrites.removeFirst() }
            }
        case let .acquireLock(_, _, fence):
            worlds[room].grantedFences[fence, default: []].insert(write.author)
            report.lockGrants += 1
        case let .setRoomProperty(_, _, _, revision) where revision.fence != nil:
            // Guarded writes lose by fence, which tells their writers; not a conflict to report.
            worlds[room].largestGuardedFence = max(worlds[room].largestGuardedFence, revision.fence!.fence)
            report.guardedWrites += 1
        case let .setRoomProperty(key, _, _, revision):
            worlds[room].acceptedPropertyWrites.append(AcceptedPropertyWrite(scope: .room, key: key, dot: delta.dot, revision: revision.assigned))
        case let .setUserProperty(user, key, _, _, revision):
            worlds[room].acceptedPropertyWrites.append(AcceptedPropertyWrite(scope: .user(user), key: key, dot: delta.dot, revision: revision.assigned))
        case let .reward(target, amount, _):
            worlds[room].expectedRewards[target, default: [:]][RewardKey(author: write.author, authorCounter: write.authorCounter)] = amount
            worlds[room].acceptedRewards.append(AcceptedReward(write: write, target: target))
        case let .setClassState(state):
            worlds[room].highestClassStateWritten = max(worlds[room].highestClassStateWritten, state)
        default:
            break
        }
    }

    /// The origin a node sequences peer messages under.
    static func privateOrigin(_ replica: Int) -> ReplicaID { ReplicaID(UInt64(replica + 1)).privateForm }

    /// Another node's delta arrives: as the node, the store takes what the engine says it
    /// lacks (or fails to: the delta comes back by anti-entropy), then the engine applies it
    /// (or refuses its clock).
    mutating func apply(_ delta: Delta, at replica: Int, in room: Int) {
        let now = nowMillis + nodes[replica].skewMillis
        let origin = Int(delta.origin.rawValue & 0x7FFF_FFFF_FFFF_FFFF) - 1
        let id = worlds[room].id
        noteClock(delta, at: replica, in: room)
        let toStore = nodes[replica].engine.deltasToStore(room: id, [delta], nowMillis: now)
        var missed = false
        for lacking in toStore {
            if rng.chance(config.storeFailurePercent) { missed = true } else { nodes[replica].stores[room].append(.delta(lacking)) }
        }
        let applied = nodes[replica].engine.applyRemote(room: id, [delta], origin: delta.origin, nowMillis: now)
        if missed { nodes[replica].engine.storeMissed(room: id) }
        report.clockRefusals += applied.rejectedClock
        record(applied.changes, at: replica, in: room)
        record(applied.messaging, at: replica, in: room)
        checkSetRevisions(at: replica, in: room)
        if applied.needsPull { pendingPulls.append((from: origin, to: replica, room: room)) }
    }

    /// No property set's revision ever goes down on a replica (not through a delta, a
    /// patch, a conflict or a retry). The key a lock guards is left out: its writes merge
    /// by fence first, so an older holder's higher revisions give way to a newer holder's
    /// (docs/MESSAGING.md, "Locks").
    mutating func checkSetRevisions(at replica: Int, in room: Int) {
        let state = self.state(replica, room)
        let scopes: [(String, PropertyScope)] = [("room", .room)] + state.users.keys.map { ($0, .user($0)) }
        for (name, scope) in scopes {
            var now = state.propertySetRevision(scope: scope)
            if scope == .room { now &-= state.propertyRevision(scope: .room, key: Self.guardedKey) }
            let before = nodes[replica].rooms[room].highestSetRevisions[name] ?? 0
            if now < before {
                report.violations.append("replica \(replica + 1), \(worlds[room].id): the \(scope)'s set revision went down from \(before) to \(now)")
            }
            nodes[replica].rooms[room].highestSetRevisions[name] = max(before, now)
        }
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
        report.noteDelivery(origin: message.delta.origin.rawValue, sequence: message.delta.dot.sequence, to: message.to, room: message.room)
        apply(message.delta, at: message.to, in: message.room)
    }

    func connected(_ origin: ReplicaID, _ to: Int) -> Bool {
        guard let partition else { return true }
        let from = Int(origin.rawValue & 0x7FFF_FFFF_FFFF_FFFF) - 1
        return partition.contains(from) == partition.contains(to)
    }

    /// A pull a gap asked for, else a random pair's, in `room`; and a node whose store missed
    /// an append stores a snapshot (the node tries at every tick; here it can fail too).
    mutating func antiEntropy(in room: Int) {
        let compacting = Int.random(in: 0..<nodes.count, using: &rng)
        if let inFlight = nodes[compacting].rooms[room].compaction {
            finishCompaction(at: compacting, in: room, inFlight)
        } else if !nodes[compacting].engine.appendsPatches(room: worlds[room].id) {
            // Copied under the lock with its mark; stored now, or steps later while writes,
            // deltas and patches go on (as `ClusterNode.compact(room:)` does).
            let taken = Compaction(copy: state(compacting, room), logMark: nodes[compacting].stores[room].lastPosition,
                                   mark: nodes[compacting].engine.snapshotMark, clock: nodes[compacting].engine.sequencer.clock.last)
            if rng.chance(50) { finishCompaction(at: compacting, in: room, taken) } else { nodes[compacting].rooms[room].compaction = taken }
        }
        if let pull = pendingPulls.first {
            pendingPulls.removeFirst()
            if pull.from >= 0 && pull.from < nodes.count && connected(ReplicaID(UInt64(pull.from + 1)), pull.to) { sync(from: pull.from, to: pull.to, in: pull.room) }
            return
        }
        let a = Int.random(in: 0..<nodes.count, using: &rng)
        let b = Int.random(in: 0..<nodes.count, using: &rng)
        guard a != b, connected(ReplicaID(UInt64(a + 1)), b) else { return }
        sync(from: a, to: b, in: room)
    }

    /// A snapshot copied earlier is stored (the store can fail): it replaces the log up to
    /// the position read with the copy; what was appended since stays, replayed on load.
    mutating func finishCompaction(at replica: Int, in room: Int, _ taken: Compaction) {
        nodes[replica].rooms[room].compaction = nil
        guard !rng.chance(config.storeFailurePercent) else { return }
        let id = worlds[room].id
        let wasBehind = !nodes[replica].engine.appendsPatches(room: id)
        guard nodes[replica].stores[room].compact(taken.copy, upTo: taken.logMark, clock: taken.clock) else { return }
        nodes[replica].engine.snapshotStored(room: id, takenAt: taken.mark)
        if wasBehind { report.snapshotsAfterMisses += 1 }
    }

    mutating func sync(from a: Int, to b: Int, in room: Int) {
        let id = worlds[room].id
        let patch = state(a, room).missing(since: state(b, room).seen)
        report.patchesSent += 1
        // As the node: stored first when it brings writes and the store is not behind, then
        // merged; what the merge brought that the store did not take is a miss.
        var appended = false
        if nodes[b].engine.appendsPatches(room: id) && nodes[b].engine.patchBringsWrites(room: id, patch) && !rng.chance(config.storeFailurePercent) {
            nodes[b].stores[room].append(.patch(patch))
            appended = true
        }
        let merged = nodes[b].engine.merge(room: id, patch)
        if merged.changed && !appended { nodes[b].engine.storeMissed(room: id) }
        if merged.ownSequenceBehind != nil { report.ownSequencesBehind += 1 }
        record(merged.changes, at: b, in: room)
        record(merged.messaging, at: b, in: room)
        checkSetRevisions(at: b, in: room)
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

    /// A client whose acknowledgement was lost sends the same reward again, through another node
    /// (half the time past admission, so the merge alone must count it once).
    mutating func retryReward(in room: Int) {
        guard let old = worlds[room].acceptedRewards.randomElement(using: &rng) else { return }
        let replica = Int.random(in: 0..<nodes.count, using: &rng)
        submit(old.write, at: replica, in: room, forged: rng.chance(50), mayLinger: true)
    }

    /// A client whose acknowledgement was lost sends a recent message again, through any node.
    mutating func retryMessage(in room: Int) {
        guard let old = worlds[room].recentMessageWrites.randomElement(using: &rng) else { return }
        let replica = Int.random(in: 0..<nodes.count, using: &rng)
        report.messageRetries += 1
        submit(old, at: replica, in: room, forged: false, mayLinger: true)
    }

    /// A user's connection moves to another node: the old session ends, a new one starts.
    mutating func reconnect(in room: Int) {
        let index = Int.random(in: 0..<worlds[room].actors.count, using: &rng)
        guard !worlds[room].actors[index].vanished else { return }
        if let session = worlds[room].actors[index].session {
            submit(from: index, in: room, .leaveSession(user: worlds[room].actors[index].id, session: session))
        }
        worlds[room].actors[index].acknowledgedSession = nil
        worlds[room].actors[index].replica = Int.random(in: 0..<nodes.count, using: &rng)
        join(index, in: room)
    }

    /// A node crashes and restarts from its store as a new incarnation, as `ClusterNode`
    /// does: what the store missed is gone from it (anti-entropy brings it back), numbering
    /// continues above what the store holds, and it ends its previous incarnation's sessions.
    /// Writes in flight are lost, never acknowledged. Sometimes another node declared it down first.
    mutating func restartNode() {
        let crashed = Int.random(in: 0..<nodes.count, using: &rng)
        if let traced = config.traceUser { trace(traced, "node \(crashed + 1) restarts") }
        let old = nodes[crashed].incarnation
        let replica = nodes[crashed].sequencer.replica
        report.restarts += 1
        if rng.chance(50) {
            let witness = (crashed + 1) % nodes.count
            for room in worlds.indices {
                systemWrite(Write(author: "node-\(witness + 1)", authorRole: .system, authorCounter: 0,
                                  operation: .replicaDown(replica: replica, incarnation: old)), at: witness, in: room)
            }
        }
        // What was in flight to it is lost with its sockets, and so are its writes being stored.
        network.removeAll { $0.to == crashed }
        pendingPulls.removeAll { $0.to == crashed }
        report.inFlightLost += nodes[crashed].inFlight.compactMap { $0 }.count
        nodes[crashed].inFlight = Array(repeating: nil, count: worlds.count)
        let loaded = Dictionary(uniqueKeysWithValues: worlds.indices.map { (worlds[$0].id, nodes[crashed].stores[$0].load()) })
        nodes[crashed].engine = NodeEngine(replica: replica, rooms: loaded, policy: config.policy)
        // As the node's boot: the clock its store vouches for, above every reading it gave
        // out (the rooms' stamps alone miss writes that left none, a `replica_down` say).
        nodes[crashed].engine.restoreClock(atLeast: nodes[crashed].stores.map(\.clock).max() ?? 0)
        nodes[crashed].engine.noteEveryUserForFolding()
        nodes[crashed].peers = PeerTable()
        nodes[crashed].prober = makeProber(crashed)
        expectWriters(at: crashed, in: nil)
        for room in worlds.indices { nodes[crashed].rooms[room].compaction = nil }
        nodes[crashed].incarnation += 1
        nodes[crashed].engine.liveIncarnation(nodes[crashed].incarnation, sinceMillis: nowMillis + nodes[crashed].skewMillis)
        rebuildMirrors(of: crashed)
        // As `ClusterNode`'s boot: the previous incarnation's sessions end, the write asked
        // for again (`refuteAndEndOrphans`) until it is stored.
        nodes[crashed].engine.endEarlierIncarnation(old, in: worlds.map(\.id))
        markEarlierIncarnationDead(at: crashed)
        // Its clients: half notice and join again; the others stay attached (nng redials
        // and resends) and keep syncing the session the restart ended, which the node
        // reclaims (`NodeEngine.reclaim`). A vanished one does neither.
        for room in worlds.indices {
            for index in worlds[room].actors.indices where worlds[room].actors[index].replica == crashed && !worlds[room].actors[index].vanished {
                if rng.chance(50) {
                    join(index, in: room)
                } else {
                    report.attachedAcrossRestarts += 1
                    let (user, id) = (worlds[room].actors[index].id, worlds[room].id)
                    trace(user, "stays attached across node \(crashed + 1)'s restart in \(id)")
                }
            }
        }
    }

    /// A client vanishes without a leave, or a vanished one comes back and joins again
    /// at any node (its old session's lease runs out there meanwhile).
    mutating func vanishOrReturn(in room: Int) {
        let index = Int.random(in: 0..<worlds[room].actors.count, using: &rng)
        if worlds[room].actors[index].vanished {
            worlds[room].actors[index].vanished = false
            worlds[room].actors[index].replica = Int.random(in: 0..<nodes.count, using: &rng)
            join(index, in: room)
        } else if worlds[room].actors[index].session != nil {
            let (user, id) = (worlds[room].actors[index].id, worlds[room].id)
            trace(user, "vanishes from \(id)")
            worlds[room].actors[index].vanished = true
            report.vanished += 1
        }
    }

    /// What each attached client's syncs do at its node (`ClusterNode.handleSync`): reclaim
    /// a session a restart ended under it, renew its lease; then the node ends the sessions
    /// whose lease ran out (`ClusterNode.expireIdleSessions`). A client syncs every other
    /// tick, now and then at the tick between too: never late by the lease's length.
    mutating func syncsAndLeases(at replica: Int, everyClient: Bool) {
        for room in worlds.indices {
            let id = worlds[room].id
            for index in worlds[room].actors.indices where worlds[room].actors[index].replica == replica && !worlds[room].actors[index].vanished {
                guard everyClient || (ticks + index) % 2 == 0 || rng.chance(10), let session = worlds[room].actors[index].session else { continue }
                let user = worlds[room].actors[index].id
                if let copy = nodes[replica].engine.reclaim(room: id, session: session, user: user, nowMillis: nowMillis) {
                    report.reclaims += 1
                    systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0, operation: copy.operation), at: replica, in: room)
                }
                nodes[replica].engine.renewLease(room: id, session: session, user: user, nowMillis: nowMillis)
            }
        }
        for lease in nodes[replica].engine.expiredLeases(nowMillis: nowMillis) {
            report.leasesExpired += 1
            trace(lease.user, "node \(replica + 1): the lease of \(lease.session) in \(lease.room) ran out")
            systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0,
                              operation: .leaveSession(user: lease.user, session: lease.session)), at: replica, in: room(lease.room))
        }
    }

    /// What the node's presence loop does about its own incarnation: refute a declaration
    /// that reached it, and end copies whose client's session ended.
    mutating func refuteAndEndOrphans(at replica: Int) {
        markEarlierIncarnationDead(at: replica)
        let now = nowMillis + nodes[replica].skewMillis
        if let refutation = nodes[replica].engine.refutation(nowMillis: now) {
            report.refutations += 1
            nodes[replica].incarnation = refutation.next
            nodes[replica].engine.liveIncarnation(refutation.next, sinceMillis: now)
            for copy in refutation.copies {
                systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0, operation: copy.operation), at: replica, in: room(copy.room))
                nodes[replica].engine.carryLease(room: copy.room, from: copy.original, to: copy.copy, user: copy.user, nowMillis: nowMillis)
            }
        }
        for orphan in nodes[replica].engine.orphanedCopies() {
            systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0,
                              operation: .leaveSession(user: orphan.user, session: orphan.session)), at: replica, in: room(orphan.room))
        }
    }

    mutating func markEarlierIncarnationDead(at replica: Int) {
        for mark in nodes[replica].engine.earlierIncarnationMarks() {
            systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0, operation: mark.operation), at: replica, in: room(mark.room))
        }
    }

    /// After a restart the node's views start again from the state it loaded (a UI re-renders
    /// from the snapshot); from then on the change sets must keep them right.
    mutating func rebuildMirrors(of replica: Int) {
        for room in worlds.indices {
            let state = self.state(replica, room)
            var view = nodes[replica].rooms[room]
            view.mirrorOnline = Set(state.users.filter { $0.value.isOnline(deadIncarnations: state.deadIncarnations) }.keys)
            view.mirrorStage = Set(state.stageWinners)
            view.mirrorHands = Set(state.raisedHands)
            view.mirrorStreams = [:]
            view.mirrorRewards = [:]
            view.mirrorUserMuted = [:]
            view.mirrorPresence = [:]
            for (user, record) in state.users {
                view.mirrorStreams[user] = Self.streams(of: user, record, in: state)
                if record.rewardTotal != 0 { view.mirrorRewards[user] = record.rewardTotal }
                if record.chatMuted.value { view.mirrorUserMuted[user] = true }
                let presence = state.presenceState(of: user)
                if !presence.isEmpty { view.mirrorPresence[user] = presence }
            }
            view.mirrorMessages = Set(state.messages.entries.keys)
            view.mirrorRoomMuted = state.chatMuted.value
            view.highestClassState = state.classState.state
            view.highestSetRevisions = [:]
            view.views = ChangeSetViews(from: state)
            nodes[replica].rooms[room] = view
            checkSetRevisions(at: replica, in: room)
        }
    }

    static func streams(of user: UserID, _ record: UserRecord, in state: RoomState) -> [StreamState] {
        let onStage = state.isOnStage(user)
        return [Device.camera, .microphone].map { state.streamRules.state(record, $0, onStage: onStage) }
    }

    /// Every node's tick, as `ClusterNode`'s: a heartbeat to every node it reaches (lossy,
    /// partitioned), then failure detection by the engine's `PeerLiveness`.
    mutating func tick() {
        ticks += 1
        for replica in nodes.indices { syncsAndLeases(at: replica, everyClient: false) }
        for replica in nodes.indices { heartbeat(from: replica) }
        for replica in nodes.indices { probe(at: replica) }
        for replica in nodes.indices { detectFailures(at: replica) }
    }

    func makeProber(_ replica: Int) -> IndirectProber? {
        config.probeHelpers.map { IndirectProber(fanout: $0, everyMillis: config.heartbeatMillis * 2, seed: seed &+ UInt64(replica)) }
    }

    /// As `ClusterNode.probeSilentPeers`: the rounds the engine says are due, each probe
    /// and its answer crossing the lossy, partitioned network; an answer that the target
    /// is alive vouches for it as of when the answering node last heard it.
    mutating func probe(at replica: Int) {
        guard var prober = nodes[replica].prober else { return }
        let now = nowMillis + nodes[replica].skewMillis
        // Every node known other than as an expected origin can be asked (the node has its
        // address); whether the question and its answer arrive is the network's.
        let entries = nodes[replica].peers.entries
        let askable = Set(entries.filter { !$0.value.address.isEmpty }.keys)
        let rounds = prober.due(peers: entries.mapValues(\.liveness), reachable: askable, nowMillis: now, suspectMillis: config.suspectMillis)
        nodes[replica].prober = prober
        for round in rounds {
            for via in (round.direct ? [round.target] : []) + round.helpers {
                report.probesSent += 1
                guard let answer = probeAnswer(from: replica, via: via, about: round.target), answer.alive else { continue }
                if nodes[replica].peers.vouch(round.target, incarnation: answer.incarnation, atMillis: now &- min(answer.agoMillis, now),
                                              unheardLimitMillis: nil, direct: via == round.target) {
                    report.probeVouches += 1
                }
            }
        }
    }

    /// The answer node `via` gives node `asking` about `target` (as `ClusterNode.answerProbe`:
    /// itself, or a node it heard within the suspect period), or nil when the question
    /// or the answer is lost.
    mutating func probeAnswer(from asking: Int, via: ReplicaID, about target: ReplicaID) -> (alive: Bool, incarnation: UInt64, agoMillis: UInt64)? {
        guard let helper = nodes.firstIndex(where: { $0.sequencer.replica == via }),
              connected(nodes[asking].sequencer.replica, helper), !rng.chance(config.dropPercent), !rng.chance(config.dropPercent) else { return nil }
        if via == target { return (true, nodes[helper].incarnation, 0) }
        let hearing = nodes[helper].peers.hearing(of: target, nowMillis: nowMillis + nodes[helper].skewMillis, suspectMillis: config.suspectMillis)
        return (hearing.alive, hearing.incarnation, hearing.agoMillis)
    }

    /// A heartbeat, as the node's: its incarnation, every room's version vector (a complete
    /// list, so each is a reward checkpoint mark), and the nodes it knows; a receiver's
    /// membership table takes it (`PeerTable.heard`) and learns the nodes listed
    /// (`PeerTable.learn`: never as alive, only those with an address).
    mutating func heartbeat(from replica: Int) {
        let sender = nodes[replica].sequencer.replica
        var heartbeat = PeerHeartbeat(node: sender, incarnation: nodes[replica].incarnation, nodeName: Self.nodeName(replica),
                                      address: Self.address(replica), publishAddress: Self.address(replica))
        heartbeat.rooms = worlds.indices.map { (roomID: worlds[$0].id, seen: state(replica, $0).seen) }
        // As the node's: before the earliest reward still being stored (`checkpointMillis`).
        heartbeat.sentAtMillis = nodes[replica].engine.checkpointMillis(nowMillis: nowMillis + nodes[replica].skewMillis)
        let listed = nodes[replica].peers.listed
        for other in nodes.indices where other != replica && connected(sender, other) && !rng.chance(config.dropPercent) {
            let now = nowMillis + nodes[other].skewMillis
            _ = nodes[other].peers.heard(heartbeat, nowMillis: now)
            for peer in listed where peer.node != nodes[other].sequencer.replica {
                _ = nodes[other].peers.learn(peer, nowMillis: now)
            }
        }
    }

    static func nodeName(_ replica: Int) -> String { "node-\(replica + 1)" }
    static func address(_ replica: Int) -> String { "sim://node-\(replica + 1)" }

    /// As `ClusterNode`: the writers the rooms name that the node does not know yet (after a
    /// restart, every one) are waited for by reward folds until heard (`PeerTable.expect`).
    mutating func expectWriters(at replica: Int, in rooms: [String]?) {
        nodes[replica].peers.expect(nodes[replica].engine.writersToHearFrom(in: rooms), nowMillis: nowMillis + nodes[replica].skewMillis)
    }

    /// Nodes silent past the down period are declared down (`replica_down` for the
    /// incarnation heard), as `ClusterNode.declareSilentNodesDown` does; an alive node
    /// declared so refutes once the declaration reaches it.
    mutating func detectFailures(at replica: Int) {
        let now = nowMillis + nodes[replica].skewMillis
        for entry in nodes[replica].peers.sweep(nowMillis: now, suspectMillis: config.suspectMillis, downMillis: config.downMillis) {
            let node = entry.node, incarnation = entry.incarnation
            report.downsDetected += 1
            if let declared = nodes.firstIndex(where: { $0.sequencer.replica == node }), nodes[declared].incarnation == incarnation {
                report.falseDowns += 1
            }
            // In every room it holds, as `ClusterNode.endSessions(of:incarnation:)`.
            for room in worlds.indices {
                systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0,
                                  operation: .replicaDown(replica: node, incarnation: incarnation)), at: replica, in: room)
            }
        }
    }

    /// What a node's presence loop does: refutation, then the folds its engine says are
    /// due (session folds, and reward folds once every node it knows confirmed a
    /// heartbeat), written through the pipeline.
    mutating func housekeeping(at replica: Int, recheckLater: Bool? = nil) {
        refuteAndEndOrphans(at: replica)
        let now = nowMillis + nodes[replica].skewMillis
        for fold in nodes[replica].engine.dueSessionFolds(nowMillis: now, recheckLater: recheckLater ?? rng.chance(50)) {
            report.sessionFolds += 1
            systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0, operation: fold.operation), at: replica, in: room(fold.room))
        }
        // As the node's: every node it knows or expects counts, down or not (`PeerTable.rewardsCompleteBefore`).
        let folding = nodes[replica].engine.roomsWithRewardsToFold
        expectWriters(at: replica, in: folding.map(\.room))
        var completeBefore: [String: UInt64] = [:]
        for (room, seen) in folding {
            completeBefore[room] = nodes[replica].peers.rewardsCompleteBefore(room: room, seen: seen, nowMillis: now,
                                                                             windowMillis: config.policy.rewardWindowMillis,
                                                                             driftMillis: config.policy.maxClockDriftMillis)
        }
        for fold in nodes[replica].engine.dueRewardFolds(nowMillis: now, completeBefore: completeBefore) {
            report.rewardFolds += 1
            let known = nodes[replica].peers.entries.keys.sorted().map { "\($0)" }.joined(separator: ",")
            let skew = nodes[replica].skewMillis
            let before = completeBefore[fold.room].map { Int64(bitPattern: $0 &- 1_700_000_000_000) } ?? -1
            trace(fold.operation.target, "node \(replica + 1) (clock +\(skew) ms) folds rewards in \(fold.room) complete before \(before) ms, knowing [\(known)]")
            systemWrite(Write(author: "node-\(replica + 1)", authorRole: .system, authorCounter: 0, operation: fold.operation), at: replica, in: room(fold.room))
        }
    }

    // MARK: - The end

    /// The heal: full anti-entropy until the replicas agree; then, once the quiet time
    /// and the reward window have passed, every node's folds (heartbeats delivered) and
    /// anti-entropy again, twice, so the lifetime bounds can be checked.
    mutating func healAndConverge() {
        // The writes in flight finish, and none stays in flight from here on.
        settleAll()
        interleaving = false
        partition = nil
        network.removeAll()
        syncUntilEqual()
        // Nodes declared down refute now that the declaration has reached them, before the
        // clock moves on: a refutation restarts the reclaim grace for the incarnations it
        // leaves behind, and the final folds below come after that grace.
        for replica in nodes.indices { refuteAndEndOrphans(at: replica) }
        // Clients go on syncing through the heal (every 300 ms, well within the reclaim
        // grace and the lease): each reclaims or renews now that its node holds its session.
        for replica in nodes.indices { syncsAndLeases(at: replica, everyClient: true) }
        // Vanished clients' leases run out (a leave the store failed is asked for again
        // next round), before the folds below look for sessions that are over.
        for _ in 0..<5 {
            nowMillis += config.policy.sessionTimeoutMillis + 1
            for replica in nodes.indices { syncsAndLeases(at: replica, everyClient: true) }
        }
        network.removeAll()
        syncUntilEqual(allPairs: false)
        let dropPercent = config.dropPercent
        config.dropPercent = 0
        for _ in 0..<2 {
            // Past every clock a node observed too: a node's clock can have been pushed ahead
            // by a peer's (up to the skew between them), and folds wait on stamps.
            let spread = nodes.map(\.skewMillis).max()! - nodes.map(\.skewMillis).min()!
            nowMillis += spread + config.policy.rewardWindowMillis + config.policy.maxClockDriftMillis + config.policy.reclaimGraceMillis
                + max(config.policy.sessionFoldQuietMillis, config.policy.rewardFoldQuietMillis) + 2_000
            // The clients' syncs went on meanwhile (each renews before the node looks);
            // vanished clients' leases ran out. Then heartbeats (none lost now), as the
            // nodes' ticks go on through the heal.
            for replica in nodes.indices { syncsAndLeases(at: replica, everyClient: true) }
            for replica in nodes.indices { heartbeat(from: replica) }
            for replica in nodes.indices { housekeeping(at: replica, recheckLater: true) }
            for replica in nodes.indices { heartbeat(from: replica) }
            for replica in nodes.indices { housekeeping(at: replica, recheckLater: true) }
            network.removeAll()
            syncUntilEqual(allPairs: false)
        }
        config.dropPercent = dropPercent
    }

    /// Rounds of anti-entropy in every room until its replicas agree: in the first room the
    /// first time, every node from every other; else (what is left to spread is the few
    /// writes since, or another room's repairs, which merge as the first room's do) every
    /// node into the first and back out.
    mutating func syncUntilEqual(allPairs everyPair: Bool = true) {
        for room in worlds.indices {
            let allPairs = everyPair && room == 0
            for round in 1...8 {
                report.syncRounds = max(report.syncRounds, round)
                if allPairs {
                    for a in nodes.indices {
                        for b in nodes.indices where a != b { sync(from: a, to: b, in: room) }
                    }
                } else {
                    for other in nodes.indices.dropFirst() { sync(from: other, to: 0, in: room) }
                    for other in nodes.indices.dropFirst() { sync(from: 0, to: other, in: room) }
                }
                if nodes.indices.allSatisfy({ state($0, room) == state(0, room) }) { break }
            }
        }
    }

    mutating func record(_ changes: [MessagingChange], at replica: Int, in room: Int) {
        for change in changes {
            switch change {
            case let .messageAdded(message):
                if nodes[replica].rooms[room].mirrorMessages.contains(message.key) {
                    report.violations.append("replica \(replica + 1), \(worlds[room].id): message \(message.key) delivered twice while in the history")
                } else if nodes[replica].rooms[room].evictedHere.contains(message.key) {
                    report.messagesReadded += 1
                }
                nodes[replica].rooms[room].mirrorMessages.insert(message.key)
            case let .messagesRemoved(keys, _):
                for key in keys {
                    if nodes[replica].rooms[room].mirrorMessages.remove(key) == nil {
                        report.violations.append("replica \(replica + 1), \(worlds[room].id): removal of \(key), which was never reported added")
                    }
                    nodes[replica].rooms[room].evictedHere.insert(key)
                }
            case let .presenceStateUpdated(user, _):
                nodes[replica].rooms[room].mirrorPresence[user] = state(replica, room).presenceState(of: user)
            case let .chatMuteUpdated(user, muted):
                if let user { nodes[replica].rooms[room].mirrorUserMuted[user] = muted } else { nodes[replica].rooms[room].mirrorRoomMuted = muted }
            case let .propertyConflict(conflict):
                report.propertyConflicts += 1
                nodes[replica].rooms[room].reportedLost.formUnion(conflict.lostDots)
            case .historyLimitUpdated, .userTimedOut:
                break
            }
        }
    }

    mutating func record(_ changes: [RoomChange], at replica: Int, in room: Int) {
        let state = self.state(replica, room)
        for change in changes {
            nodes[replica].rooms[room].views.record(change, in: state)
            switch change {
            case let .userJoined(user): nodes[replica].rooms[room].mirrorOnline.insert(user)
            case let .userLeft(user): nodes[replica].rooms[room].mirrorOnline.remove(user)
            case let .coHostsAdded(users): nodes[replica].rooms[room].mirrorStage.formUnion(users)
            case let .coHostsRemoved(users): nodes[replica].rooms[room].mirrorStage.subtract(users)
            case let .handWaved(user): nodes[replica].rooms[room].mirrorHands.insert(user)
            case let .handLowered(user): nodes[replica].rooms[room].mirrorHands.remove(user)
            case let .streamUpdated(user, device, state):
                var states = nodes[replica].rooms[room].mirrorStreams[user] ?? [.inoperable, .inoperable]
                states[Int(device.rawValue)] = state
                nodes[replica].rooms[room].mirrorStreams[user] = states
            case let .userRewarded(user, _, total): nodes[replica].rooms[room].mirrorRewards[user] = total
            case let .classStateUpdated(state):
                if state < nodes[replica].rooms[room].highestClassState {
                    report.violations.append("replica \(replica + 1), \(worlds[room].id): class state moved back from \(nodes[replica].rooms[room].highestClassState) to \(state)")
                }
                nodes[replica].rooms[room].highestClassState = state
            default: break
            }
        }
    }

    mutating func check() {
        for room in worlds.indices {
            let reference = state(0, room)
            let id = worlds[room].id
            for index in nodes.indices where state(index, room) != reference {
                report.violations.append("\(id): replica \(index + 1) differs from replica 1 after \(report.syncRounds) sync rounds")
            }
            for index in nodes.indices where state(index, room).snapshot() != reference.snapshot() {
                report.violations.append("\(id): replica \(index + 1)'s snapshot differs from replica 1's")
            }
            for index in nodes.indices {
                for difference in nodes[index].rooms[room].views.differences(from: state(index, room)) {
                    report.violations.append("replica \(index + 1), \(id): \(difference)")
                }
                checkInvariants(index, room, name: "replica \(index + 1), \(id)")
                checkMessaging(index, room, name: "replica \(index + 1), \(id)")
            }
            checkHistory(reference, room)
            checkLifetime(reference, room)
            checkLocks(room)
            checkBreakout(room)
            checkPresence(reference, room)
            checkAcknowledgedWrites(room)
        }
        if report.ownSequencesBehind > 0 {
            report.violations.append("\(report.ownSequencesBehind) patches held a node's own writes above its numbering (a restart reused sequence numbers?)")
        }
        checkClocks()
        report.finalRoster = state(0, 0).roster()
    }

    /// Per room, one origin's deltas, as every node took them (its own commits and what it
    /// was sent), have strictly rising clock readings in the order of their numbers: the
    /// rooms share the node's clock, and a write committed after another room's (in flight
    /// meanwhile) must not take it back.
    mutating func checkClocks() {
        for replica in nodes.indices {
            for room in worlds.indices {
                let clocks = nodes[replica].rooms[room].clocks
                for origin in clocks.keys.sorted() {
                    let readings = clocks[origin]!.sorted { $0.key < $1.key }
                    report.clockReadingsChecked += readings.count
                    for (earlier, later) in zip(readings, readings.dropFirst()) where !(earlier.value < later.value) {
                        report.violations.append("replica \(replica + 1), \(worlds[room].id): origin \(origin)'s delta \(later.key) has clock \(later.value), not above delta \(earlier.key)'s \(earlier.value)")
                        break
                    }
                }
            }
        }
    }

    /// Every user whose join was acknowledged, and who has not left since, is online on
    /// every replica at the end, unless kicked or banned since: through crashes (a
    /// restart joins its users again) and through downs declared while its node was
    /// alive (the node refutes; without that, the user would stay offline everywhere).
    mutating func checkPresence(_ state: RoomState, _ room: Int) {
        let id = worlds[room].id
        for actor in worlds[room].actors {
            if actor.vanished {
                // Gone without a leave: its lease (or its copies', or a restart) ended every session.
                report.vanishedChecked += 1
                if let record = state.users[actor.id], record.isOnline(deadIncarnations: state.deadIncarnations) {
                    let sessions = record.sessions.map { "\($0.id)#\($0.incarnation)\($0.ended == nil ? "" : " ended")" }
                    report.violations.append("\(id): \(actor.id) vanished (no sync, no leave) but is online: sessions \(sessions), dead \(state.deadIncarnations)")
                }
                continue
            }
            // The acknowledged session, or (once it is folded) a copy a reclaim or refutation made of it.
            guard let session = actor.acknowledgedSession, let record = state.users[actor.id], !record.isBanned,
                  let started = record.sessions.filter({ SessionIDs.base($0.id) == session }).map(\.started).min(),
                  record.kicked < started else { continue }
            report.presenceChecked += 1
            if !record.isOnline(deadIncarnations: state.deadIncarnations) {
                let sessions = record.sessions.map { "\($0.id)#\($0.incarnation)\($0.ended == nil ? "" : " ended")" }
                report.violations.append("\(id): \(actor.id) joined (\(session)) and never left, but is offline: sessions \(sessions), dead \(state.deadIncarnations)")
            }
        }
    }

    /// After the final folds every node folded every session it started that is over (the
    /// quiet time passed): a user keeps only live sessions, whatever the schedule did.
    mutating func checkLifetime(_ state: RoomState, _ room: Int) {
        for (user, record) in state.users {
            for index in nodes.indices {
                let origin = nodes[index].sequencer.replica
                if state.hasSessionsToFold(for: user, origin: origin, deadBelowIncarnation: nodes[index].incarnation) {
                    let over = record.sessions.filter { $0.started.clock.replica == origin }.count
                    let sessions = record.sessions.filter { $0.started.clock.replica == origin }
                        .map { "\($0.id)@\($0.host)#\($0.incarnation)\($0.ended == nil ? " open" : " ended")" }
                    report.violations.append("\(worlds[room].id): \(user) still has sessions over that node \(index + 1) started (\(over) records of it) after the final folds: \(sessions); node \(index + 1) at incarnation \(nodes[index].incarnation), dead \(state.deadIncarnations), floors \(record.sessionFloors)")
                }
            }
            report.sessionRecordsLeft = max(report.sessionRecordsLeft, record.sessions.count)
            report.rewardRecordsLeft = max(report.rewardRecordsLeft, record.rewards.count)
        }
    }

    mutating func checkBreakout(_ room: Int) {
        for index in nodes.indices {
            let state = self.state(index, room)
            if state.breakoutGroups.values.contains(where: { !(state.breakoutEnded < $0.stamp) })
                || state.breakoutAssignments.values.contains(where: { !(state.breakoutEnded < $0.stamp) }) {
                report.violations.append("replica \(index + 1), \(worlds[room].id): a breakout write older than the end is still there")
            }
            for group in state.breakout where group.members.contains(where: { state.breakoutGroup(of: $0) != group.id }) {
                report.violations.append("replica \(index + 1), \(worlds[room].id): group \(group.id) lists a member that is elsewhere")
            }
        }
        report.breakoutGroups += state(0, room).breakout.count
    }

    /// Every grant had its own fence; no replica ends below the largest grant, and the
    /// guarded key holds a write of at least the largest accepted guarded fence.
    mutating func checkLocks(_ room: Int) {
        let world = worlds[room]
        for (fence, holders) in world.grantedFences where holders.count > 1 {
            report.violations.append("\(world.id): lock fence \(fence) was granted to \(holders.sorted().joined(separator: " and "))")
        }
        let largestGrant = world.grantedFences.keys.max() ?? 0
        for index in nodes.indices {
            let state = self.state(index, room)
            let highest = state.locks[Self.lockName]?.highestFence ?? 0
            if highest < largestGrant { report.violations.append("replica \(index + 1), \(world.id): lock fence \(highest), below the granted \(largestGrant)") }
            let fence = state.properties[Self.guardedKey]?.value.fence?.fence ?? 0
            if fence < world.largestGuardedFence {
                report.violations.append("replica \(index + 1), \(world.id): \(Self.guardedKey) holds a write of fence \(fence), below the accepted \(world.largestGuardedFence)")
            }
        }
    }

    /// Every accepted message is on every replica unless it is at or below the floor,
    /// with the earliest stamp of its copies above the floor; nothing else is there;
    /// every overwritten property write was reported lost somewhere.
    mutating func checkHistory(_ state: RoomState, _ room: Int) {
        let world = worlds[room]
        let floor = state.messages.floor
        for (key, stamps) in world.acceptedMessages {
            if let latest = stamps.max(), floor < latest {
                guard let message = state.messages[key] else {
                    report.violations.append("\(world.id): message \(key) was accepted above the floor but is missing")
                    continue
                }
                if message.stamp != latest { report.violations.append("\(world.id): message \(key) has stamp \(message.stamp), its latest copy \(latest)") }
            } else if state.messages[key] != nil {
                report.violations.append("\(world.id): message \(key) is below the floor \(floor) but still present")
            }
        }
        for key in state.messages.entries.keys where world.acceptedMessages[key] == nil {
            report.violations.append("\(world.id): message \(key) is in the history but was never accepted")
        }
        if state.messages.count > Int(state.effectiveHistoryLimit) {
            report.violations.append("\(world.id): \(state.messages.count) messages kept, limit \(state.effectiveHistoryLimit)")
        }
        report.messagesKept += state.messages.count
        let reported = nodes.reduce(into: Set<Dot>()) { $0.formUnion($1.rooms[room].reportedLost) }
        for write in world.acceptedPropertyWrites {
            let fate = state.propertyWrite(write.dot, revision: write.revision, scope: write.scope, key: write.key)
            if fate == false {
                report.propertyWritesLost += 1
                if !reported.contains(write.dot) {
                    report.violations.append("\(world.id): \(write.scope) \(write.key): write \(write.dot) (revision \(write.revision)) was overwritten and nobody was told")
                }
            }
        }
    }

    mutating func checkMessaging(_ replica: Int, _ room: Int, name: String) {
        let state = self.state(replica, room)
        let view = nodes[replica].rooms[room]
        if view.mirrorMessages != Set(state.messages.entries.keys) {
            report.violations.append("\(name): the change sets say \(view.mirrorMessages.count) messages, the history has \(state.messages.count)")
        }
        for (user, _) in state.users {
            let shown = state.presenceState(of: user)
            if shown != (view.mirrorPresence[user] ?? [:]) {
                report.violations.append("\(name): \(user) shows presence \(shown.keys.sorted()) but the change sets said \((view.mirrorPresence[user] ?? [:]).keys.sorted())")
            }
            if shown.count > Messaging.maxPresenceKeys {
                report.violations.append("\(name): \(user) shows \(shown.count) presence keys")
            }
            if (state.users[user]?.chatMuted.value ?? false) != (view.mirrorUserMuted[user] ?? false) {
                report.violations.append("\(name): \(user) chat muted differs from the change sets")
            }
        }
        if state.chatMuted.value != view.mirrorRoomMuted {
            report.violations.append("\(name): room chat muted \(state.chatMuted.value), change sets said \(view.mirrorRoomMuted)")
        }
    }

    /// The stage's or the hands' winners as the rules define them, from the registers alone
    /// (not the incremental queues the state keeps): candidates raised after any kick and not
    /// banned, in order of the stamp that raised them, then user id; the first `limit` win.
    /// Hands only: raised while hand raising was on, since it was last switched on (`gate`).
    static func modelWinners(_ state: RoomState, limit: Int, gate: RoomGate = RoomGate(), _ register: (UserRecord) -> Register<Bool>) -> [UserID] {
        let candidates = state.users.compactMap { user, record -> (Stamp, UserID)? in
            let raised = register(record)
            return raised.value && record.kicked < raised.stamp && !record.isBanned && gate.admits(raised.stamp) ? (raised.stamp, user) : nil
        }
        return candidates.sorted { $0 < $1 }.prefix(max(limit, 0)).map(\.1)
    }

    mutating func checkInvariants(_ replica: Int, _ room: Int, name: String) {
        let state = self.state(replica, room)
        let view = nodes[replica].rooms[room]
        let expectedRewards = worlds[room].expectedRewards
        let stage = state.stageWinners
        if state.type.value != .oneToOne {
            let model = Self.modelWinners(state, limit: state.stageLimitValue) { $0.stage }
            if stage != model { report.violations.append("\(name): stage winners \(stage) but the rules give \(model)") }
        }
        let hands = Self.modelWinners(state, limit: Int(state.handLimit.value), gate: state.handRaising) { $0.hand }
        if state.raisedHands != hands { report.violations.append("\(name): hand winners \(state.raisedHands) but the rules give \(hands)") }
        if stage.count > state.stageLimitValue {
            report.violations.append("\(name): \(stage.count) on stage, limit \(state.stageLimitValue)")
        }
        if state.raisedHands.count > Int(state.handLimit.value) {
            report.violations.append("\(name): \(state.raisedHands.count) hands up, limit \(state.handLimit.value)")
        }
        if state.classState.state < worlds[room].highestClassStateWritten {
            report.violations.append("\(name): class state \(state.classState.state) is behind \(worlds[room].highestClassStateWritten)")
        }
        // The running total admission reads must be what a full count gives.
        if state.propertyBytes != state.recountPropertyBytes() {
            report.violations.append("\(name): property bytes kept as \(state.propertyBytes), but \(state.recountPropertyBytes()) counted")
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
            if online != view.mirrorOnline.contains(user) {
                report.violations.append("\(name): \(user) online=\(online) but the change set said \(!online)")
            }
            let streams = Self.streams(of: user, record, in: state)
            if streams != (view.mirrorStreams[user] ?? [.inoperable, .inoperable]) {
                report.violations.append("\(name): \(user) streams \(streams) but the change set said \(view.mirrorStreams[user] ?? [])")
            }
            if record.rewardTotal != (view.mirrorRewards[user] ?? 0) {
                report.violations.append("\(name): \(user) reward change set says \(view.mirrorRewards[user] ?? 0), state \(record.rewardTotal)")
            }
        }
        if Set(stage) != view.mirrorStage {
            report.violations.append("\(name): stage \(stage.sorted()) but the change set said \(view.mirrorStage.sorted())")
        }
        if Set(state.raisedHands) != view.mirrorHands {
            report.violations.append("\(name): hands \(state.raisedHands.sorted()) but the change set said \(view.mirrorHands.sorted())")
        }
    }
}

/// A snapshot of a room copied under the node's lock, with the log position and the
/// engine's miss mark read with it, not stored yet.
struct Compaction {
    var copy: RoomState
    var logMark: Int
    var mark: NodeEngine.SnapshotMark
    /// The engine's clock with the copy: at least every reading the trimmed deltas carry.
    var clock: UInt64
}

/// What a node's store holds, as `NodeStore` keeps it: a snapshot of the room, and the
/// log of what was appended since (deltas and patches), replayed over it in order on load.
struct StoreModel {
    enum Entry {
        case delta(Delta)
        case patch(RoomState)
    }

    var snapshot: RoomState
    /// The log position the snapshot covers.
    var snapshotCovers = 0
    /// The highest clock a compaction kept with its trim (`NodeStore`'s `clock` row).
    var compactedClock: UInt64 = 0
    var log: [(position: Int, entry: Entry)] = []
    var lastPosition = 0

    init(snapshot: RoomState) { self.snapshot = snapshot }

    mutating func append(_ entry: Entry) {
        lastPosition += 1
        log.append((lastPosition, entry))
    }

    /// `NodeStore.compact`: the snapshot (as the node stores it, `snapshot()`) replaces the
    /// log up to `mark`; one covering less than the stored one changes nothing.
    mutating func compact(_ copy: RoomState, upTo mark: Int, clock: UInt64) -> Bool {
        guard mark >= snapshotCovers else { return false }
        compactedClock = max(compactedClock, clock)
        // The copy itself, not `copy.snapshot()` as the node stores: the simulation's rooms
        // start with limits set out of band, stamped at the origin, which a snapshot leaves
        // out (a real room's limits are written by deltas).
        snapshot = copy
        snapshotCovers = mark
        log.removeAll { $0.position <= mark }
        return true
    }

    /// The clock a restart restores (`NodeStore.loadRooms`): the compactions' and the log's.
    var clock: UInt64 {
        log.reduce(compactedClock) { highest, item in
            if case let .delta(delta) = item.entry { return max(highest, delta.clock.packed) }
            return highest
        }
    }

    /// `NodeStore.loadRooms`: the snapshot, then the log in order.
    func load() -> RoomState {
        var state = snapshot
        for (_, entry) in log {
            switch entry {
            case let .delta(delta): _ = state.apply(delta)
            case let .patch(patch): state.merge(patch)
            }
        }
        return state
    }
}

