@preconcurrency import Glibc
import HomeroomContext
import HomeroomNode
import Synchronization
import Testing

/// Records lock events.
final class LockRecorder: LockHandler, Sendable {
    let names = Mutex<[[String]]>([])
    func onLocksUpdated(names: [String]) { self.names.withLock { $0.append(names) } }
    var count: Int { names.withLock { $0.count } }
}

/// The lock context against a real in-process cluster of two nodes.
@Suite(.serialized) struct LockContextTests {
    func code(_ body: () throws(ContextError) -> Void) -> String? {
        do { try body(); return nil } catch { return error.code }
    }

    @Test func aLockIsHeldByOneUserGuardsItsKeyAndEveryPoolIsTold() throws {
        let cluster = try ContextCluster(size: 2, label: "lock-ctx")
        #expect(cluster.meshed())
        let ada = try cluster.joined("ada", .teacher, node: 0, room: "locks")
        let bob = try cluster.pool("bob", .assistant, node: 1, room: "locks")
        let bobHears = LockRecorder()
        bob.lock.registerEventHandler(bobHears)
        try bob.room.join()

        let grant = try ada.lock.acquire("exam", ttlSeconds: 20)
        #expect(grant.fence > 0 && ada.lock.lock("exam")?.holder == "ada")
        #expect(eventually { bobHears.count >= 1 && bob.lock.lock("exam")?.fence == grant.fence })
        #expect(code { () throws(ContextError) in try bob.lock.acquire("exam") } == "lock-held")
        #expect(code { () throws(ContextError) in try bob.lock.acquire("exam", ttlSeconds: 5) } == ContextError.invalidArgument)
        try ada.room.updateProperty("paper", value: "v1", fence: grant.lockFence)
        #expect(eventually { bob.room.property("paper")?.value == "v1" })
        #expect(code { () throws(ContextError) in try bob.room.updateProperty("paper", value: "v2") } == "fence-required")
        // Bob waits; ada lets go; bob's pool holds it with a larger fence and may write.
        let waited = Mutex<LockGrantInfo?>(nil)
        let done = Mutex(false)
        var thread = pthread_t()
        final class Job: @unchecked Sendable { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
        let job = Unmanaged.passRetained(Job {
            waited.withLock { $0 = try? bob.lock.acquire("exam", waitMillis: 10_000) }
            done.withLock { $0 = true }
        }).toOpaque()
        #expect(pthread_create(&thread, nil, { raw in Unmanaged<Job>.fromOpaque(raw!).takeRetainedValue().body(); return nil }, job) == 0)
        usleep(300_000)
        try ada.lock.release("exam")
        #expect(eventually(15) { done.withLock { $0 } })
        pthread_join(thread, nil)
        let next = try #require(waited.withLock { $0 })
        #expect(next.fence > grant.fence)
        try bob.room.updateProperty("paper", value: "v2", fence: next.lockFence)
        #expect(code { () throws(ContextError) in try ada.room.updateProperty("paper", value: "v3", fence: grant.lockFence) } != nil)
        // A teacher revokes; everyone sees the lock free.
        #expect(eventually { ada.lock.lock("exam")?.holder == "bob" })
        try ada.lock.revoke("exam")
        #expect(eventually { bob.lock.lock("exam")?.holder == nil && bob.lock.locks.count == 1 })
    }
}
