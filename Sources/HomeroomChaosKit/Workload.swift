@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport
import HomeroomHarness

/// A plain OS thread (blocking client calls stay off the Swift concurrency pool).
final class Worker: Sendable {
    private let done = Flag()
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    init(_ body: @escaping @Sendable () -> Void) {
        let box = Box { [done] in
            body()
            done.set()
        }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(box).toOpaque()
        let result = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
            return nil
        }, context)
        if result != 0 {
            Unmanaged<Box>.fromOpaque(context).release()
            fputs("homeroom-chaos: cannot start a thread: \(String(cString: strerror(result)))\n", stderr)
            exit(2)
        }
        pthread_detach(thread)
    }

    var finished: Bool { done.isSet }

    /// Waits until the thread ends, at most `millis`; false when it is still running.
    func wait(millis: UInt64) -> Bool {
        let deadline = Clock.now + millis
        while !finished {
            if Clock.now >= deadline { return false }
            usleep(10_000)
        }
        return true
    }
}

/// The outcome of one write, as a client saw it.
enum Outcome: Sendable, Equatable {
    /// Merged and stored at a node before the acknowledgement.
    case acknowledged(Dot)
    /// Refused with a code: never applied (unless an earlier, timed-out try was).
    case refused(String)
    /// No answer: it may or may not have been applied.
    case indeterminate(String)
}

/// One write of the history (Jepsen's invoke and complete, in one record).
struct WriteRecord: Sendable {
    var client: String
    var operation: String
    var invokedAt: UInt64
    var completedAt: UInt64
    var outcome: Outcome
    /// For rewards: author, target and amount (the amount makes it identifiable).
    var reward: RewardMark?
    /// For property writes: the unique key and its value; user nil for a room property.
    var property: PropertyMark?
    /// For lock acquisitions (the fence granted) and guarded writes (the fence presented).
    var lock: LockMark?
    /// For writes of one register (stage, devices, privileges, board, hand, name, stage and hand limits): which and what.
    var register: RegisterMark?
    /// For room and peer messages: the key the sender gave it (set once acknowledged).
    var message: MessageMark?
    /// For presence writes: the value set (the workload's one key).
    var presence: String?
    /// For compare-and-set writes: the revision expected, and the node's answer when acknowledged.
    var compareAndSet: CompareAndSetMark?
    /// For kicks: whom, and what the kicker's replica showed of them.
    var kick: KickMark?
}

/// A kick of the workload: the user kicked, and whether the kicker's replica showed
/// them on stage or with a hand up when it kicked (what the kick takes away).
struct KickMark: Sendable, Hashable {
    var user: UserID
    var onStage = false
    var handUp = false
}

/// A compare-and-set write of the workload: the value, the revision it expected the key
/// at, and (acknowledged) the revision and dot it made.
struct CompareAndSetMark: Sendable {
    var value: String
    var expected: UInt64
    var result: PropertyWriteResult?
}

/// A message of the workload: its key and who may receive it (nil: the whole room).
struct MessageMark: Sendable, Hashable {
    var sender: UserID
    var recipient: UserID?
    var counter: UInt64
}

/// One register write: the register (a user's field, or the room's) and the value written.
struct RegisterMark: Sendable, Hashable {
    var user: UserID?
    var field: String
    var value: String

    init?(_ operation: Operation) {
        switch operation {
        case let .setStage(user, on): (self.user, field, value) = (user, "stage", "\(on)")
        case let .setBoard(user, granted): (self.user, field, value) = (user, "board", "\(granted)")
        case let .setHand(user, raised): (self.user, field, value) = (user, "hand", "\(raised)")
        case let .setDevice(user, device, on): (self.user, field, value) = (user, "\(device)-device", "\(on)")
        case let .setPrivilege(user, device, allowed): (self.user, field, value) = (user, "\(device)-privilege", "\(allowed)")
        case let .setName(user, name): (self.user, field, value) = (user, "name", name)
        case let .setStageLimit(limit): (self.user, field, value) = (nil, "stage-limit", "\(limit)")
        case let .setHandLimit(limit): (self.user, field, value) = (nil, "hand-limit", "\(limit)")
        default: return nil
        }
    }
}

