import class Foundation.ProcessInfo
import Testing
@testable import HomeroomCore

/// Rewards over a semester: each origin folds the rewards whose earliest copy it
/// sequenced into a floor once no other copy can exist or come, and every replica
/// still counts every acknowledged reward exactly once (docs/ARCHITECTURE.md, "Lifetime").
@Suite struct RewardFoldTests {
    static let window: UInt64 = 1_000

    /// A node as far as rewards go: it admits, stamps and applies writes, hears other
    /// nodes' heartbeats, and folds what `rewardFoldPlan` says, given the checkpoints
    /// the real node keeps (`PeerTable.rewardsCompleteBefore`, rebuilt here).
    struct Node {
        var id: ReplicaID
        var sequencer: Sequencer
        var room = RoomState(roomID: "r")
        var sequence: UInt64 = 0
        var pending: [ReplicaID: (sentAt: UInt64, sequence: UInt64)] = [:]
        var confirmed: [ReplicaID: (sentAt: UInt64, sequence: UInt64)] = [:]

        init(_ id: UInt64) {
            self.id = ReplicaID(id)
            sequencer = Sequencer(replica: ReplicaID(id))
        }

        /// Admits and sequences a write at `now`; nil when refused (the refusal's code).
        mutating func write(_ write: Write, now: UInt64) -> Result<Delta, WriteError> {
            if let refusal = room.admit(write, nowMillis: now, rewardWindowMillis: RewardFoldTests.window) { return .failure(refusal) }
            sequence += 1
            let delta = sequencer.stamp(room.prepare(write), sequence: sequence, nowMillis: now)
            _ = room.apply(delta)
            return .success(delta)
        }

        mutating func system(_ operation: Operation, now: UInt64) -> Delta {
            sequence += 1
            let delta = sequencer.stamp(Write(author: "node", authorRole: .system, authorCounter: 0, operation: operation), sequence: sequence, nowMillis: now)
            _ = room.apply(delta)
            return delta
        }

        mutating func heard(from node: ReplicaID, sentAt: UInt64, ownSequence: UInt64) {
            if pending[node] == nil { pending[node] = (sentAt, ownSequence) }
        }

        mutating func completeBefore(peers: [ReplicaID], now: UInt64) -> UInt64? {
            var before = now - RewardFoldTests.window
            for peer in peers where peer != id {
                if let waiting = pending[peer], room.seen.contiguous(peer) >= waiting.sequence {
                    confirmed[peer] = waiting
                    pending[peer] = nil
                }
                guard let mark = confirmed[peer] else { return nil }
                before = min(before, mark.sentAt - RewardFoldTests.window)
            }
            return before
        }

        mutating func fold(_ user: UserID, peers: [ReplicaID], now: UInt64, threshold: Int) -> Delta? {
            guard let before = completeBefore(peers: peers, now: now),
                  case let .due(fold) = room.rewardFoldPlan(for: user, origin: id, completeBeforeMillis: before, nowMillis: now, threshold: threshold)
            else { return nil }
            return system(fold, now: now)
        }
    }

    static func classroom(_ nodes: inout [Node], students: [UserID], now: UInt64) {
        for (user, role) in [("t", Role.teacher), ("t2", .teacher)] + students.map({ ($0, Role.student) }) {
            guard case let .success(delta) = nodes[0].write(Write(author: user, authorRole: role, authorCounter: 1,
                                                               operation: .joinSession(user: user, session: "\(user)-s", name: user, role: role,
                                                                                       host: nodes[0].id, incarnation: 1)), now: now) else { continue }
            for index in nodes.indices.dropFirst() { _ = nodes[index].room.apply(delta) }
        }
    }

    static func reward(_ target: UserID, _ amount: Int32, counter: UInt64, issued: UInt64, author: UserID = "t") -> Write {
        Write(author: author, authorRole: .teacher, authorCounter: counter, operation: .reward(user: target, amount: amount, issuedAtMillis: issued))
    }

