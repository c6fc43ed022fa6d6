import class Foundation.ProcessInfo
import Testing
@testable import HomeroomCore

/// Sessions over a semester: folded away by their origin, bounded, and never brought
/// back by a late copy, while replicas converge.
@Suite struct LifetimeTests {
    /// A replica's own origin: stamps a write, applies it, returns the delta.
    struct Replica {
        var origin: Origin
        var room = RoomState(roomID: "r")
        init(_ id: UInt64) { origin = Origin(id) }
        /// A replica with a structured id (`ReplicaID(node:generation:)`), as a node's store has.
        init(_ id: ReplicaID) { origin = Origin(replica: id) }
        var id: ReplicaID { origin.sequencer.replica }

        /// `counter`: the author's counter, unique across replicas (a reward is keyed by it).
        mutating func write(_ author: UserID, _ role: Role, _ operation: Operation, counter: UInt64? = nil) -> Delta {
            let prepared = room.prepare(Write(author: author, authorRole: role, authorCounter: 0, operation: operation)).operation
            var delta = origin.delta(author, role, prepared)
            if let counter { delta.authorCounter = counter }
            _ = room.apply(delta)
            return delta
        }

        mutating func join(_ user: UserID, _ session: SessionID, role: Role = .student) -> Delta {
            write(user, role, .joinSession(user: user, session: session, name: user, role: role, host: id, incarnation: 1))
        }

        /// What the node's presence loop does: fold when Core says so.
        mutating func foldIfDue(_ user: UserID) -> Delta? {
            guard let fold = room.sessionFold(for: user, origin: id, nowMillis: origin.now) else { return nil }
            return write("node", .system, fold)
        }
    }

    @Test func aThousandOneShotsLeaveAHandfulOfSessionRecords() {
        var node = Replica(1)
        _ = node.join("teacher", "laptop", role: .teacher)   // stays open all along
        var folds = 0
        for index in 0..<1_000 {
            _ = node.join("teacher", "one-shot-\(index)", role: .teacher)
            _ = node.write("teacher", .teacher, .leaveSession(user: "teacher", session: "one-shot-\(index)"))
            if node.foldIfDue("teacher") != nil { folds += 1 }
            #expect(node.room.users["teacher"]!.sessions.count <= RoomState.sessionFoldThreshold + 1)
        }
        #expect(folds == 1_000 / RoomState.sessionFoldThreshold)
        let record = node.room.users["teacher"]!
        #expect(record.sessions.contains { $0.id == "laptop" && $0.ended == nil })
        #expect(node.room.isOnline("teacher"))
        #expect(record.sessionFloors[node.id]?.keep.count == 1, "only the laptop session is kept")
    }

    @Test func aLateCopyOfAFoldedSessionDoesNotComeBack() {
        var a = Replica(1)
        var lagging = RoomState(roomID: "r")   // saw the joins, missed the leaves
        var joins: [Delta] = [], leaves: [Delta] = []
        for index in 0..<RoomState.sessionFoldThreshold {
            joins.append(a.join("bob", "s\(index)"))
            leaves.append(a.write("bob", .student, .leaveSession(user: "bob", session: "s\(index)")))
        }
        for delta in joins { _ = lagging.apply(delta) }
        let stale = lagging   // a third replica that never hears of the fold until later
        guard let fold = a.foldIfDue("bob") else {
            Issue.record("no fold after \(RoomState.sessionFoldThreshold) ended sessions")
            return
        }
        #expect(a.room.users["bob"]!.sessions.isEmpty)

        _ = lagging.apply(fold)
        #expect(lagging.users["bob"]!.sessions.isEmpty, "the fold drops open copies it covers")
        for delta in leaves { _ = lagging.apply(delta) }   // the ends arrive after the fold
        #expect(lagging.users["bob"]!.sessions.isEmpty, "a leave carrying its start makes no placeholder")
        lagging.merge(stale.missing(since: lagging.seen))
        lagging.merge(stale)
        #expect(lagging.users["bob"]!.sessions.isEmpty, "a patch from a replica that has not folded brings nothing back")
        #expect(!lagging.isOnline("bob"))

        // And the replica that had not folded converges by the fold itself.
        var late = stale
        late.merge(a.room.missing(since: late.seen))
        #expect(late == a.room)
        #expect(lagging == a.room)
    }

