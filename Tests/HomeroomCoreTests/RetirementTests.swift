import class Foundation.ProcessInfo
import Testing
@testable import HomeroomCore

/// Retiring replica ids (docs/ARCHITECTURE.md, "Lifetime"): the newest store of a node
/// name retires the older ones once every node holds their writes; every replica then
/// keeps nothing of them, takes nothing more from them, and counts every reward once.
@Suite struct RetirementTests {
    static let now: UInt64 = 1_800_000_000_000
    /// Node "a" had a store (old), lost it, and runs on a new one (new); "t" is a peer.
    static let old = ReplicaID(node: "a", generation: 1_000)
    static let new = ReplicaID(node: "a", generation: 2_000)
    static let peer = ReplicaID(node: "t", generation: 1_500)

    struct Origin {
        var sequencer: Sequencer
        var sequence: UInt64 = 0
        init(_ replica: ReplicaID) { sequencer = Sequencer(replica: replica) }

        mutating func stamp(_ author: UserID, _ role: Role, counter: UInt64, _ operation: Operation, at millis: UInt64 = RetirementTests.now) -> Delta {
            sequence += 1
            return sequencer.stamp(Write(author: author, authorRole: role, authorCounter: counter, operation: operation), sequence: sequence, nowMillis: millis)
        }
    }

    static func reward(_ amount: Int32) -> Operation { .reward(user: "bob", amount: amount, issuedAtMillis: now) }

    /// What the old store wrote before it was lost, as the peer holds it: bob joined
    /// through it, got rewards through it (two folded, one listed, one retried through
    /// the peer as well), and the peer declared it down.
    static func history() -> (peerRoom: RoomState, oldDeltas: [Delta], peerOrigin: Origin) {
        var oldOrigin = Origin(old), peerOrigin = Origin(peer)
        var deltas: [Delta] = []
        deltas.append(oldOrigin.stamp("bob", .student, counter: 1, .joinSession(user: "bob", session: "b1", name: "Bob", role: .student, host: old, incarnation: 7)))
        deltas.append(oldOrigin.stamp("tina", .teacher, counter: 1, .joinSession(user: "tina", session: "t1", name: "Tina", role: .teacher, host: old, incarnation: 7)))
        deltas.append(oldOrigin.stamp("tina", .teacher, counter: 2, reward(5)))
        deltas.append(oldOrigin.stamp("tina", .teacher, counter: 3, reward(7)))
        deltas.append(oldOrigin.stamp("node", .system, counter: 0, .foldRewards(user: "bob", upTo: 4, sum: 12)))
        deltas.append(oldOrigin.stamp("tina", .teacher, counter: 4, reward(1)))
        deltas.append(oldOrigin.stamp("tina", .teacher, counter: 5, reward(3)))
        var room = RoomState(roomID: "r")
        for delta in deltas { _ = room.apply(delta) }
        // The peer holds a later copy of the last reward (retried through it), and its own reward.
        _ = room.apply(peerOrigin.stamp("tina", .teacher, counter: 5, reward(3), at: now + 5))
        _ = room.apply(peerOrigin.stamp("tina", .teacher, counter: 6, reward(2), at: now + 6))
        _ = room.apply(peerOrigin.stamp("node", .system, counter: 0, .replicaDown(replica: old, incarnation: 7)))
        return (room, deltas, peerOrigin)
    }

    @Test func idsCarryTheirNameAndGeneration() {
        #expect(Self.new.supersedes(Self.old))
        #expect(!Self.old.supersedes(Self.new))
        #expect(!Self.new.supersedes(Self.peer) && !Self.peer.supersedes(Self.old))
        #expect(Self.new.privateForm.nodeForm == Self.new && Self.new.privateForm != Self.new)
        #expect(Self.old.privateForm.nodeForm == Self.old && Self.new.supersedes(Self.old.privateForm))
        #expect(Self.new.nameHash == ReplicaID.nameHash(of: "a") && Self.new.generation == 2_000)
        // Ids of stores made before structured ids are never anyone's predecessor.
        let legacy = ReplicaID(0x0123_4567_89ab_cdef)
        #expect(!legacy.isStructured && !Self.new.supersedes(legacy) && !legacy.supersedes(Self.old))
        #expect(ReplicaID.generation(atMillis: Self.now) < ReplicaID.generation(atMillis: Self.now + 10))
    }