    @Test func anOriginFoldsItsRewardsAndEveryReplicaKeepsTheTotal() {
        var nodes = [Node(1), Node(2)]
        var now: UInt64 = 10_000_000
        Self.classroom(&nodes, students: ["s"], now: now)
        var deltas: [Delta] = []
        for counter in UInt64(1)...20 {
            now += 10
            if case let .success(delta) = nodes[0].write(Self.reward("s", 2, counter: counter, issued: now), now: now) { deltas.append(delta) }
        }
        for delta in deltas.prefix(12) { _ = nodes[1].room.apply(delta) }   // node 2 misses the last 8 for now
        nodes[0].heard(from: nodes[1].id, sentAt: now + 1_500, ownSequence: nodes[1].sequence)
        now += 3_000
        #expect(nodes[0].fold("s", peers: nodes.map(\.id), now: now, threshold: 8) != nil, "20 complete rewards: a fold")
        #expect(nodes[0].room.users["s"]!.rewards.isEmpty)
        #expect(nodes[0].room.users["s"]!.rewardTotal == 40)
        // The lagging replica gets the fold, then the rewards it missed: they are in the sum already.
        _ = nodes[1].room.merge(nodes[0].room.missing(since: nodes[1].room.seen))
        for delta in deltas.suffix(8) { _ = nodes[1].room.apply(delta) }
        #expect(nodes[1].room.users["s"]!.rewardTotal == 40)
        #expect(nodes[1].room.users["s"]!.rewards.isEmpty)
        #expect(nodes[1].room == nodes[0].room)
        // A retry of a folded reward is outside the window everywhere.
        #expect(nodes[1].room.admit(Self.reward("s", 2, counter: 3, issued: 10_000_030), nowMillis: now, rewardWindowMillis: Self.window)?.code == "reward-window")
    }

    @Test func noFoldWhileAPeerHasNotConfirmedAHeartbeatAfterTheWindow() {
        var nodes = [Node(1), Node(2)]
        var now: UInt64 = 10_000_000
        Self.classroom(&nodes, students: ["s"], now: now)
        for counter in UInt64(1)...10 {
            now += 10
            _ = nodes[0].write(Self.reward("s", 1, counter: counter, issued: now), now: now)
        }
        now += 10_000
        #expect(nodes[0].fold("s", peers: nodes.map(\.id), now: now, threshold: 1) == nil, "node 2 never heard: it may hold copies")
        // Node 2 admitted a copy (a retry) before its heartbeat; node 1 has not seen it yet.
        guard case let .success(copy) = nodes[1].write(Self.reward("s", 1, counter: 4, issued: now - 600), now: now) else {
            Issue.record("the retry was refused")
            return
        }
        nodes[0].heard(from: nodes[1].id, sentAt: now + 1_500, ownSequence: nodes[1].sequence)
        now += 3_000
        #expect(nodes[0].fold("s", peers: nodes.map(\.id), now: now, threshold: 1) == nil, "the heartbeat's writes have not arrived: not confirmed")
        _ = nodes[0].room.apply(copy)
        #expect(nodes[0].room.users["s"]!.rewards.values.contains { $0.copies.count == 1 }, "the retry is a second copy of reward 4")
        // Node 1 folds every reward but the retried one, which it keeps until node 2 covers its copy.
        guard let first = nodes[0].fold("s", peers: nodes.map(\.id), now: now, threshold: 1),
              case let .foldRewards(_, _, sum, keep) = first.operation else {
            Issue.record("no fold once node 2's heartbeat is confirmed")
            return
        }
        #expect(sum == 9 && keep.count == 1 && nodes[0].room.users["s"]!.rewards.count == 1)
        #expect(nodes[0].room.users["s"]!.rewardTotal == 10)
        // Node 2, once it has node 1's writes, knows its copy lost and covers it.
        _ = nodes[1].room.merge(nodes[0].room.missing(since: nodes[1].room.seen))
        nodes[1].heard(from: nodes[0].id, sentAt: now, ownSequence: nodes[0].sequence)
        now += 3_000
        guard let cover = nodes[1].fold("s", peers: nodes.map(\.id), now: now, threshold: 1),
              case let .foldRewards(_, _, coverSum, _) = cover.operation else {
            Issue.record("node 2 writes no fold to cover its losing copy")
            return
        }
        #expect(coverSum == 0, "node 2 counts nothing: the earlier copy is node 1's")
        _ = nodes[0].room.apply(cover)
        _ = nodes[0].fold("s", peers: nodes.map(\.id), now: now, threshold: 1)
        _ = nodes[1].room.merge(nodes[0].room.missing(since: nodes[1].room.seen))
        for node in nodes {
            #expect(node.room.users["s"]!.rewards.isEmpty)
            #expect(node.room.users["s"]!.rewardTotal == 10, "ten rewards, one of them retried")
        }
        #expect(nodes[0].room == nodes[1].room)
    }

