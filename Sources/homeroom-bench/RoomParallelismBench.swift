@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport
import Synchronization

/// Whether rooms wait for each other's store commits. A node with a store on disk and
/// `--sync full` (an fsync per commit) takes acknowledged writes from in-process writers
/// (no network), each writing as fast as its acknowledgements come: one writer in one
/// room (the baseline, same run), eight writers in eight rooms, and eight writers in one
/// room. Rooms that do not wait for each other share commits, so eight rooms take more
/// writes per second than one; eight writers in one room take one write at a time (a
/// room's writes are numbered in order), so that row stays near the baseline.
enum RoomParallelismBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let seconds: UInt64 = quick ? 1 : 4
        let writers = 8
        // On disk, not tmpfs: the point is the fsync.
        let directory = "/var/tmp/homeroom-bench-rooms-\(getpid())"
        defer { _ = system("rm -rf '\(directory)'") }
        guard let node = storedBenchNode(name: "rooms-bench", directory: directory, synchronousFull: true) else {
            fputs("rooms: the node did not start\n", stderr)
            return
        }
        defer { node.stop() }
        for room in 0..<writers {
            for writer in 0..<writers {
                _ = node.join(room: "room-\(room)", user: "w\(writer)", role: .teacher, session: "s\(writer)", name: "Writer \(writer)")
            }
        }
        let baseline = phase(node, seconds: seconds, rooms: (0..<1).map { _ in "room-0" })
        let spread = phase(node, seconds: seconds, rooms: (0..<writers).map { "room-\($0)" })
        let together = phase(node, seconds: seconds, rooms: (0..<writers).map { _ in "room-0" })
        for (name, result) in [("1-writer-1-room-sync-full-baseline", baseline), ("\(writers)-writers-\(writers)-rooms-sync-full", spread),
                               ("\(writers)-writers-1-room-sync-full", together)] {
            let sorted = result.latencies.sorted()
            guard !sorted.isEmpty else { continue }
            let rate = Double(sorted.count) / Double(seconds)
            let isBaseline = result.writers == 1
            emit(BenchRow(suite: "rooms", name: name, n: sorted.count, opsPerSecond: rate,
                          p50Micros: sorted[sorted.count / 2], p99Micros: sorted[min(sorted.count - 1, sorted.count * 99 / 100)],
                          seconds: Double(seconds),
                          ratioVsRaw: isBaseline ? nil : rate / (Double(baseline.latencies.count) / Double(seconds)),
                          target: result.rooms > 1 ? "writes/s at least 3x the baseline (rooms do not wait for each other)" : nil,
                          note: "acknowledged writes, \(result.writers) in-process writer(s) in \(result.rooms) room(s), store on disk with --sync full; ratio is writes/s vs the baseline row"))
        }
    }

    struct Phase {
        var latencies: [Double] = []
        var writers = 0
        var rooms = 0
    }

    /// One writer thread per entry of `rooms`, each writing to its room for `seconds`.
    private static func phase(_ node: ClusterNode, seconds: UInt64, rooms: [String]) -> Phase {
        let collected = Mutex<[Double]>([])
        let deadline = WallClock.monotonicMillis() + seconds * 1000
        let threads = rooms.enumerated().map { writer, room in
            RawThread {
                var latencies: [Double] = []
                var counter = UInt64(WallClock.nowMillis()) * 1_000
                while WallClock.monotonicMillis() < deadline {
                    counter += 1
                    let started = monotonicNanos()
                    let ack = node.submit(room: room, Write(author: "w\(writer)", authorRole: .teacher, authorCounter: counter,
                                                            operation: .setRoomProperty(key: "k\(writer)", value: Array("\(counter)".utf8), cause: "bench")))
                    if ack.status == .accepted { latencies.append(Double(monotonicNanos() - started) / 1000) }
                }
                collected.withLock { $0 += latencies }
            }
        }
        for thread in threads { thread.join() }
        return Phase(latencies: collected.withLock { $0 }, writers: rooms.count, rooms: Set(rooms).count)
    }
}
