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

    /// Seeded: several replicas each start and end sessions for the same users, reward
    /// them, fold their own sessions, are sometimes rebuilt from a peer under a new
    /// replica id, and exchange deltas and patches in random order with losses and
    /// delays. Every replica ends with the same state, every acknowledged reward is
    /// counted everywhere, and no user ever holds more records than the bound.
    /// `HOMEROOM_LIFETIME_STEPS` (default 6,000: about 800 joins per user).
    @Test(arguments: Array(0..<UInt64(ProcessInfo.processInfo.environment["HOMEROOM_LIFETIME_SEEDS"].flatMap(UInt64.init) ?? 40)))
    func randomSchedulesConvergeWithinTheBound(seed: UInt64) {
        var random = SplitMix64(seed: seed &+ 0x5EED)
        let replay = "replay: HOMEROOM_LIFETIME_SEEDS=\(seed + 1) swift test --filter 'LifetimeTests.randomSchedules' (seed \(seed))"
        let replicaCount = 3
        var replicas = (1...replicaCount).map { Replica(UInt64($0)) }
        var nextReplicaID: UInt64 = 10
        var departedOrigins = 0
        let users = ["u1", "u2", "u3"]
        var inFlight: [(to: Int, delta: Delta)] = []
        var open: [Int: [UserID: [SessionID]]] = [:]
        var acknowledged: [UserID: Int64] = [:]
        var counter = 0
        var folds = 0
        let steps = ProcessInfo.processInfo.environment["HOMEROOM_LIFETIME_STEPS"].flatMap(Int.init) ?? 6_000
        for replica in replicas.indices { _ = replicas[replica].join("t", "t-\(replica)", role: .teacher) }
        for a in 0..<replicaCount { for b in 0..<replicaCount where a != b { replicas[a].room.merge(replicas[b].room) } }
        for _ in 0..<steps {
            let at = Int(random.next() % UInt64(replicaCount))
            let user = users[Int(random.next() % UInt64(users.count))]
            var made: [Delta] = []
            switch random.next() % 100 {
            case 0..<35:
                if (open[at]?[user]?.count ?? 0) < 3 {
                    counter += 1
                    let session = "\(user)-\(counter)"
                    made.append(replicas[at].join(user, session))
                    open[at, default: [:]][user, default: []].append(session)
                }
            case 35..<65:
                if let session = open[at]?[user]?.popLast() {
                    made.append(replicas[at].write(user, .student, .leaveSession(user: user, session: session)))
                }
            case 65..<70:
                if replicas[at].room.users[user]?.isKnown == true {
                    counter += 1
                    made.append(replicas[at].write("t", .teacher, .reward(user: user, amount: 1), counter: UInt64(counter)))
                    acknowledged[user, default: 0] += 1
                }
            case 70..<78:
                if let fold = replicas[at].foldIfDue(user) { made.append(fold); folds += 1 }
            case 78..<86:
                // Anti-entropy from a random peer.
                let from = Int(random.next() % UInt64(replicaCount))
                if from != at { replicas[at].room.merge(replicas[from].room.missing(since: replicas[at].room.seen)) }
            case 86:
                // Rebuilt from a peer under a new replica id, after its writes reached that
                // peer; its open sessions die with the old origin.
                let peer = (at + 1) % replicaCount
                replicas[peer].room.merge(replicas[at].room.missing(since: replicas[peer].room.seen))
                let old = replicas[at].id
                var rebuilt = Replica(nextReplicaID)
                nextReplicaID += 1
                rebuilt.origin.now = replicas[at].origin.now
                rebuilt.room = replicas[peer].room
                replicas[at] = rebuilt
                _ = replicas[at].join("t", "t-\(nextReplicaID)", role: .teacher)
                made.append(replicas[at].write("node", .system, .replicaDown(replica: old, incarnation: 1)))
                open[at] = [:]
                departedOrigins += 1
            default:
                // Deliver a random delayed delta.
                if !inFlight.isEmpty {
                    let index = Int(random.next() % UInt64(inFlight.count))
                    let item = inFlight.remove(at: index)
                    _ = replicas[item.to].room.apply(item.delta)
                }
            }
            for delta in made {
                for peer in 0..<replicaCount where peer != at && random.next() % 5 != 0 { inFlight.append((peer, delta)) }
            }
            // Per live origin: 3 open, fewer than the threshold over, a few between fold
            // attempts; per departed origin what it had not folded (open, or over).
            let bound = replicaCount * (3 + RoomState.sessionFoldThreshold + 8) + departedOrigins * (3 + RoomState.sessionFoldThreshold + 8)
            for replica in replicas {
                for (user, record) in replica.room.users where user != "t" {
                    #expect(record.sessions.count <= bound, "\(user) has \(record.sessions.count) records (bound \(bound)); \(replay)")
                }
            }
        }
        #expect(folds >= 10, "only \(folds) folds: the schedule does not test folding; \(replay)")
        // Heal: deliver everything, then full anti-entropy rounds.
        for item in inFlight { _ = replicas[item.to].room.apply(item.delta) }
        for _ in 0..<3 {
            for a in 0..<replicaCount {
                for b in 0..<replicaCount where a != b { replicas[a].room.merge(replicas[b].room.missing(since: replicas[a].room.seen)) }
            }
        }
        for replica in replicas.dropFirst() {
            #expect(replica.room == replicas[0].room, "replicas differ after the heal; \(replay)")
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
