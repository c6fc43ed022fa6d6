import Foundation
import HomeroomCore
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// Locks against two `homeroom node` processes: one holder at a time across nodes, a
/// waiting acquisition that gets the lock when it is released, the CLI's view of it, and
/// a frozen node whose holder loses the lock while its guarded writes lose to the new
/// holder's after it thaws.
@Suite(.serialized) struct LockProcessTests {
    static func client(_ user: String, _ role: Role, on node: NodeChild) throws -> RoomClient {
        var options = RoomClient.Options()
        options.syncIntervalMillis = 200
        let (logger, _) = Logger.capturing(label: user, level: .error)
        let client = RoomClient(room: "locks", user: user, role: role, name: user, endpoints: [NodeEndpoint(node.listen)],
                                options: options, logger: logger)
        try client.connect()
        return client
    }

    static func code(_ body: () throws(ClientError) -> Void) -> String? {
        do { try body(); return nil } catch {
            if case let .refused(code, _) = error { return code }
            return "\(error)"
        }
    }

    @Test func oneHolderAcrossNodesAndAWaitingAcquisitionGetsTheLockOnRelease() throws {
        let first = try NodeChild(name: "locks-a")
        let second = try NodeChild(name: "locks-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        let ana = try Self.client("ana", .assistant, on: first)
        let ben = try Self.client("ben", .assistant, on: second)
        defer { ana.close(); ben.close() }
        let grant = try ana.acquireLock("grading", ttlSeconds: 10)
        #expect(grant.fence >> 24 == 1 && grant.fence & 0xFF_FFFF == UInt64(ReplicaID.nameHash(of: "locks-a")))
        #expect(eventually(10) { ben.replica.lockHolding("grading", atMillis: WallClock.nowMillis())?.holder == "ana" })
        #expect(Self.code { () throws(ClientError) in _ = try ben.acquireLock("grading") } == "lock-held")
        // Guarded writes: the holder's with its fence; nobody's without one.
        _ = try ana.setRoomProperty("grades", value: Array("draft".utf8), fence: grant.lockFence)
        #expect(eventually(10) { ben.replica.properties["grades"]?.value.fence == grant.lockFence })
        #expect(Self.code { () throws(ClientError) in _ = try ben.setRoomProperty("grades", value: Array("x".utf8)) } == "fence-required")
        // Ben waits for it; ana lets go; ben gets the next fence.
        let waited = LockedBox<Result<LockGrantResult, ClientError>?>(nil)
        let waiter = Thread {
            do throws(ClientError) { waited.value = .success(try ben.acquireLock("grading", ttlSeconds: 10, waitMillis: 15_000)) } catch { waited.value = .failure(error) }
        }
        waiter.start()
        Thread.sleep(forTimeInterval: 0.5)
        try ana.releaseLock("grading")
        #expect(eventually(20) { waited.value != nil })
        let benGrant = try #require(try waited.value?.get())
        #expect(benGrant.fence > grant.fence && benGrant.fence & 0xFF_FFFF == UInt64(ReplicaID.nameHash(of: "locks-b")))
        #expect(eventually(10) { ana.replica.lockHolding("grading", atMillis: WallClock.nowMillis())?.fence == benGrant.fence })
        let stale = Self.code { () throws(ClientError) in _ = try ana.setRoomProperty("grades", value: Array("late".utf8), fence: grant.lockFence) }
        #expect(stale == "lock-not-held" || stale == "fence-stale", "\(stale ?? "accepted")")
        // The CLI shows the same holder and fence from either node.
        for node in [first, second] {
            let result = try CLI.run(["lock", "--json", "--room", "locks", "--node", node.listen])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout) \(result.stderr)")
            let locks = object["locks"] as? [[String: Any]] ?? []
            #expect(locks.count == 1 && locks.first?["holder"] as? String == "ben" && (locks.first?["fence"] as? NSNumber)?.uint64Value == benGrant.fence, "\(object)")
        }
        let revoke = try CLI.run(["lock", "revoke", "grading", "--room", "locks", "--node", first.listen])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(eventually(10) { ben.replica.lockHolding("grading", atMillis: WallClock.nowMillis()) == nil })
    }

    /// A node is frozen (SIGSTOP): its holder's session ends on the other node once that
    /// node declares it down, the lock lapses after its TTL, and another user takes it and
    /// writes under the new fence. Whatever the thawed node admitted from its holder in
    /// the meantime, both nodes end with the new holder's value.
    @Test func aFrozenHoldersGuardedWritesLoseToTheNextHoldersAfterTheThaw() throws {
        let first = try NodeChild(name: "fence-a")
        let second = try NodeChild(name: "fence-b", seeds: [first.listen])
        defer { second.signal(SIGCONT); second.stop(); first.stop() }
        let ana = try Self.client("ana", .assistant, on: first)
        let ben = try Self.client("ben", .assistant, on: second)
        defer { ana.close(); ben.close() }
        #expect(eventually(10) { ana.replica.isOnline("ben") })
        let benGrant = try ben.acquireLock("grading", ttlSeconds: 10)
        _ = try ben.setRoomProperty("grades", value: Array("ben-1".utf8), fence: benGrant.lockFence)
        #expect(eventually(10) { ana.replica.properties["grades"]?.value.bytes == Array("ben-1".utf8) })
        second.signal(SIGSTOP)
        // Ben's node is declared down, ben goes offline, and the lock lapses TTL after the grant.
        #expect(eventually(20) { !ana.replica.isOnline("ben") }, "ben never went offline at the first node")
        var anaGrant: LockGrantResult?
        let deadline = Date().addingTimeInterval(25)
        while anaGrant == nil && Date() < deadline {
            anaGrant = try? ana.acquireLock("grading", ttlSeconds: 10)
            if anaGrant == nil { Thread.sleep(forTimeInterval: 0.2) }
        }
        let grant = try #require(anaGrant, "the lock never lapsed at the first node")
        #expect(grant.fence > benGrant.fence)
        _ = try ana.setRoomProperty("grades", value: Array("ana-1".utf8), fence: grant.lockFence)
        // Thaw: ben's node still thinks ben holds the lock, until it hears otherwise.
        second.signal(SIGCONT)
        var outcomes: [String] = []
        for index in 0..<5 {
            outcomes.append(Self.code { () throws(ClientError) in
                _ = try ben.setRoomProperty("grades", value: Array("ben-late-\(index)".utf8), fence: benGrant.lockFence)
            } ?? "accepted")
        }
        print("LockProcessTests: the old holder's guarded writes through the thawed node: \(outcomes)")
        #expect(eventually(20) {
            [ana, ben].allSatisfy { $0.replica.properties["grades"]?.value.bytes == Array("ana-1".utf8)
                && $0.replica.lockHolding("grading", atMillis: WallClock.nowMillis())?.fence == grant.fence }
        }, "ana's guarded write did not stand on both nodes: \(String(decoding: ben.replica.properties["grades"]?.value.bytes ?? [], as: UTF8.self))")
    }
}

/// A value shared with a thread, behind a lock.
private final class LockedBox<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