    @Test func theNewestStoreRetiresTheOlderOnceEveryRewardIsCountedOnce() throws {
        var (peerRoom, _, peerOrigin) = Self.history()
        #expect(peerRoom.users["bob"]?.rewardTotal == 18)
        var newRoom = RoomState(roomID: "r")
        newRoom.merge(peerRoom.missing(since: .empty))
        var newOrigin = Origin(Self.new)

        // The retried reward's later copy is not covered by the peer's floor yet.
        guard case .waiting = newRoom.retirementPlan(successor: Self.new, peers: [peerRoom.seen], completeBeforeMillis: Self.now + 100) else {
            Issue.record("retired while a retried reward waits for the peer's fold")
            return
        }
        // Nor while the rewards are not complete.
        guard case .waiting = newRoom.retirementPlan(successor: Self.new, peers: [peerRoom.seen], completeBeforeMillis: nil) else {
            Issue.record("retired before the rewards were complete")
            return
        }
        // The peer folds its lost copy (counting nothing: the old store's copy is earlier).
        guard case let .due(peerFold) = peerRoom.rewardFoldPlan(for: "bob", origin: Self.peer, completeBeforeMillis: Self.now + 100,
                                                                nowMillis: Self.now + 100_000) else {
            Issue.record("the peer has nothing to fold")
            return
        }
        let fold = peerOrigin.stamp("node", .system, counter: 0, peerFold)
        _ = peerRoom.apply(fold)
        _ = newRoom.apply(fold)

        guard case let .due(retirement) = newRoom.retirementPlan(successor: Self.new, peers: [peerRoom.seen], completeBeforeMillis: Self.now + 100),
              case let .retirePredecessors(generation, floors) = retirement else {
            Issue.record("the retirement is not due: \(newRoom.retirementPlan(successor: Self.new, peers: [peerRoom.seen], completeBeforeMillis: Self.now + 100))")
            return
        }
        #expect(generation == Self.old.generation)
        // 5 + 7 folded, 1 and 3 listed: 16 move into the new store's floor; the peer's 2 stays the peer's.
        #expect(floors == [RetiredRewardFloor(user: "bob", upTo: 0, sum: 16, keep: [])])
        let delta = newOrigin.stamp("node", .system, counter: 0, retirement)
        _ = newRoom.apply(delta)
        _ = peerRoom.apply(delta)

        for room in [newRoom, peerRoom] {
            #expect(room.users["bob"]?.rewardTotal == 18)
            // Bob's and Tina's names, written by their joins through the old store, still
            // stand: so does its version-vector entry, until nothing carries its stamp.
            #expect(room.seen.origins[Self.old] != nil)
            #expect(room.deadIncarnations[Self.old] == nil)
            #expect(room.users.values.allSatisfy { record in
                record.sessions.isEmpty && record.rewardFloors[Self.old] == nil && !record.rewards.values.contains { $0.stamp.clock.replica == Self.old }
            })
            #expect(room.predecessors(of: Self.new).isEmpty)
            #expect(room.isRetired(Self.old) && room.isRetired(Self.old.privateForm) && !room.isRetired(Self.new))
        }
        #expect(newRoom == peerRoom)

        // They join again through the new store: nothing carries the old stamp, and the entry goes.
        for (user, role) in [("bob", Role.student), ("tina", .teacher)] {
            let join = newOrigin.stamp(user, role, counter: 20, .joinSession(user: user, session: "\(user)-2", name: user, role: role, host: Self.new, incarnation: 1))
            _ = newRoom.apply(join)
            _ = peerRoom.apply(join)
        }
        #expect(newRoom.dropRetiredEntries() && peerRoom.dropRetiredEntries())
        #expect(newRoom.seen.origins[Self.old] == nil && !newRoom.dropRetiredEntries())
        #expect(newRoom == peerRoom && newRoom.users["bob"]?.rewardTotal == 18)
    }

    @Test func aStaleReplicaAndLateWritesBringNothingBack() throws {
        var (peerRoom, oldDeltas, _) = Self.history()
        // A replica that saw everything before the retirement and nothing since.
        var stale = RoomState(roomID: "r")
        stale.merge(peerRoom.missing(since: .empty))
        var newRoom = stale
        var newOrigin = Origin(Self.new)
        let retirement = Operation.retirePredecessors(generation: Self.old.generation,
                                                      rewardFloors: [RetiredRewardFloor(user: "bob", upTo: 0, sum: 16, keep: [])])
        // (The peer's lost copy, not folded here, keeps bob's listed reward of 3 as the peer's copy.)
        let delta = newOrigin.stamp("node", .system, counter: 0, retirement)
        _ = newRoom.apply(delta)
        let retired = newRoom

        // The stale replica's whole state merged in brings back nothing of the old store.
        newRoom.merge(stale.missing(since: .empty))
        #expect(newRoom == retired)
        // A late delta of the old store is refused at the door.
        #expect(newRoom.apply(oldDeltas[5]) == .duplicate)
        #expect(newRoom == retired)

        // The stale replica catches up through a patch: it ends equal, by a path without the delta.
        stale.merge(newRoom.missing(since: stale.seen))
        #expect(stale == newRoom)
        // And the patch from the retired side carries no messages or dots of the old store.
        let patch = newRoom.missing(since: peerRoom.seen)
        #expect(patch.retiredGenerations[Self.old.nameHash] == Self.old.generation)
        #expect(patch.users.values.allSatisfy { !$0.holdsRetired(newRoom.isRetired) })
        _ = peerRoom.apply(delta)
        #expect(peerRoom == newRoom)
    }

    @Test func onlyAnOlderIdOfTheWritersOwnNameIsRetired() {
        var (room, _, peerOrigin) = Self.history()
        let before = room
        // The peer names a generation of its own name: none of "a" is touched.
        _ = room.apply(peerOrigin.stamp("node", .system, counter: 0, .retirePredecessors(generation: Self.old.generation, rewardFloors: [])))
        #expect(room.seen.origins[Self.old] == before.seen.origins[Self.old])
        #expect(room.users["bob"]?.rewardTotal == before.users["bob"]?.rewardTotal)
        #expect(!room.isRetired(Self.old))
        // A generation that is not older than the writer's own does nothing either.
        var newOrigin = Origin(Self.new)
        _ = room.apply(newOrigin.stamp("node", .system, counter: 0, .retirePredecessors(generation: Self.new.generation, rewardFloors: [])))
        #expect(!room.isRetired(Self.new) && !room.isRetired(Self.old))
        // A client may never write one.
        var client = Origin(Self.new)
        client.sequence = 10
        let outcome = room.apply(client.stamp("bob", .student, counter: 9, .retirePredecessors(generation: 1, rewardFloors: [])))
        #expect(outcome == .rejected(.requiresSystem(operation: "retire-predecessors")))
        #expect(!room.isRetired(Self.old))
    }

    @Test func aPeerMissingWritesOfTheOlderStoreHoldsTheRetirementBack() {
        let (peerRoom, oldDeltas, _) = Self.history()
        var lagging = RoomState(roomID: "r")
        for delta in oldDeltas.dropLast() { _ = lagging.apply(delta) }
        var newRoom = RoomState(roomID: "r")
        newRoom.merge(peerRoom.missing(since: .empty))
        guard case .waiting = newRoom.retirementPlan(successor: Self.new, peers: [peerRoom.seen, lagging.seen], completeBeforeMillis: Self.now + 100) else {
            Issue.record("retired while a peer misses a write of the older store")
            return
        }
        // Nor when this node misses one a peer has.
        var behind = RoomState(roomID: "r")
        for delta in oldDeltas.dropLast() { _ = behind.apply(delta) }
        guard case .waiting = behind.retirementPlan(successor: Self.new, peers: [peerRoom.seen], completeBeforeMillis: Self.now + 100) else {
            Issue.record("retired while this node misses a write of the older store")
            return
        }
        #expect(RoomState(roomID: "r").retirementPlan(successor: Self.new, peers: [], completeBeforeMillis: nil) == .nothing)
    }
}