    /// A reward retried through a second node has two copies; a replica that saw only
    /// the later one still counts it once when both origins have folded.
    @Test func aRetriedRewardCountsOnceOnAReplicaThatSawOnlyTheLosingCopy() {
        var nodes = [Node(1), Node(2), Node(3)]
        var now: UInt64 = 10_000_000
        Self.classroom(&nodes, students: ["s"], now: now)
        let issued = now
        guard case let .success(first) = nodes[0].write(Self.reward("s", 5, counter: 7, issued: issued), now: now) else { return }
        now += 200
        guard case let .success(retry) = nodes[1].write(Self.reward("s", 5, counter: 7, issued: issued), now: now) else {
            Issue.record("node 2 had no copy: the retry is admitted")
            return
        }
        _ = nodes[0].room.apply(retry)
        _ = nodes[1].room.apply(first)
        _ = nodes[2].room.apply(retry)          // node 3 sees only the losing copy
        #expect(nodes[0].room.users["s"]!.rewards.first?.value.copies.count == 1)
        now += 5_000
        let ids = nodes.map(\.id)
        for index in 0..<2 {
            for other in nodes.indices where other != index { nodes[index].heard(from: nodes[other].id, sentAt: now - 100, ownSequence: nodes[other].sequence) }
        }
        #expect(nodes[0].fold("s", peers: ids, now: now, threshold: 1) == nil, "the earliest copy's origin waits for node 2 to cover its copy")
        guard let loserFold = nodes[1].fold("s", peers: ids, now: now, threshold: 1) else {
            Issue.record("the origin of the losing copy writes no fold to cover it")
            return
        }
        _ = nodes[2].room.apply(loserFold)
        #expect(nodes[2].room.users["s"]!.rewardTotal == 0, "node 3 drops the copy it held; node 1 has not counted it yet")
        _ = nodes[0].room.apply(loserFold)
        guard let countingFold = nodes[0].fold("s", peers: ids, now: now, threshold: 1) else {
            Issue.record("the origin of the earliest copy does not fold it once the other copy is covered")
            return
        }
        _ = nodes[1].room.apply(countingFold)
        // Node 3 lacks node 1's earlier deltas (the first copy): a fold is applied only in
        // its origin's order, so it waits, unseen, for the repair of that gap.
        #expect(nodes[2].room.apply(countingFold) == .deferred)
        #expect(!nodes[2].room.seen.contains(countingFold.dot))
        _ = nodes[2].room.apply(first)
        #expect(nodes[2].room.apply(countingFold) != .deferred)
        for index in nodes.indices {
            #expect(nodes[index].room.users["s"]!.rewardTotal == 5, "node \(index + 1)")
            #expect(nodes[index].room.users["s"]!.rewards.isEmpty, "node \(index + 1)")
        }
        // The first copy again changes nothing.
        _ = nodes[2].room.apply(first)
        #expect(nodes[2].room.users["s"]!.rewardTotal == 5)
    }

