@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport
import Synchronization

/// Whether one room's heavy work holds up another room's writes (the node's state
/// lock). A node with a store holds a lecture hall (100,000 users; 20,000 with
/// --quick) and a small room. One thread writes to the small room as fast as
/// acknowledgements come, timing each; a second writes to the hall every 20 ms in
/// every phase; a third, over and over, does nothing (the baseline, same run), stores
/// the hall's snapshot, or cuts the hall's join snapshot (what each joining client
/// gets). Both are made outside the state lock from a copy of the room taken under it,
/// so the small room's writes should not wait for them (they did: the lock was held for
/// the whole compaction and the whole cut); what they still pay is the copy of the
/// hall's user table that a hall write makes under the lock while a copy is held.
enum LockScopeBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let users = quick ? 20_000 : 100_000
        let seconds: UInt64 = quick ? 2 : 5
        let directory = "/tmp/homeroom-bench-store-\(getpid())"
        defer { _ = system("rm -rf '\(directory)'") }
        guard let node = storedBenchNode(name: "store-bench", directory: directory) else {
            fputs("store: the node did not start\n", stderr)
            return
        }
        defer { node.stop() }
        for index in 0..<users {
            node.join(room: "hall", user: "seat-\(index)", role: .student, session: "s\(index)", name: "Seat \(index)")
        }
        node.join(room: "desk", user: "teacher", role: .teacher, session: "t", name: "Teacher")
        node.storeSnapshots()

        let baseline = phase(node, seconds: seconds, work: .none)
        let snapshots = phase(node, seconds: seconds, work: .storeSnapshot)
        let cuts = phase(node, seconds: seconds, work: .joinCut)
        let hall = "\(users / 1000)k-user-room"
        for (name, result) in [("small-room-writes-baseline", baseline), ("small-room-writes-while-\(hall)-snapshots", snapshots),
                               ("small-room-writes-while-\(hall)-join-cuts", cuts)] {
            let sorted = result.latencies.sorted()
            guard !sorted.isEmpty else { continue }
            let contended = result.works > 0
            emit(BenchRow(suite: "lock-scope", name: name, n: sorted.count, opsPerSecond: Double(sorted.count) / Double(seconds),
                          p50Micros: sorted[sorted.count / 2], p99Micros: percentile(sorted, 99),
                          seconds: Double(seconds),
                          ratioVsRaw: contended ? percentile(sorted, 99) / percentile(baseline.latencies.sorted(), 99) : nil,
                          target: contended ? "p99 within 3x of the baseline" : nil,
                          note: "acknowledged writes to a 1-user room, one at a time; max \(Int(sorted.last!)) us; ratio is p99 vs the baseline row"))
        }
        for (name, result, what) in [("snapshot-\(hall)", snapshots, "encode and store of one snapshot"),
                                     ("join-cut-\(hall)", cuts, "one join snapshot cut (no encode)")] where result.works > 0 {
            emit(BenchRow(suite: "lock-scope", name: name, n: result.works,
                          bytesPerOp: result.bytes > 0 ? Double(result.bytes) / Double(users) : nil,
                          p50Micros: result.workMicros / Double(result.works),
                          seconds: result.workMicros / 1e6,
                          note: "\(what) (p50 column: the mean)\(result.bytes > 0 ? "; bytes per user of the stored snapshot" : "")"))
        }
    }

    enum Work { case none, storeSnapshot, joinCut }

    struct Phase {
        var latencies: [Double] = []
        var works = 0
        var workMicros = 0.0
        var bytes = 0
    }

    private static func percentile(_ sorted: [Double], _ percent: Int) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * percent / 100)]
    }

    /// The small room's writes for `seconds`, while the hall is written every 20 ms and
    /// a third thread does `work` over and over.
    private static func phase(_ node: ClusterNode, seconds: UInt64, work: Work) -> Phase {
        let running = Atomic<Bool>(true)
        let background = Mutex(Phase())
        let hallWriter = RawThread {
            var counter: UInt64 = UInt64(WallClock.nowMillis()) * 1_000
            while running.load(ordering: .acquiring) {
                counter += 1
                _ = node.submit(room: "hall", Write(author: "seat-1", authorRole: .student, authorCounter: counter,
                                                     operation: .setHand(user: "seat-1", raised: counter & 1 == 0)))
                usleep(20_000)
            }
        }
        let worker = RawThread {
            while running.load(ordering: .acquiring) {
                let started = monotonicNanos()
                var bytes = 0
                switch work {
                case .none:
                    usleep(1_000)
                    continue
                case .storeSnapshot:
                    let stats = node.storeSnapshots()
                    guard stats.rooms > 0 else { usleep(1_000); continue }
                    bytes = stats.bytes
                case .joinCut:
                    _ = node.snapshot(room: "hall", visibleTo: "latecomer")
                }
                let micros = Double(monotonicNanos() - started) / 1000
                background.withLock { phase in
                    phase.works += 1
                    phase.workMicros += micros
                    phase.bytes = max(phase.bytes, bytes)
                }
            }
        }
        var result = Phase()
        let deadline = WallClock.monotonicMillis() + seconds * 1000
        var counter: UInt64 = 0
        while WallClock.monotonicMillis() < deadline {
            counter += 1
            let started = monotonicNanos()
            let ack = node.submit(room: "desk", Write(author: "teacher", authorRole: .teacher, authorCounter: counter,
                                                       operation: .setRoomProperty(key: "k", value: Array("\(counter)".utf8), cause: "bench")))
            if ack.status == .accepted { result.latencies.append(Double(monotonicNanos() - started) / 1000) }
        }
        running.store(false, ordering: .releasing)
        hallWriter.join()
        worker.join()
        let other = background.withLock { $0 }
        result.works = other.works
        result.workMicros = other.workMicros
        result.bytes = other.bytes
        return result
    }
}
