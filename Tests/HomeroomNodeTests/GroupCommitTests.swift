import Foundation
import HomeroomCore
import Synchronization
import Testing
@testable import HomeroomNode

/// Group commit (`GroupCommit`) and the write pipeline that stores outside the state lock.
@Suite struct GroupCommitTests {
    /// Writers on many threads, with a commit slow enough that they meet: each entry is
    /// committed in exactly one batch, batches do form, and every writer is told what
    /// happened to its own entry (a poisoned one fails; the others in its batch do not).
    @Test func everyWriterLearnsTheFateOfItsOwnBatch() {
        let group = GroupCommit<Int>()
        let batches = Mutex<[[Int]]>([])
        let told = Mutex<[Int: Bool]>([:])
        let threads = 8, perThread = 40
        let poisoned: Set<Int> = [17, 123, 250]
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                for index in 0..<perThread {
                    let entry = thread * perThread + index
                    var stored = true
                    do throws(StoreError) {
                        try group.submit(entry) { batch in
                            batches.withLock { $0.append(batch) }
                            usleep(300)
                            // Each entry's own fate: the poisoned ones fail, the others are stored.
                            return batch.map { poisoned.contains($0) ? .failure(StoreError(code: 10, message: "disk I/O error", operation: "test", path: "-")) : .success(()) }
                        }
                    } catch {
                        stored = false
                    }
                    told.withLock { $0[entry] = stored }
                }
                done.leave()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 120) == .success, "the writers must all return")
        let made = batches.withLock { $0 }
        let outcomes = told.withLock { $0 }
        let all = made.flatMap { $0 }
        #expect(all.sorted() == Array(0..<threads * perThread), "every entry in exactly one batch")
        #expect(made.count < threads * perThread, "writers that meet must share a commit (\(made.count) batches)")
        for entry in 0..<threads * perThread {
            #expect(outcomes[entry] == !poisoned.contains(entry), "entry \(entry) was told \(String(describing: outcomes[entry]))")
        }
        #expect(group.entries.load(ordering: .relaxed) == UInt64(threads * perThread))
        #expect(group.batches.load(ordering: .relaxed) == UInt64(made.count))
    }

    /// With `--sync full`, writers in different rooms of one node share commits: the
    /// store takes a write outside the state lock (under its room's gate only). Were the
    /// lock held across the append, every write would be its own commit. Every
    /// acknowledged write is there after a restart.
    @Test func writersInDifferentRoomsShareCommitsAndEveryAcknowledgedWriteSurvives() throws {
        let directory = StoreTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var config = NodeConfig(name: "group", listen: "inproc://group-rep-\(UInt32.random(in: 0...UInt32.max))",
                                publish: "inproc://group-pub-\(UInt32.random(in: 0...UInt32.max))")
        config.dataDirectory = directory
        config.synchronousFull = true
        let (logger, _) = Logger.capturing(label: "group", level: .error)
        var node: ClusterNode? = try ClusterNode(config: config, logger: logger)
        let rooms = 8, perRoom = 60
        let acknowledged = Mutex<[String: [UserID]]>([:])
        let done = DispatchGroup()
        for room in 0..<rooms {
            done.enter()
            Thread { [node] in
                for index in 0..<perRoom {
                    let user: UserID = "u\(index)"
                    if node!.join(room: "room-\(room)", user: user, role: .student, session: "s\(index)", name: "U \(index)").status == .accepted {
                        acknowledged.withLock { $0["room-\(room)", default: []].append(user) }
                    }
                }
                done.leave()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 300) == .success, "the writers must all return")
        let counts = try #require(node!.state.withLock { $0.store }).commitCounts
        #expect(counts.entries >= UInt64(rooms * perRoom))
        #expect(counts.commits < counts.entries, "no two rooms' writes were ever committed together: \(counts)")
        // A crash: the store is let go with no final compaction.
        node!.state.withLock { $0.store = nil }
        node!.stop()
        node = nil
        let written = acknowledged.withLock { $0 }
        #expect(written.values.map(\.count).reduce(0, +) == rooms * perRoom)
        let again = try ClusterNode(config: config, logger: logger)
        defer { again.stop() }
        for (room, users) in written {
            let state = try #require(again.room(room))
            let missing = users.filter { state.users[$0] == nil }
            #expect(missing.isEmpty, "acknowledged joins lost in \(room): \(missing.prefix(5))")
        }
    }
}

/// The window between a write's store and its commit, held open on purpose.
@Suite(.serialized) struct WriteGateTests {
    /// A compaction that starts while a write is stored but not yet applied must wait
    /// for it (the room's gate): otherwise it reads a log position that covers the write
    /// with a state that lacks it, trims the write from the log, and a crash then loses
    /// an acknowledged write.
    @Test func aCompactionWaitsForAWriteBetweenItsStoreAndItsCommit() throws {
        let directory = StoreTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: ClusterNode? = try StoreTests.node("gate", directory)
        let node = first!
        #expect(node.join(room: "desk", user: "t", role: .teacher, session: "t1", name: "T").status == .accepted)
        let stored = DispatchSemaphore(value: 0)
        let compacted = DispatchSemaphore(value: 0)
        let compactedDuringWindow = Atomic<Bool>(false)
        node.afterStoreHook.withLock {
            $0 = { room in
                guard room == "desk" else { return }
                stored.signal()
                // Give a compaction that does not wait every chance to finish now.
                if compacted.wait(timeout: .now() + 1.5) == .success { compactedDuringWindow.store(true, ordering: .relaxed) }
            }
        }
        let compaction = Thread {
            stored.wait()
            _ = node.compact(room: "desk")
            compacted.signal()
        }
        compaction.start()
        #expect(node.join(room: "desk", user: "late", role: .student, session: "l1", name: "Late").status == .accepted)
        node.afterStoreHook.withLock { $0 = nil }
        let duringWindow = compactedDuringWindow.load(ordering: .relaxed)
        let finished = duringWindow || compacted.wait(timeout: .now() + 10) == .success
        #expect(finished, "the compaction must end once the write is applied")
        #expect(!duringWindow, "the compaction ran while the write was stored and not applied")
        // A crash: nothing more reaches the store.
        node.state.withLock { $0.store = nil }
        node.stop()
        first = nil
        let again = try StoreTests.node("gate", directory)
        defer { again.stop() }
        #expect(again.room("desk")?.users["late"] != nil, "the acknowledged join was lost")
    }
}