struct LockMark: Sendable, Hashable {
    enum Kind: Sendable, Hashable { case acquire, guardedWrite(value: String), release }
    var kind: Kind
    var fence: UInt64
}

struct RewardMark: Sendable, Hashable {
    var author: UserID
    var target: UserID
    var amount: Int32
}

struct PropertyMark: Sendable, Hashable {
    var user: UserID?
    var key: String
    var value: String
}

/// Every write of the run, in completion order.
final class History: Sendable {
    private let records = Mutex<[WriteRecord]>([])
    func append(_ record: WriteRecord) { records.withLock { $0.append(record) } }
    var all: [WriteRecord] { records.withLock { $0 } }
    var count: Int { records.withLock { $0.count } }
    /// Records from `start` on, for the sampler's incremental reads.
    func since(_ start: Int) -> [WriteRecord] { records.withLock { Array($0[min(start, $0.count)...]) } }

    /// Sends `operation` through `writer`'s client and records what came of it; returns
    /// the write's dot when it was acknowledged (nil: refused, or its fate unknown).
    @discardableResult
    func recordWrite(by writer: Writer, _ operation: Operation, property: PropertyMark? = nil) -> Dot? {
        guard let client = writer.current else { return nil }
        let invoked = Clock.now
        let outcome: Outcome
        do {
            outcome = .acknowledged(try client.write(operation))
        } catch {
            if case let .refused(code, _) = error { outcome = .refused(code) } else { outcome = .indeterminate(error.code) }
        }
        append(WriteRecord(client: writer.user, operation: operation.name, invokedAt: invoked, completedAt: Clock.now,
                           outcome: outcome, reward: nil, property: property, register: RegisterMark(operation)))
        if case let .acknowledged(dot) = outcome { return dot }
        return nil
    }
}

/// A user of the room writing through a `RoomClient` that it re-creates when the
/// client's link ends (`aborted`: refused for good); a client whose nodes all failed
/// keeps trying by itself (reconnecting, then suspended), on a brisk schedule here.
final class Writer: Sendable {
    let user: UserID
    let role: Role
    let endpoints: [NodeEndpoint]
    let seed: UInt64
    private let client = Mutex<RoomClient?>(nil)
    private let stopFlag = Atomic<Bool>(false)
    /// Set when this user was banned: it leaves the equality check (its node no longer serves it).
    let banned = Atomic<Bool>(false)
    let recreated = Atomic<Int>(0)
    /// New clients made because this user was kicked (as a person would join again).
    let rejoins = Atomic<Int>(0)
    /// New clients made to get back to the first endpoint after a failover or a redirect moved it.
    let returnedHome = Atomic<Int>(0)
    /// Dots of this writer's compare-and-set writes its clients reported lost
    /// (`.propertyConflict`): the loser of a split is told.
    let compareAndSetLossesTold = Mutex<Set<Dot>>([])
    /// The fence of the lock grant this writer last got (0: none), for its guarded writes.
    let heldFence = Atomic<UInt64>(0)
    /// What each of this writer's clients delivered (MessageCheck.swift).
    let inboxes = Mutex<[ClientInbox]>([])
    private let worker = Mutex<Worker?>(nil)

    init(user: UserID, role: Role, endpoints: [NodeEndpoint], seed: UInt64) {
        self.user = user
        self.role = role
        self.endpoints = endpoints
        self.seed = seed
    }

    static func options(syncMillis: UInt64, room: String, user: UserID, role: Role) -> RoomClient.Options {
        var options = RoomClient.Options()
        options.token = ClosedRoom.token(room: room, user: user, role: role)
        options.syncIntervalMillis = syncMillis
        options.requestTimeoutMillis = 1_000
        // Nodes come back within seconds in a chaos run: a brisk schedule, not Signaling's 2-16 s.
        options.reconnect = ReconnectSchedule.Options(backoffMillis: [200, 400, 800, 1_600], suspendedIntervalMillis: 2_000)
        return options
    }