    /// Seeded: three nodes, two teachers rewarding four students, retries through other
    /// nodes, losses, delays, patches, heartbeats and folds in random order. Every
    /// replica ends with the same state, counts exactly the acknowledged rewards, and
    /// once quiet keeps no reward record at all. `HOMEROOM_REWARD_SEEDS` (default 40).
    @Test(arguments: Array(0..<UInt64(ProcessInfo.processInfo.environment["HOMEROOM_REWARD_SEEDS"].flatMap(UInt64.init) ?? 40)))
    func randomSchedulesCountEveryAcknowledgedRewardOnce(seed: UInt64) {
        var random = SplitMix64(seed: seed &+ 0xF01D)
        let replay = "replay: HOMEROOM_REWARD_SEEDS=\(seed + 1) swift test --filter 'RewardFoldTests.randomSchedules' (seed \(seed))"
        var nodes = [Node(1), Node(2), Node(3)]
        let ids = nodes.map(\.id)
        let students: [UserID] = ["s1", "s2", "s3", "s4"]
        var now: UInt64 = 50_000_000
        Self.classroom(&nodes, students: students, now: now)
        struct Issued { var write: Write; var target: UserID; var amount: Int32 }
        var issued: [Issued] = []
        var acknowledged: [RewardKey: (UserID, Int32)] = [:]
        var inFlight: [(to: Int, delta: Delta)] = []
        var counters: [UserID: UInt64] = ["t": 100, "t2": 100]
        var folds = 0, retries = 0

        func send(_ delta: Delta, from origin: Int) {
            for other in nodes.indices where other != origin { inFlight.append((other, delta)) }
        }
        for _ in 0..<3_000 {
            now += UInt64.random(in: 0...40, using: &random)
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<28:
                let author: UserID = Bool.random(using: &random) ? "t" : "t2"
                counters[author]! += 1
                let target = students.randomElement(using: &random)!
                let amount = Int32.random(in: 1...5, using: &random)
                let skew = UInt64.random(in: 0...300, using: &random)
                let write = Self.reward(target, amount, counter: counters[author]!, issued: now - skew, author: author)
                issued.append(Issued(write: write, target: target, amount: amount))
                let at = Int.random(in: 0..<nodes.count, using: &random)
                if case let .success(delta) = nodes[at].write(write, now: now) {
                    acknowledged[RewardKey(author: author, authorCounter: write.authorCounter)] = (target, amount)
                    send(delta, from: at)
                }
            case 28..<36:
                // A client whose acknowledgement was lost retries through some node.
                guard let old = issued.suffix(40).randomElement(using: &random) else { break }
                let at = Int.random(in: 0..<nodes.count, using: &random)
                let key = RewardKey(author: old.write.author, authorCounter: old.write.authorCounter)
                if nodes[at].room.users[old.target]?.rewards[key] != nil { break }   // the node answers DUPLICATE
                if case let .success(delta) = nodes[at].write(old.write, now: now) {
                    retries += 1
                    acknowledged[key] = (old.target, old.amount)
                    send(delta, from: at)
                }
            case 36..<66:
                guard !inFlight.isEmpty else { break }
                let index = Int.random(in: 0..<inFlight.count, using: &random)
                let message = inFlight.remove(at: index)
                if Int.random(in: 0..<100, using: &random) < 12 { break }   // lost; a later patch repairs it
                _ = nodes[message.to].room.apply(message.delta)
            case 66..<78:
                let from = Int.random(in: 0..<nodes.count, using: &random)
                for other in nodes.indices where other != from {
                    nodes[other].heard(from: nodes[from].id, sentAt: now, ownSequence: nodes[from].sequence)
                }
            case 78..<90:
                let at = Int.random(in: 0..<nodes.count, using: &random)
                let threshold = Bool.random(using: &random) ? 1 : RoomState.rewardFoldThreshold
                for student in students {
                    if let fold = nodes[at].fold(student, peers: ids, now: now, threshold: threshold) {
                        folds += 1
                        send(fold, from: at)
                    }
                }
            case 90..<97:
                let from = Int.random(in: 0..<nodes.count, using: &random)
                let to = (from + Int.random(in: 1..<nodes.count, using: &random)) % nodes.count
                _ = nodes[to].room.merge(nodes[from].room.missing(since: nodes[to].room.seen))
            default:
                let from = Int.random(in: 0..<nodes.count, using: &random)
                let to = (from + Int.random(in: 1..<nodes.count, using: &random)) % nodes.count
                _ = nodes[to].room.merge(nodes[from].room.snapshot())
            }
        }
        func heal() {
            for message in inFlight { _ = nodes[message.to].room.apply(message.delta) }
            inFlight.removeAll()
            for _ in 0..<2 {
                for from in nodes.indices {
                    for to in nodes.indices where to != from { _ = nodes[to].room.merge(nodes[from].room.missing(since: nodes[to].room.seen)) }
                }
            }
        }
        func expectCounted(_ moment: String) {
            var expected: [UserID: Int64] = [:]
            for (target, amount) in acknowledged.values { expected[target, default: 0] += Int64(amount) }
            for (index, node) in nodes.enumerated() {
                #expect(node.room == nodes[0].room, "node \(index + 1) differs from node 1 \(moment); \(replay)")
                for student in students {
                    #expect(node.room.users[student]?.rewardTotal ?? 0 == expected[student] ?? 0,
                            "node \(index + 1): \(student) counts \(node.room.users[student]?.rewardTotal ?? 0), acknowledged \(expected[student] ?? 0) \(moment); \(replay)")
                }
            }
        }
        heal()
        expectCounted("after the heal")
        #expect(folds >= 5, "only \(folds) folds: the schedule does not test folding; \(replay)")
        // Quiet: everyone hears everyone after the window, and folds what it can.
        now += 10 * Self.window
        for round in 0..<3 {
            now += 2 * Self.window
            for from in nodes.indices {
                for other in nodes.indices where other != from { nodes[other].heard(from: nodes[from].id, sentAt: now, ownSequence: nodes[from].sequence) }
            }
            now += 10
            for at in nodes.indices {
                for student in students {
                    if let fold = nodes[at].fold(student, peers: ids, now: now + UInt64(round), threshold: 1) { send(fold, from: at) }
                }
            }
            heal()
        }
        expectCounted("at rest")
        for student in students {
            let left = nodes[0].room.users[student]?.rewards.count ?? 0
            #expect(left == 0, "\(student) keeps \(left) reward records at rest (retries \(retries)); \(replay)")
        }
    }
}
