import Glibc
import Testing
@testable import HomeroomCore

/// The room-wide bound on property bytes (`RoomState.maxPropertyBytesPerRoom`, issue 39):
/// admission reads a running total, so that total must stay what a full count gives
/// through every way a register changes, on every replica.
@Suite struct PropertyBytesTests {
    @Test func aWriteThatGrowsTheRoomPastTheBoundIsRefusedAndOneThatShrinksItIsTaken() throws {
        var node = LockTests.Node("n1")
        let now = LockTests.now
        _ = try node.write("tom", .teacher, .joinSession(user: "tom", session: "tom-1", name: "tom", role: .teacher, host: node.sequencer.replica,
                                                         incarnation: 1), at: now).get()
        _ = try node.write("tom", .teacher, .setRoomProperty(key: "big", value: [UInt8](repeating: 7, count: 1_000), cause: "c"), at: now + 1).get()
        #expect(node.room.propertyBytes == 3 + 1_000 + 1)
        // Pretend the rest of the room is full: the running total is what admission reads.
        node.room.propertyBytes = RoomState.maxPropertyBytesPerRoom - 10
        func code(_ operation: Operation, at offset: UInt64) -> String? { node.refusalCode(node.write("tom", .teacher, operation, at: now + offset)) }
        #expect(code(.setRoomProperty(key: "new", value: [UInt8](repeating: 1, count: 8), cause: ""), at: 2) == "limit-reached",
                "3 + 8 bytes do not fit in the 10 left")
        #expect(code(.setRoomProperty(key: "big", value: [UInt8](repeating: 7, count: 1_009), cause: "c"), at: 3) == nil, "9 more bytes fit")
        #expect(code(.setRoomProperty(key: "big", value: [UInt8](repeating: 7, count: 1_011), cause: "c"), at: 4) == "limit-reached")
        #expect(code(.setRoomProperty(key: "new", value: [1], cause: ""), at: 5) == "limit-reached", "a small new key grows the room too")
        #expect(code(.setRoomProperty(key: "big", value: [1], cause: "c"), at: 6) == nil, "a smaller value is taken")
        #expect(code(.setRoomProperty(key: "new", value: [1], cause: ""), at: 7) == nil, "and frees room for a new key")
        #expect(code(.setRoomProperty(key: "big", value: nil, cause: ""), at: 8) == nil, "a delete is taken")
    }

    /// A seeded random run over three replicas: local writes (room and user properties,
    /// deletes, values growing and shrinking), deltas delivered out of order and twice,
    /// patches, whole snapshots and a reload; after every step each replica's running
    /// total equals a full count, and after the heal the replicas agree.
    @Test func theRunningTotalIsAFullCountAfterRandomWritesAndMerges() {
        let replay = getenv("HOMEROOM_SEED").flatMap { UInt64(String(cString: $0)) }
        let first = replay ?? 20_260_039
        let count = replay == nil ? 150 : 1
        var totals = (writes: 0, deliveries: 0, merges: 0, reloads: 0)
        for seed in first..<(first + UInt64(count)) {
            let problems = Self.run(seed: seed, totals: &totals)
            if !problems.isEmpty {
                Issue.record("seed \(seed): \(problems.joined(separator: "; "))\nreplay: HOMEROOM_SEED=\(seed) swift test --filter PropertyBytesTests")
                return
            }
        }
        print("PropertyBytesTests: \(count) schedules: \(totals)")
        #expect(totals.writes > count * 20 && totals.deliveries > count * 10 && totals.merges > count * 10 && totals.reloads > 0, "\(totals)")
    }

    static func run(seed: UInt64, totals: inout (writes: Int, deliveries: Int, merges: Int, reloads: Int)) -> [String] {
        var rng = SplitMix64(seed: seed)
        var nodes = [LockTests.Node("n1"), LockTests.Node("n2"), LockTests.Node("n3")]
        let users: [(UserID, Role)] = [("tom", .teacher), ("s0", .student), ("s1", .student), ("s2", .student)]
        let keys = ["a", "bb", "ccc", "dddd"]
        let causes = ["", "c", "because"]
        var deltas: [Delta] = []
        var now = LockTests.now
        var problems: [String] = []
        func check(_ step: Int, _ what: String) {
            for (index, node) in nodes.enumerated() where node.room.propertyBytes != node.room.recountPropertyBytes() {
                problems.append("step \(step) (\(what)): n\(index + 1) keeps \(node.room.propertyBytes) property bytes, counts \(node.room.recountPropertyBytes())")
            }
        }
        // Each user joins at one replica: the others learn of it, with its properties, from a delta or a patch.
        for (index, (user, role)) in users.enumerated() {
            now += 1
            let node = index % nodes.count
            if case let .success(delta) = nodes[node].write(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role,
                                                                                     host: nodes[node].sequencer.replica, incarnation: 1), at: now) {
                deltas.append(delta)
            }
        }
        for step in 0..<120 where problems.isEmpty {
            now += UInt64.random(in: 1...50, using: &rng)
            let what: String
            switch Int.random(in: 0..<100, using: &rng) {
            case 0..<50:
                what = "write"
                let node = Int.random(in: 0..<nodes.count, using: &rng)
                let (author, role) = users.randomElement(using: &rng)!
                guard nodes[node].room.users[author]?.isKnown == true else { continue }
                let key = keys.randomElement(using: &rng)!
                let value: [UInt8]? = Int.random(in: 0..<6, using: &rng) == 0 ? nil : [UInt8](repeating: 1, count: Int.random(in: 0...40, using: &rng))
                let cause = causes.randomElement(using: &rng)!
                let operation: Operation = role == .teacher && Bool.random(using: &rng)
                    ? .setRoomProperty(key: key, value: value, cause: cause)
                    : .setUserProperty(user: author, key: key, value: value, cause: cause)
                if case let .success(delta) = nodes[node].write(author, role, operation, at: now) {
                    deltas.append(delta)
                    totals.writes += 1
                }
            case 50..<75:
                // A delta reaches another replica directly: late, early, or again.
                what = "delivery"
                guard let delta = deltas.randomElement(using: &rng) else { continue }
                let node = Int.random(in: 0..<nodes.count, using: &rng)
                _ = nodes[node].room.apply(delta)
                totals.deliveries += 1
            case 75..<95:
                what = "patch"
                let x = Int.random(in: 0..<nodes.count, using: &rng), y = Int.random(in: 0..<nodes.count, using: &rng)
                guard x != y else { continue }
                let patch = nodes[x].room.missing(since: nodes[y].room.seen)
                if patch.propertyBytes != patch.recountPropertyBytes() { problems.append("step \(step): a patch of n\(x + 1) counts wrong") }
                nodes[y].room.merge(patch)
                totals.merges += 1
            default:
                // A replica rebuilt from another's whole snapshot (a node loading its store, a join).
                what = "reload"
                let x = Int.random(in: 0..<nodes.count, using: &rng), y = Int.random(in: 0..<nodes.count, using: &rng)
                var reloaded = RoomState(roomID: "r")
                reloaded.merge(nodes[x].room.snapshot())
                reloaded.merge(nodes[y].room.missing(since: .empty))
                nodes[y].room = reloaded
                totals.reloads += 1
            }
            check(step, what)
        }
        guard problems.isEmpty else { return problems }
        for _ in 0..<2 {
            for x in nodes.indices { for y in nodes.indices where x != y { nodes[y].room.merge(nodes[x].room.missing(since: nodes[y].room.seen)) } }
        }
        check(-1, "heal")
        if nodes.contains(where: { $0.room != nodes[0].room }) { problems.append("replicas differ after the heal") }
        return problems
    }
}