    var current: RoomClient? { client.withLock { $0 } }

    func connect(room: String, logger: Logger) throws(ClientError) {
        let fresh = RoomClient(room: room, user: user, role: role, name: user, endpoints: endpoints,
                               options: Self.options(syncMillis: 300, room: room, user: user, role: role), logger: logger)
        // Listening before the join: every delivery of this client is recorded.
        let instance = inboxes.withLock { inboxes -> Int in
            inboxes.append(ClientInbox(writer: user, instance: inboxes.count))
            return inboxes.count - 1
        }
        fresh.onMessage { [weak self] deliveries in
            let marks = deliveries.map { DeliveryMark($0) }
            self?.inboxes.withLock { $0[instance].deliveries += marks }
        }
        fresh.onMessagingChange { [weak self] changes in
            var lost: [Dot] = []
            for case let .propertyConflict(conflict) in changes where conflict.scope == .room && conflict.key == WorkloadPlan.compareAndSetKey {
                lost += conflict.lostDots
            }
            if !lost.isEmpty { self?.compareAndSetLossesTold.withLock { $0.formUnion(lost) } }
        }
        try fresh.connect()
        let joinedAt = Clock.now
        inboxes.withLock { $0[instance].joinedAt = joinedAt }
        client.withLock { $0 = fresh }
    }

    func start(room: String, logger: Logger, history: History, plan: WorkloadPlan) {
        let thread = Worker { [self] in self.loop(room: room, logger: logger, history: history, plan: plan) }
        worker.withLock { $0 = thread }
    }

    func stop() { stopFlag.store(true, ordering: .releasing) }
    var stopping: Bool { stopFlag.load(ordering: .acquiring) }

    func wait(millis: UInt64) -> Bool { worker.withLock { $0 }?.wait(millis: millis) ?? true }

    /// Whether this writer's loop has ended (or never ran): its client is then free for the harness.
    var loopEnded: Bool { worker.withLock { $0 }?.finished ?? true }

    /// Whether this user's replica shows it kicked out: a kick and no open session begun
    /// after it (docs/PROTOCOL.md, "Deriving the roster"). Its writes are still taken, but
    /// it is offline until it joins again.
    var isKickedOut: Bool {
        guard let record = current?.replica.users[user], record.kicked != .origin else { return false }
        return !record.sessions.contains { $0.ended == nil && record.kicked < $0.started }
    }

    /// A kicked user joins again, as a person would (a kick is "leave now", docs/SECURITY.md):
    /// the old client leaves, a new one joins with a new session. True when it rejoined.
    @discardableResult
    func rejoinIfKickedOut(room: String, logger: Logger) -> Bool {
        guard !banned.load(ordering: .acquiring), isKickedOut, let old = current else { return false }
        old.close()
        do {
            try connect(room: room, logger: logger)
        } catch {
            // The closed client reads as aborted: the loop's reconnect path tries again.
            if case .refused(code: "banned", _) = error { banned.store(true, ordering: .releasing) }
            return false
        }
        rejoins.add(1, ordering: .relaxed)
        return true
    }

    /// A client attached elsewhere than this writer's first endpoint (a failover, a drain's
    /// or a join's redirect moved it) is replaced by one that joins there again, if it can.
    /// True when a new client joined.
    @discardableResult
    func returnHomeIfMoved(room: String, logger: Logger) -> Bool {
        guard let old = current, old.connectionState == .connected, let home = endpoints.first,
              let attached = old.linkStatus.node, attached != home.address else { return false }
        old.close()
        do {
            try connect(room: room, logger: logger)
        } catch {
            return false
        }
        returnedHome.add(1, ordering: .relaxed)
        return true
    }

