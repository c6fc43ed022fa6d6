@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport
import Synchronization

/// Acknowledged writes while the store snapshots a large room. A node with a store
/// holds a lecture hall (100,000 users; 20,000 with --quick) and a small room; one
/// thread writes to the small room as fast as acknowledgements come, timing each,
/// while another keeps the hall dirty and stores its snapshot over and over. The
/// baseline is the same two threads in the same run with no snapshots. The snapshot
/// is encoded and stored outside the node's state lock, so the small room's writes
/// should not wait for it (they did: the lock was held for the whole compaction,
/// the `store/snapshot` row's time per snapshot).
enum StoreBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let users = quick ? 20_000 : 100_000
        let seconds: UInt64 = quick ? 2 : 5
        let directory = "/tmp/homeroom-bench-store-\(getpid())"
        defer { _ = system("rm -rf '\(directory)'") }
        var config = NodeConfig(name: "store-bench", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0")
        config.dataDirectory = directory
        config.writesPerSecond = 10_000_000
        config.writeBytesPerSecond = 1 << 40
        config.joinsPerSecond = 10_000_000
        guard let node = try? ClusterNode(config: config, logger: Logger(label: "bench", level: .error)) else {
            fputs("store: the node did not start\n", stderr)
            return
        }
        defer { node.stop() }
        for index in 0..<users {
            node.join(room: "hall", user: "seat-\(index)", role: .student, session: "s\(index)", name: "Seat \(index)")
        }
        node.join(room: "desk", user: "teacher", role: .teacher, session: "t", name: "Teacher")
        node.storeSnapshots()

        let baseline = phase(node, seconds: seconds, snapshotting: false)
        let contended = phase(node, seconds: seconds, snapshotting: true)
        for (name, result) in [("small-room-writes-no-snapshots", baseline), ("small-room-writes-while-\(users / 1000)k-user-room-snapshots", contended)] {
            let sorted = result.latencies.sorted()
            guard !sorted.isEmpty else { continue }
            emit(BenchRow(suite: "store", name: name, n: sorted.count, opsPerSecond: Double(sorted.count) / Double(seconds),
                          p50Micros: sorted[sorted.count / 2], p99Micros: sorted[min(sorted.count - 1, sorted.count * 99 / 100)],
                          seconds: Double(seconds),
                          ratioVsRaw: result.snapshots > 0 ? percentile(sorted, 99) / percentile(baseline.latencies.sorted(), 99) : nil,
                          target: result.snapshots > 0 ? "p99 within 3x of no snapshots" : nil,
                          note: "acknowledged writes to a 1-user room, one at a time; max \(Int(sorted.last!)) us; ratio is p99 vs the no-snapshot row"))
        }
        if contended.snapshots > 0 {
            emit(BenchRow(suite: "store", name: "snapshot-\(users / 1000)k-user-room", n: contended.snapshots,
                          bytesPerOp: Double(contended.snapshotBytes) / Double(users),
                          p50Micros: contended.snapshotMicros / Double(contended.snapshots),
                          seconds: contended.snapshotMicros / 1e6,
                          note: "encode and store of one snapshot (p50 column: the mean); bytes per user of the stored snapshot"))
        }
    }

    struct Phase {
        var latencies: [Double] = []
        var snapshots = 0
        var snapshotMicros = 0.0
        var snapshotBytes = 0
    }

    private static func percentile(_ sorted: [Double], _ percent: Int) -> Double {
        sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * percent / 100)]
    }

    /// The small room's writes for `seconds`, while the other thread writes to the hall
    /// and (if `snapshotting`) stores snapshots between its writes.
    private static func phase(_ node: ClusterNode, seconds: UInt64, snapshotting: Bool) -> Phase {
        let running = Atomic<Bool>(true)
        let background = Mutex(Phase())
        let thread = RawThread {
            var counter: UInt64 = 1_000_000
            while running.load(ordering: .acquiring) {
                counter += 1
                _ = node.submit(room: "hall", Write(author: "seat-1", authorRole: .student, authorCounter: counter,
                                                     operation: .setHand(user: "seat-1", raised: counter & 1 == 0)))
                if snapshotting {
                    let started = monotonicNanos()
                    let stats = node.storeSnapshots()
                    let micros = Double(monotonicNanos() - started) / 1000
                    background.withLock { phase in
                        phase.snapshots += stats.rooms
                        phase.snapshotMicros += micros
                        phase.snapshotBytes = max(phase.snapshotBytes, stats.bytes)
                    }
                } else {
                    usleep(1_000)
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
        thread.join()
        let other = background.withLock { $0 }
        result.snapshots = other.snapshots
        result.snapshotMicros = other.snapshotMicros
        result.snapshotBytes = other.snapshotBytes
        return result
    }
}