    @Test func aSessionStartedBeforeTheFloorButStillOpenIsKeptEverywhere() {
        var a = Replica(1)
        let laptop = a.join("ada", "laptop")
        var other = RoomState(roomID: "r")
        var deltas: [Delta] = []
        for index in 0..<RoomState.sessionFoldThreshold {
            deltas.append(a.join("ada", "s\(index)"))
            deltas.append(a.write("ada", .student, .leaveSession(user: "ada", session: "s\(index)")))
        }
        guard let fold = a.foldIfDue("ada") else {
            Issue.record("no fold after \(RoomState.sessionFoldThreshold) ended sessions")
            return
        }
        // `other` gets the fold first and the laptop's start last.
        _ = other.apply(fold)
        for delta in deltas.reversed() { _ = other.apply(delta) }
        _ = other.apply(laptop)
        #expect(other.users["ada"]!.sessions.map(\.id) == ["laptop"])
        #expect(other.isOnline("ada"))
        #expect(other == a.room)
    }

    @Test func aRoomAtRestHoldsNoEndedSession() {
        var a = Replica(1)
        _ = a.join("zoe", "tablet")
        for index in 0..<3 {
            _ = a.join("zoe", "s\(index)")
            _ = a.write("zoe", .student, .leaveSession(user: "zoe", session: "s\(index)"))
        }
        #expect(a.room.sessionFold(for: "zoe", origin: a.id, nowMillis: a.origin.now) == nil, "3 over, just now: not due")
        #expect(a.room.hasSessionsToFold(for: "zoe", origin: a.id))
        let later = a.origin.now + RoomState.sessionFoldQuietMillis
        guard let fold = a.room.sessionFold(for: "zoe", origin: a.id, nowMillis: later) else {
            Issue.record("no fold once the ended sessions were quiet for \(RoomState.sessionFoldQuietMillis) ms")
            return
        }
        _ = a.write("node", .system, fold)
        #expect(a.room.users["zoe"]!.sessions.map(\.id) == ["tablet"])
        #expect(!a.room.hasSessionsToFold(for: "zoe", origin: a.id))
    }

    @Test func foldsAreRefusedFromAnyoneButANode() {
        var a = Replica(1)
        _ = a.join("eve", "s1")
        let forged = a.origin.delta("eve", .student, .foldSessions(user: "eve", upTo: 10, keep: []))
        guard case .rejected = a.room.apply(forged) else {
            Issue.record("a student's fold was applied")
            return
        }
        #expect(a.room.users["eve"]!.sessions.count == 1)
    }

    @Test func joinsBeyondTheOpenSessionLimitAreRefusedAndLeavesOfUnknownSessionsToo() {
        var a = Replica(1)
        for index in 0..<RoomState.maxOpenSessionsPerUser { _ = a.join("mallory", "s\(index)") }
        let join = Write(author: "mallory", authorRole: .student, authorCounter: 0,
                         operation: .joinSession(user: "mallory", session: "one-more", name: "m", role: .student, host: a.id, incarnation: 1))
        #expect(a.room.admit(join, nowMillis: a.origin.now)?.code == "too-many-sessions")
        let leave = Write(author: "mallory", authorRole: .student, authorCounter: 0, operation: .leaveSession(user: "mallory", session: "never-joined"))
        #expect(a.room.admit(leave, nowMillis: a.origin.now)?.code == "session-unknown")
        // Rejoining with a live session id is a retry, not a new session: allowed.
        let retry = Write(author: "mallory", authorRole: .student, authorCounter: 0,
                          operation: .joinSession(user: "mallory", session: "s0", name: "m", role: .student, host: a.id, incarnation: 1))
        #expect(a.room.admit(retry, nowMillis: a.origin.now) == nil)
    }