    private func loop(room: String, logger: Logger, history: History, plan: WorkloadPlan) {
        var rng = SplitMix64(seed: seed)
        var sequence = 0
        var lastHomeCheck = Clock.now
        while !stopping {
            Clock.sleep(millis: plan.pauseMillis(for: self, rng: &rng))
            if stopping { break }
            if rejoinIfKickedOut(room: room, logger: logger) { continue }
            if let every = plan.returnHomeMillis(for: self), Clock.now - lastHomeCheck >= every {
                lastHomeCheck = Clock.now
                if returnHomeIfMoved(room: room, logger: logger) { continue }
            }
            guard let current else { break }
            if current.connectionState == .aborted {
                if banned.load(ordering: .acquiring) { break }
                // Refused for good (a token, not a ban): start over with a new client. Every
                // node failing is not the end: the client keeps trying (reconnecting, suspended).
                do {
                    try connect(room: room, logger: logger)
                    recreated.add(1, ordering: .relaxed)
                } catch {
                    if case .refused(code: "banned", _) = error { banned.store(true, ordering: .releasing); break }
                    Clock.sleep(millis: 500)
                }
                continue
            }
            sequence += 1
            let (operation, reward, property) = plan.nextOperation(for: self, sequence: sequence, rng: &rng)
            let invoked = Clock.now
            let outcome: Outcome
            var lock: LockMark?
            var message: MessageMark?
            var presence: String?
            var compareAndSet: CompareAndSetMark?
            var kick: KickMark?
            if case let .kick(target) = operation {
                let replica = current.replica
                kick = KickMark(user: target, onStage: replica.stageWinners.contains(target), handUp: replica.raisedHands.contains(target))
            }
            do {
                switch operation {
                case let .setPresenceState(_, _, items):
                    let value = String(decoding: items.first?.value ?? [], as: UTF8.self)
                    presence = value
                    let dot = try current.setPresenceState([WorkloadPlan.presenceKey: Array(value.utf8)])
                    outcome = dot.map { .acknowledged($0) } ?? .indeterminate("duplicate-without-dot")
                case let .setRoomProperty(key, value, cause, revision) where key == WorkloadPlan.compareAndSetKey:
                    let expected = revision.condition ?? 0
                    compareAndSet = CompareAndSetMark(value: String(decoding: value ?? [], as: UTF8.self), expected: expected)
                    let result = try current.setRoomProperty(key, value: value, cause: cause, ifRevision: expected)
                    compareAndSet?.result = result
                    outcome = .acknowledged(result.dot)
                case let .sendMessage(type, payload, _), let .sendPeerMessage(_, type, payload, _):
                    var recipient: UserID?
                    if case let .sendPeerMessage(to, _, _, _) = operation { recipient = to }
                    let receipt = try current.sendReceipted(to: recipient, type: type, payload)
                    message = MessageMark(sender: user, recipient: recipient, counter: receipt.key.counter)
                    // A retry the node already had may come back without its dot: sent, not traceable by dot.
                    outcome = receipt.dot.map { .acknowledged($0) } ?? .indeterminate("duplicate-without-dot")
                case let .acquireLock(name, ttl, _):
                    let grant = try current.acquireLock(name, ttlSeconds: ttl)
                    heldFence.store(grant.fence, ordering: .relaxed)
                    lock = LockMark(kind: .acquire, fence: grant.fence)
                    outcome = .acknowledged(grant.dot)
                default:
                    if case let .setRoomProperty(_, value, _, revision) = operation, let fence = revision.fence {
                        lock = LockMark(kind: .guardedWrite(value: String(decoding: value ?? [], as: UTF8.self)), fence: fence.fence)
                    } else if case .releaseLock = operation {
                        lock = LockMark(kind: .release, fence: heldFence.load(ordering: .relaxed))
                    }
                    let dot = try current.write(operation)
                    outcome = .acknowledged(dot)
                }
            } catch {
                switch error {
                case let .refused(code, _): outcome = .refused(code)
                default: outcome = .indeterminate(error.code)
                }
            }
            // A grant that ended (released, revoked, lapsed, lost to a larger fence) is not tried again.
            switch (operation, outcome) {
            case (.releaseLock, .acknowledged), (_, .refused("lock-not-held")), (_, .refused("fence-stale")):
                heldFence.store(0, ordering: .relaxed)
            default: break
            }
            history.append(WriteRecord(client: user, operation: operation.name, invokedAt: invoked, completedAt: Clock.now,
                                       outcome: outcome, reward: reward, property: property, lock: lock,
                                       register: RegisterMark(operation), message: message, presence: presence,
                                       compareAndSet: compareAndSet, kick: kick))
            if case .refused("banned") = outcome {
                banned.store(true, ordering: .releasing)
                break
            }
        }
    }
}

