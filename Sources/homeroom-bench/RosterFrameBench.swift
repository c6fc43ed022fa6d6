@preconcurrency import Glibc
import HomeroomContext
import HomeroomCore
import HomeroomSupport

/// What one frame of the live roster costs a UI in a lecture hall (100,000 students;
/// 20,000 with --quick) while the class goes on: between frames, 50 live deltas
/// (devices, privileges, stage, hands, rewards) are applied to the replica. Each frame
/// is one page of 20 students plus the stage, hands and counts. The baseline is the same
/// frames rebuilt from the whole replica and sorted (as every frame was made before),
/// measured in the same run over the same deltas; both frames are checked equal.
enum RosterFrameBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let users = quick ? 20_000 : 100_000
        let frames = quick ? 40 : 100
        let perFrame = 50
        var (room, _) = MergeBench.room(users: users, type: .lectureHall)
        let deltas = MergeBench.liveDeltas(count: frames * perFrame, users: users, origins: 3, seed: 20261203)
        let local = UserInfo(id: "teacher", name: "Teacher", role: .teacher)
        let now = WallClock.nowMillis()
        // The first frame after attaching builds every row and sorts the students.
        var firstMicros: [Double] = []
        for _ in 0..<3 {
            var fresh = LiveRoster()
            firstMicros.append(measure { _ = fresh.snapshot(room, nowMillis: now, local: local, connection: .connected, latencyMicros: 0, page: (0, 20)) } * 1e6)
        }
        var live = LiveRoster()
        _ = live.snapshot(room, nowMillis: now, local: local, connection: .connected, latencyMicros: 0, page: (0, 20))
        var liveMicros: [Double] = [], rebuiltMicros: [Double] = []
        var mismatches = 0
        for frame in 0..<frames {
            var changes: [RoomChange] = []
            for delta in deltas[(frame * perFrame)..<((frame + 1) * perFrame)] { changes += room.apply(delta).changes }
            live.note(changes)
            let page = (index: frame % 50, size: 20)
            var got: RoomSnapshot?
            liveMicros.append(measure { got = live.snapshot(room, nowMillis: now, local: local, connection: .connected, latencyMicros: 0, page: page) } * 1e6)
            var want: RoomSnapshot?
            rebuiltMicros.append(measure { want = LiveRoster.rebuilt(room, nowMillis: now, local: local, connection: .connected, latencyMicros: 0, page: page) } * 1e6)
            if got != want { mismatches += 1 }
        }
        func percentile(_ values: [Double], _ percent: Int) -> Double {
            let sorted = values.sorted()
            return sorted[min(sorted.count - 1, sorted.count * percent / 100)]
        }
        let baseP50 = percentile(rebuiltMicros, 50)
        let hall = "\(users / 1000)k-students"
        emit(BenchRow(suite: "ui", name: "roster-frame-rebuilt-\(hall)", n: frames, p50Micros: baseP50, p99Micros: percentile(rebuiltMicros, 99),
                      note: "the whole roster built and sorted per frame (as before); \(perFrame) live deltas between frames"))
        emit(BenchRow(suite: "ui", name: "roster-frame-live-\(hall)", n: frames, p50Micros: percentile(liveMicros, 50), p99Micros: percentile(liveMicros, 99),
                      target: "p99 <= 16 ms (a 60 Hz frame)",
                      note: "kept from the change sets (LiveRoster): \(live.updates) incremental frames, \(live.rebuilds) rebuilds; \(mismatches) frames differed from the rebuilt ones; p50 \(Int(baseP50 / max(percentile(liveMicros, 50), 1)))x faster than rebuilt"))
        emit(BenchRow(suite: "ui", name: "roster-first-frame-\(hall)", n: firstMicros.count, p50Micros: percentile(firstMicros, 50),
                      p99Micros: percentile(firstMicros, 99), target: "<= 500 ms (once, on attaching)",
                      note: "a fresh LiveRoster's first frame: every row built, the students sorted by name (natural order)"))
        if mismatches > 0 { fputs("ui: \(mismatches) live frames differed from the rebuilt ones\n", stderr) }
    }
}