    @Test func floorMergeIsTheUnionOfWhatEachCovers() {
        let stamp = Stamp(clock: HybridTimestamp(packed: 1, replica: ReplicaID(1)), sequence: 1)
        let a = SessionFloor(upTo: 10, keep: [3, 7], stamp: stamp)
        let b = SessionFloor(upTo: 20, keep: [7, 15], stamp: stamp)
        var ab = a, ba = b
        ab.merge(b)
        ba.merge(a)
        #expect(ab == ba)
        #expect(ab.upTo == 20 && ab.keep == [7, 15], "3 is covered by b, 7 by neither, 15 is above a")
        var twice = ab
        twice.merge(ab)
        #expect(twice == ab)
        for sequence in UInt64(1)...25 {
            #expect(ab.covers(sequence) == (a.covers(sequence) || b.covers(sequence)), "sequence \(sequence)")
        }
    }

    /// Seeded: three nodes (`n0`, `n1`, `n2`: structured replica ids) each start and end
    /// sessions for the same users, reward them, fold their own sessions and rewards, are
    /// sometimes rebuilt from a peer on an empty store (the same node name, a newer
    /// generation: a node restarted without its data directory), and exchange deltas and
    /// patches in random order with losses and delays. The newest store of a name retires
    /// the older ones as soon as Core says it is due, as the node does
    /// (`ClusterNode.retirePredecessors`). Every replica ends with the same state, every
    /// acknowledged reward is counted everywhere, no user ever holds more records than the
    /// bound of the origins a replica has not retired, and nothing of a retired id is left
    /// but the version-vector entries of what it wrote that still stands.
    /// `HOMEROOM_LIFETIME_STEPS` (default 6,000: about 800 joins per user, about 60 rebuilds).
    @Test(arguments: Array(0..<UInt64(ProcessInfo.processInfo.environment["HOMEROOM_LIFETIME_SEEDS"].flatMap(UInt64.init) ?? 40)))
    func randomSchedulesConvergeWithinTheBound(seed: UInt64) {
        var random = SplitMix64(seed: seed &+ 0x5EED)
        let replay = "replay: HOMEROOM_LIFETIME_SEEDS=\(seed + 1) swift test --filter 'LifetimeTests.randomSchedules' (seed \(seed))"
        let replicaCount = 3
        let names = (0..<replicaCount).map { "n\($0)" }
        #expect(Set(names.map { ReplicaID.nameHash(of: $0) }).count == replicaCount, "two node names share a name hash")
        var replicas = names.map { Replica(ReplicaID(node: $0, generation: 1)) }
        /// The generation of the next store a node makes (from its clock: increasing).
        var nextGeneration: UInt64 = 2
        let users = ["u1", "u2", "u3"]
        var inFlight: [(to: Int, delta: Delta)] = []
        var open: [Int: [UserID: [SessionID]]] = [:]
        var acknowledged: [UserID: Int64] = [:]
        /// Rewards some replica does not hold yet (each has one copy here): what `completeBefore` waits for.
        var unsettled: [(dot: Dot, issuedAt: UInt64)] = []
        /// The wall clock, 1 ms a step: every node's clock reads at least it (a node's own
        /// clock runs ahead by the writes it stamps within one millisecond).
        var wallMillis = replicas[0].origin.now
        var counter = 0
        var folds = 0, rewardFolds = 0, rebuilds = 0, retirements = 0
        let steps = ProcessInfo.processInfo.environment["HOMEROOM_LIFETIME_STEPS"].flatMap(Int.init) ?? 6_000

        /// The time before which replica `index` holds every copy of every reward that will
        /// ever exist: what `PeerTable.rewardsCompleteBefore` promises a node, known exactly
        /// here. A reward still missing at it holds it back; one not issued yet is stamped
        /// after the clock of the node that will issue it.
        func completeBefore(_ index: Int) -> UInt64 {
            let room = replicas[index].room
            var before = replicas.map { $0.origin.now + 1 }.min()!
            for reward in unsettled where !room.seen.contains(reward.dot) && !room.isRetired(reward.dot.origin) {
                before = min(before, reward.issuedAt)
            }
            return before
        }
        /// What `ClusterNode.retirePredecessors` does for replica `index`: asks Core, with
        /// every other node's version vector, and writes the retirement when it is due.
        func retirementIfDue(_ index: Int) -> (plan: RoomState.RetirementPlan, delta: Delta?) {
            guard !replicas[index].room.predecessors(of: replicas[index].id).isEmpty else { return (.nothing, nil) }
            let peers = replicas.indices.filter { $0 != index }.map { replicas[$0].room.seen }
            let plan = replicas[index].room.retirementPlan(successor: replicas[index].id, peers: peers, completeBeforeMillis: completeBefore(index))
            guard case let .due(retirement) = plan else { return (plan, nil) }
            return (plan, replicas[index].write("node:\(names[index])", .system, retirement, counter: 0))
        }

        for replica in replicas.indices { _ = replicas[replica].join("t", "t-\(replica)", role: .teacher) }
        for a in 0..<replicaCount { for b in 0..<replicaCount where a != b { replicas[a].room.merge(replicas[b].room) } }
        for _ in 0..<steps {
            wallMillis += 1
            for index in replicas.indices { replicas[index].origin.now = max(replicas[index].origin.now, wallMillis) }
            let at = Int(random.next() % UInt64(replicaCount))
            let user = users[Int(random.next() % UInt64(users.count))]
            var made: [(from: Int, delta: Delta)] = []
            switch random.next() % 100 {
            case 0..<35:
                if (open[at]?[user]?.count ?? 0) < 3 {
                    counter += 1
                    let session = "\(user)-\(counter)"
                    made.append((at, replicas[at].join(user, session)))
                    open[at, default: [:]][user, default: []].append(session)
                }
            case 35..<65:
                if let session = open[at]?[user]?.popLast() {
                    made.append((at, replicas[at].write(user, .student, .leaveSession(user: user, session: session))))
                }
            case 65..<70:
                if replicas[at].room.users[user]?.isKnown == true {
                    counter += 1
                    let issuedAt = replicas[at].origin.now + 1   // the author's clock: the delta's own
                    let reward = replicas[at].write("t", .teacher, .reward(user: user, amount: 1, issuedAtMillis: issuedAt), counter: UInt64(counter))
                    made.append((at, reward))
                    unsettled.append((reward.dot, issuedAt))
                    acknowledged[user, default: 0] += 1
                }
            case 70..<78:
                // The node's presence loop: session and reward folds when Core says so. Rewards
                // fold from 2, not the node's 8: a store lives about 300 steps here and sequences
                // a few rewards per user, so with 8 hardly any would fold (2 a seed) and no
                // retirement would have a fold's floor to absorb.
                if let fold = replicas[at].foldIfDue(user) { made.append((at, fold)); folds += 1 }
                if case let .due(fold) = replicas[at].room.rewardFoldPlan(for: user, origin: replicas[at].id, completeBeforeMillis: completeBefore(at),
                                                                          nowMillis: replicas[at].origin.now, threshold: 2) {
                    made.append((at, replicas[at].write("node:\(names[at])", .system, fold, counter: 0)))
                    rewardFolds += 1
                }
            case 78..<86:
                // Anti-entropy from a random peer; now and then the node's sweep of entries of retired ids.
                let from = Int(random.next() % UInt64(replicaCount))
                if from != at { replicas[at].room.merge(replicas[from].room.missing(since: replicas[at].room.seen)) }
                if random.next() % 4 == 0 { _ = replicas[at].room.dropRetiredEntries() }
            case 86:
                // Node `at` loses its store and starts on an empty one: the same name, a newer
                // generation. Its writes reached `peer` first (nothing acknowledged is lost); it
                // is rebuilt from that peer; its open sessions die with the old store.
                let peer = (at + 1) % replicaCount
                let old = replicas[at].id
                // Stopped cleanly first, it ended its own sessions (`ClusterNode.stop`); a crash does not.
                if random.next() % 2 == 0 {
                    made.append((at, replicas[at].write("node:\(names[at])", .system, .replicaDown(replica: old, incarnation: 1), counter: 0)))
                }
                replicas[peer].room.merge(replicas[at].room.missing(since: replicas[peer].room.seen))
                // A node writes no replicaDown for an older store of its own name: its peers
                // declare the silent store down, each only if it swept it before it heard of
                // the new one (`PeerTable.forgetSuperseded` forgets it otherwise), so
                // sometimes no one does, and the retirement alone ends its sessions.
                for other in 0..<replicaCount where other != at && random.next() % 2 == 0 {
                    made.append((other, replicas[other].write("node:\(names[other])", .system, .replicaDown(replica: old, incarnation: 1), counter: 0)))
                }
                var rebuilt = Replica(ReplicaID(node: names[at], generation: nextGeneration))
                nextGeneration += 1
                rebuilt.origin.now = replicas[at].origin.now
                rebuilt.room = replicas[peer].room
                replicas[at] = rebuilt
                made.append((at, replicas[at].join("t", "t-\(at)-\(replicas[at].id.generation)", role: .teacher)))
                open[at] = [:]
                rebuilds += 1
            default:
                // Deliver a random delayed delta.
                if !inFlight.isEmpty {
                    let index = Int(random.next() % UInt64(inFlight.count))
                    let item = inFlight.remove(at: index)
                    _ = replicas[item.to].room.apply(item.delta)
                }
            }
            unsettled.removeAll { reward in
                replicas.allSatisfy { $0.room.seen.contains(reward.dot) || $0.room.isRetired(reward.dot.origin) }
            }
            for index in replicas.indices {
                if let retirement = retirementIfDue(index).delta {
                    made.append((index, retirement))
                    retirements += 1
                }
            }
            for (from, delta) in made {
                for peer in 0..<replicaCount where peer != from && random.next() % 5 != 0 { inFlight.append((peer, delta)) }
            }
            // Per origin a replica may hold records of (the live ones, and the older stores it
            // has not retired yet): 3 open, fewer than the threshold over, a few between fold
            // attempts. A retired origin's are gone.
            for (index, replica) in replicas.enumerated() {
                let unretired = replicas.reduce(0) { $0 + replica.room.predecessors(of: $1.id).count }
                let bound = (replicaCount + unretired) * (3 + RoomState.sessionFoldThreshold + 8)
                for (user, record) in replica.room.users {
                    if user != "t" && record.sessions.count > bound {
                        Issue.record("replica \(index): \(user) has \(record.sessions.count) records (bound \(bound), \(unretired) older stores not retired); \(replay)")
                        return
                    }
                    if record.holdsRetired(replica.room.isRetired) {
                        Issue.record("replica \(index): \(user) holds sessions, floors or rewards of a retired id; \(replay)")
                        return
                    }
                    // Never more than was acknowledged, at any moment (a fold that arrived before
                    // the retirement it includes would count the old store's rewards twice).
                    if user != "t" && record.rewardTotal > acknowledged[user] ?? 0 {
                        Issue.record("replica \(index): \(user) counts \(record.rewardTotal) rewards, \(acknowledged[user] ?? 0) acknowledged; \(replay)")
                        return
                    }
                }
            }
        }
        #expect(folds >= 10, "only \(folds) folds: the schedule does not test folding; \(replay)")
        #expect(rewardFolds >= 1, "no reward fold: the schedule does not test what a retirement absorbs; \(replay)")
        #expect(rebuilds < 2 || retirements >= 1, "\(rebuilds) rebuilds and no retirement: the schedule does not test retiring; \(replay)")

        // Heal: deliver everything, then full anti-entropy rounds.
        func antiEntropy() {
            for a in 0..<replicaCount {
                for b in 0..<replicaCount where a != b { replicas[a].room.merge(replicas[b].room.missing(since: replicas[a].room.seen)) }
            }
        }
        for item in inFlight { _ = replicas[item.to].room.apply(item.delta) }
        inFlight.removeAll()
        for _ in 0..<3 { antiEntropy() }
        unsettled.removeAll()
        // The heal took a while: every reward issued is older than every node's clock.
        wallMillis = replicas.map(\.origin.now).max()! + RoomState.defaultRewardWindowMillis
        for index in replicas.indices {
            replicas[index].origin.now = wallMillis
            // ... long enough for each node's sweep of entries of retired ids (every 30 s):
            // an entry a peer still has of an id retired already holds a retirement back.
            _ = replicas[index].room.dropRetiredEntries()
        }
        // Every node's next retirement round: with nothing in flight, each must be due.
        for index in replicas.indices {
            let (plan, delta) = retirementIfDue(index)
            if let delta {
                for other in replicas.indices where other != index { _ = replicas[other].room.apply(delta) }
            } else if plan != .nothing {
                Issue.record("after the heal, \(names[index]) cannot retire its older stores: \(plan); \(replay)")
            }
        }
        antiEntropy()
        for index in replicas.indices { _ = replicas[index].room.dropRetiredEntries() }

        for replica in replicas.dropFirst() {
            #expect(replica.room == replicas[0].room, "replicas differ after the heal; \(replay)")
        }
        let live = Set(replicas.map(\.id))
        for (index, replica) in replicas.enumerated() {
            let room = replica.room
            #expect(replicas.allSatisfy { room.predecessors(of: $0.id).isEmpty }, "replica \(index) holds older stores not retired; \(replay)")
            #expect(room.deadIncarnations.keys.allSatisfy { live.contains($0) }, "replica \(index) keeps the dead incarnation of an older store; \(replay)")
            #expect(!room.users.values.contains { $0.holdsRetired(room.isRetired) }, "replica \(index) keeps sessions or floors of a retired id; \(replay)")
            // Version-vector entries: the live nodes', and those of retired ids whose write
            // still stands (a user's name or role register, written by a join through them).
            let standing = room.stampOrigins(where: room.isRetired)
            let leftover = room.seen.origins.keys.filter { !live.contains($0) && !standing.contains($0) }
            #expect(leftover.isEmpty, "replica \(index) keeps entries of \(leftover.sorted()) though nothing carries their stamp; \(replay)")
            #expect(room.seen.origins.count <= replicaCount + 2 * room.users.count,
                    "replica \(index) has \(room.seen.origins.count) version-vector entries after \(rebuilds) rebuilds; \(replay)")
        }
        for user in users {
            let expectedOnline = (0..<replicaCount).contains { !(open[$0]?[user]?.isEmpty ?? true) }
            #expect(replicas[0].room.isOnline(user) == expectedOnline, "\(user) online is wrong; \(replay)")
            for replica in replicas {
                #expect(replica.room.users[user]?.rewardTotal ?? 0 == acknowledged[user] ?? 0,
                        "\(user): \(acknowledged[user] ?? 0) rewards acknowledged, \(replica.room.users[user]?.rewardTotal ?? 0) counted; \(replay)")
            }
        }
    }
}

extension Origin {
    /// An origin for a structured replica id.
    init(replica: ReplicaID) { sequencer = Sequencer(replica: replica) }
}