/// What the writers write: teachers change the stage, privileges, whiteboard, limits,
/// reward and kick students and set room properties; students flip their devices and
/// hands and set their own properties; racers (assistants) race on one compare-and-set
/// key. Rewards and properties are unique, so each acknowledged one can be found (or
/// found missing) in the final state.
final class WorkloadPlan: Sendable {
    let students: [UserID]
    let writesPerSecond: Double
    private let counters = Mutex<[UserID: Int]>([:])

    /// The lock the teachers share, and the room property it guards.
    static let lockName = "chaos-lock"
    static let guardedKey = "guarded"
    /// The room property the teachers compare-and-set, and the students' presence key.
    static let compareAndSetKey = "cas"
    static let presenceKey = "mood"

    init(students: [UserID], writesPerSecond: Double) {
        self.students = students
        self.writesPerSecond = writesPerSecond
    }

    /// The n-th reward of one author: target and amount cycle so that (author, target,
    /// amount) names it uniquely for students x 1,000 rewards.
    func rewardMark(author: UserID, index: Int) -> RewardMark {
        let target = students[index % students.count]
        let amount = Int32(1 + (index / students.count) % 1000)
        return RewardMark(author: author, target: target, amount: amount)
    }

    /// How long a writer waits before its next write: a racer until the next round of the
    /// race (every racer wakes at the same instant), anyone else about 1/rate, jittered.
    func pauseMillis(for writer: Writer, rng: inout SplitMix64) -> UInt64 {
        if writer.role == CompareAndSetRace.role { return CompareAndSetRace.millisToNextRound(now: Clock.now) }
        return UInt64(max(1, 1000.0 / writesPerSecond * Double.random(in: 0.5...1.5, using: &rng)))
    }

    /// How often a writer goes back to its first node when something moved it (nil: never):
    /// racers, so that they stay spread over the room's owners and keep racing across nodes.
    func returnHomeMillis(for writer: Writer) -> UInt64? {
        writer.role == CompareAndSetRace.role ? CompareAndSetRace.returnHomeMillis : nil
    }

    /// Whom a teacher kicks: a student its replica shows on stage or with a hand up when
    /// there is one (so kicks take someone off the stage and lower hands), else anyone.
    func kickTarget(seenBy writer: Writer, rng: inout SplitMix64) -> UserID {
        let replica = writer.current?.replica
        let showing = Set((replica?.stageWinners ?? []) + (replica?.raisedHands ?? []))
        let visible = students.filter { showing.contains($0) }
        return (visible.isEmpty ? students : visible).randomElement(using: &rng)!
    }