/// Retirement in any delivery order: three replicas get the old store's writes, the
/// peer's, the retirement and stale or fresh patches in a random order, with
/// duplicates; all end equal, with every reward counted once and nothing of the old
/// store left in any record.
@Suite struct RetirementOrderTests {
    typealias T = RetirementTests

    @Test(arguments: Array(0..<UInt64(ProcessInfo.processInfo.environment["HOMEROOM_RETIREMENT_SEEDS"].flatMap(UInt64.init) ?? 60)))
    func anyDeliveryOrderConverges(seed: UInt64) {
        var random = SplitMix64(seed: seed &+ 0x2E71)
        func pick(_ bound: Int) -> Int { Int(random.next() % UInt64(bound)) }
        let replay = "replay: HOMEROOM_RETIREMENT_SEEDS=\(seed + 1) swift test --filter 'RetirementOrderTests' (seed \(seed))"

        // The history, as the peer holds it.
        var oldOrigin = T.Origin(T.old), peerOrigin = T.Origin(T.peer)
        var reference = RoomState(roomID: "r")
        var history: [Delta] = []
        func record(_ delta: Delta) { history.append(delta); _ = reference.apply(delta) }
        let students = (0..<(2 + pick(3))).map { "s\($0)" }
        record(oldOrigin.stamp("tina", .teacher, counter: 1, .joinSession(user: "tina", session: "t1", name: "Tina", role: .teacher, host: T.old, incarnation: 3)))
        for user in students {
            record(oldOrigin.stamp(user, .student, counter: 1, .joinSession(user: user, session: "\(user)-1", name: user, role: .student, host: T.old, incarnation: 3)))
        }
        var counter: UInt64 = 1
        var retriable: [(UserID, Int32, UInt64)] = []
        for _ in 0..<(3 + pick(10)) {
            counter += 1
            let user = students[pick(students.count)], amount = Int32(1 + pick(5))
            record(oldOrigin.stamp("tina", .teacher, counter: counter, .reward(user: user, amount: amount, issuedAtMillis: T.now)))
            retriable.append((user, amount, counter))
            if pick(4) == 0 {
                record(oldOrigin.stamp("tina", .teacher, counter: counter, .sendMessage(type: "chat", payload: [UInt8(counter)], previous: 0)))
            }
        }
        for (user, amount, retried) in retriable where pick(3) == 0 {
            record(peerOrigin.stamp("tina", .teacher, counter: retried, .reward(user: user, amount: amount, issuedAtMillis: T.now), at: T.now + 50))
        }
        for _ in 0..<pick(3) {
            counter += 1
            record(peerOrigin.stamp("tina", .teacher, counter: counter, .reward(user: students[pick(students.count)], amount: 2, issuedAtMillis: T.now), at: T.now + 60))
        }
        for user in students where pick(2) == 0 {
            if case let .due(fold) = reference.rewardFoldPlan(for: user, origin: T.old, completeBeforeMillis: T.now + 100, nowMillis: T.now + 100_000) {
                record(oldOrigin.stamp("node", .system, counter: 0, fold, at: T.now + 70))
            }
        }
        record(peerOrigin.stamp("node", .system, counter: 0, .replicaDown(replica: T.old, incarnation: 3), at: T.now + 80))
        for user in students {
            if case let .due(fold) = reference.rewardFoldPlan(for: user, origin: T.peer, completeBeforeMillis: T.now + 100, nowMillis: T.now + 100_000) {
                record(peerOrigin.stamp("node", .system, counter: 0, fold, at: T.now + 90))
            }
        }
        let totals = Dictionary(uniqueKeysWithValues: students.map { ($0, reference.users[$0]?.rewardTotal ?? 0) })

        // The new store catches up and retires the old one.
        var newest = RoomState(roomID: "r")
        newest.merge(reference.missing(since: .empty))
        var newOrigin = T.Origin(T.new)
        guard case let .due(retirement) = newest.retirementPlan(successor: T.new, peers: [reference.seen], completeBeforeMillis: T.now + 100) else {
            Issue.record("the retirement is not due: \(newest.retirementPlan(successor: T.new, peers: [reference.seen], completeBeforeMillis: T.now + 100)); \(replay)")
            return
        }
        let retire = newOrigin.stamp("node", .system, counter: 0, retirement, at: T.now + 200)
        _ = newest.apply(retire)
        let everything = history + [retire]

        // Three replicas, any order, duplicates, stale and fresh patches.
        var replicas = [RoomState](repeating: RoomState(roomID: "r"), count: 3)
        for _ in 0..<(40 + pick(200)) {
            let target = pick(3)
            switch pick(10) {
            case 0..<5: _ = replicas[target].apply(everything[pick(everything.count)])
            case 5..<8:
                let source = replicas[pick(3)]
                replicas[target].merge(source.missing(since: replicas[target].seen))
            case 8: replicas[target].merge(reference.missing(since: replicas[target].seen))   // from a replica without the retirement
            default: replicas[target].merge(newest.missing(since: replicas[target].seen))
            }
        }
        for index in replicas.indices { for delta in everything.shuffledBy(&random) { _ = replicas[index].apply(delta) } }
        for _ in 0..<3 {
            for target in replicas.indices {
                for source in replicas.indices where source != target { replicas[target].merge(replicas[source].missing(since: replicas[target].seen)) }
                replicas[target].merge(newest.missing(since: replicas[target].seen))
                newest.merge(replicas[target].missing(since: newest.seen))
            }
        }
        _ = newest.dropRetiredEntries()
        for index in replicas.indices { _ = replicas[index].dropRetiredEntries() }

        for (index, replica) in replicas.enumerated() {
            #expect(replica == newest, "replica \(index) differs from the retiring node; \(replay)")
            for user in students {
                #expect(replica.users[user]?.rewardTotal == totals[user], "replica \(index), \(user): \(replica.users[user]?.rewardTotal ?? -1) of \(totals[user]!); \(replay)")
            }
            #expect(!replica.users.values.contains { $0.holdsRetired(replica.isRetired) }, "replica \(index) keeps state of the old store; \(replay)")
            #expect(replica.isRetired(T.old) && replica.deadIncarnations[T.old] == nil, "\(replay)")
        }
    }
}

extension Array {
    /// A seeded shuffle (Fisher-Yates), so a failing schedule replays.
    func shuffledBy(_ random: inout SplitMix64) -> [Element] {
        var copy = self
        for index in stride(from: copy.count - 1, to: 0, by: -1) {
            copy.swapAt(index, Int(random.next() % UInt64(index + 1)))
        }
        return copy
    }
}