    func nextOperation(for writer: Writer, sequence: Int, rng: inout SplitMix64) -> (Operation, RewardMark?, PropertyMark?) {
        if writer.role == CompareAndSetRace.role {
            let expected = writer.current?.propertyRevision(.room, key: Self.compareAndSetKey) ?? 0
            return (CompareAndSetRace.operation(racer: writer.user, sequence: sequence, expected: expected), nil, nil)
        }
        let roll = Int.random(in: 0..<100, using: &rng)
        if writer.role == .teacher {
            let student = students.randomElement(using: &rng)!
            switch roll {
            case 0..<24: return (.setStage(user: student, on: Bool.random(using: &rng)), nil, nil)
            case 24..<41:
                let device: Device = Bool.random(using: &rng) ? .camera : .microphone
                return (.setPrivilege(user: student, device: device, allowed: Bool.random(using: &rng)), nil, nil)
            case 41..<42:
                // Now and then a student is kicked out; its client joins again (Writer.rejoinIfKickedOut).
                return (.kick(user: kickTarget(seenBy: writer, rng: &rng)), nil, nil)
            case 42..<50: return (.setBoard(user: student, granted: Bool.random(using: &rng)), nil, nil)
            case 50..<75:
                let index = counters.withLock { counters -> Int in
                    defer { counters[writer.user, default: 0] += 1 }
                    return counters[writer.user, default: 0]
                }
                let mark = rewardMark(author: writer.user, index: index)
                return (.reward(user: mark.target, amount: mark.amount), mark, nil)
            case 75..<87:
                let key = "\(writer.user).\(sequence)"
                let value = "v\(sequence)"
                return (.setRoomProperty(key: key, value: Array(value.utf8), cause: "chaos"),
                        nil, PropertyMark(user: nil, key: key, value: value))
            case 87..<88: return (.setStageLimit(UInt32(Int.random(in: 3...6, using: &rng))), nil, nil)
            case 88..<89:
                return (.setCarousel(Carousel(running: Bool.random(using: &rng), intervalSeconds: 10, range: .all, order: .random)), nil, nil)
            case 89..<95:
                // The lock: take it, write the guarded key under its fence, let it go.
                let fence = writer.heldFence.load(ordering: .relaxed)
                if fence == 0 || roll == 89 {
                    return (roll == 89 && fence != 0 ? .releaseLock(name: Self.lockName, revoke: false)
                                                     : .acquireLock(name: Self.lockName, ttlSeconds: 10), nil, nil)
                }
                let value = "\(writer.user).\(sequence)"
                return (.setRoomProperty(key: Self.guardedKey, value: Array(value.utf8), cause: "chaos",
                                         revision: PropertyRevision(fence: LockFence(lock: Self.lockName, fence: fence))), nil, nil)
            case 95..<96: return (.setHand(user: student, raised: false), nil, nil)
            case 96..<97:
                // Breakout groups: every replica must agree on who is where, whatever the faults.
                let group = "g\(Int.random(in: 1...3, using: &rng))"
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<3: return (.setBreakoutGroup(id: group, name: "Group \(group)"), nil, nil)
                case 3..<9: return (.assignBreakoutGroup(user: student, group: group), nil, nil)
                default: return (.endBreakout, nil, nil)
                }
            case 97..<99:
                // Compare-and-set on one key, at the revision this teacher's replica shows.
                let expected = writer.current?.propertyRevision(.room, key: Self.compareAndSetKey) ?? 0
                return (.setRoomProperty(key: Self.compareAndSetKey, value: Array("\(writer.user).\(sequence)".utf8), cause: "chaos-cas",
                                         revision: PropertyRevision(condition: expected)), nil, nil)
            default: return (.muteAll, nil, nil)
            }
        }
        let me = writer.user
        switch roll {
        case 36..<40:
            return (.setPresenceState(user: me, session: "", items: [PresenceItem(key: Self.presenceKey, value: Array("\(me).\(sequence)".utf8))]), nil, nil)
        case 0..<36:
            let device: Device = Bool.random(using: &rng) ? .camera : .microphone
            return (.setDevice(user: me, device: device, on: Bool.random(using: &rng)), nil, nil)
        case 40..<65: return (.setHand(user: me, raised: Bool.random(using: &rng)), nil, nil)
        case 88..<93:
            return (.sendMessage(type: "chat", payload: Array("\(me).\(sequence)".utf8), previous: 0), nil, nil)
        case 93..<95:
            let others = students.filter { $0 != me } + ["t1"]
            let recipient = others.randomElement(using: &rng)!
            return (.sendPeerMessage(to: recipient, type: "chat", payload: Array("\(me).\(sequence)".utf8), previous: 0), nil, nil)
        case 65..<88:
            let key = "p\(sequence)"
            let value = "\(me).\(sequence)"
            return (.setUserProperty(user: me, key: key, value: Array(value.utf8), cause: "chaos"),
                    nil, PropertyMark(user: me, key: key, value: value))
        default: return (.setName(user: me, name: "\(me) \(sequence)"), nil, nil)
        }
    }
}
