@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport
import HomeroomWire
import Synchronization

/// The teacher lane (issue 43, item 4): how long a teacher's "mute all" waits for its
/// acknowledgement while the hall's students flood the room with chat, against the
/// same write with no flood, same run, and against the same flood with the lane off.
/// A node with a store holds a lecture hall (5,000 members; 1,000 with --quick) with
/// the node's default rate limits (60 writes/s per user). Flooders are REQ sockets
/// speaking the protocol, each sending room messages as fast as its acknowledgements
/// come, each cycling over its own students so that no student passes the rate limit;
/// the teacher sends a `mute_all` every 25 ms on a socket of its own.
enum TeacherLaneBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let members = quick ? 1_000 : 5_000
        let flooders = quick ? 32 : 64
        let seconds = quick ? 3.0 : 6.0
        var quietP99: Double?
        for lane in [true, false] {
            guard let result = measure(lane: lane, members: members, flooders: flooders, seconds: seconds) else {
                fputs("teacher-lane: the node did not start (lane \(lane ? "on" : "off"))\n", stderr)
                continue
            }
            let hall = "\(members / 1000)k-hall"
            if lane {
                quietP99 = result.quiet.p99
                emit(BenchRow(suite: "teacher-lane", name: "mute-all-ack-\(hall)-no-flood", n: result.quiet.count,
                              p50Micros: result.quiet.p50, p99Micros: result.quiet.p99, seconds: quietSeconds(seconds),
                              note: "a teacher's mute_all every 25 ms over a REQ socket, acknowledged (stored with --sync normal); nothing else writes: the baseline"))
            }
            let ratio = quietP99.map { result.flooded.p99 / max($0, 1) }
            emit(BenchRow(suite: "teacher-lane", name: "mute-all-ack-\(hall)-chat-flood-\(flooders)-senders-lane-\(lane ? "on" : "off")",
                          n: result.flooded.count, opsPerSecond: result.chatPerSecond,
                          p50Micros: result.flooded.p50, p99Micros: result.flooded.p99, seconds: seconds, ratioVsRaw: ratio,
                          target: lane ? "p99 <= 20 ms (ratio: vs the no-flood row's p99)" : nil,
                          note: "the same mute_all while \(flooders) sockets send room messages as fast as acknowledged (ops/s: chat acknowledged per second; "
                              + "\(result.rateLimited) refused rate-limited), each student under 60 writes/s; lane \(lane ? "on" : "off (NodeConfig.teacherLane = false)")"
                              + "; control writes that overtook waiting requests: \(result.overtakes)"))
        }
    }

    /// What the threads share: whether the flood runs, what it achieved, the teacher's counter.
    final class Shared: Sendable {
        let running = Atomic<Bool>(true)
        let chat = Atomic<Int>(0)
        let limited = Atomic<Int>(0)
        let counter = Atomic<UInt64>(1)
    }

    /// How long the no-flood phase lasts.
    static func quietSeconds(_ seconds: Double) -> Double { min(3, seconds) }

    struct Latencies {
        var samples: [Double]
        var count: Int { samples.count }
        var p50: Double { percentile(50) }
        var p99: Double { percentile(99) }
        func percentile(_ percent: Int) -> Double {
            let sorted = samples.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, sorted.count * percent / 100)]
        }
    }

    struct Result {
        var quiet: Latencies
        var flooded: Latencies
        var chatPerSecond: Double
        var rateLimited: Int
        var overtakes: Int
    }

    static func measure(lane: Bool, members: Int, flooders: Int, seconds: Double) -> Result? {
        let directory = "/tmp/homeroom-bench-lane-\(getpid())-\(lane)"
        defer { _ = system("rm -rf '\(directory)'") }
        var config = NodeConfig(name: "lane-bench", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0")
        config.dataDirectory = directory
        config.teacherLane = lane
        config.workers = 2
        guard let node = try? ClusterNode(config: config, logger: Logger(label: "bench", level: .error)) else { return nil }
        defer { node.stop() }
        for index in 0..<members {
            node.join(room: "hall", user: "student-\(index)", role: .student, session: "s\(index)", name: "Student \(index)")
        }
        node.join(room: "hall", user: "teacher", role: .teacher, session: "t", name: "Teacher")
        let address = node.listenAddress
        let shared = Shared()
        let quiet = teacher(at: address, seconds: quietSeconds(seconds), shared: shared)
        let overtakesBefore = node.teacherLaneOvertakes
        var threads: [RawThread] = []
        for flooder in 0..<flooders {
            let students = stride(from: flooder, to: members, by: flooders).map { "student-\($0)" }
            threads.append(RawThread { flood(at: address, students: students, shared: shared) })
        }
        usleep(500_000)   // the flood reaches its pace before the teacher is timed
        let chatBefore = shared.chat.load(ordering: .relaxed)
        let started = monotonicNanos()
        let flooded = teacher(at: address, seconds: seconds, shared: shared)
        let chatSeconds = Double(monotonicNanos() - started) / 1e9
        let chatDuring = shared.chat.load(ordering: .relaxed) - chatBefore
        shared.running.store(false, ordering: .releasing)
        for thread in threads { thread.join() }
        return Result(quiet: quiet, flooded: flooded, chatPerSecond: Double(chatDuring) / chatSeconds,
                      rateLimited: shared.limited.load(ordering: .relaxed),
                      overtakes: node.teacherLaneOvertakes - overtakesBefore)
    }

    /// The teacher's mute_all every 25 ms for `seconds`: the acknowledgement latencies.
    static func teacher(at address: String, seconds: Double, shared: Shared) -> Latencies {
        guard let requester = try? SPRequester(), (try? requester.dial(address)) != nil else { return Latencies(samples: []) }
        defer { requester.close() }
        var samples: [Double] = []
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        while monotonicNanos() < deadline {
            let number = shared.counter.add(1, ordering: .relaxed).newValue
            let write = Write(author: "teacher", authorRole: .teacher, authorCounter: number, operation: .muteAll)
            let started = monotonicNanos()
            if accepted(write, requestID: number, room: "hall", requester) {
                samples.append(Double(monotonicNanos() - started) / 1000)
            }
            usleep(25_000)
        }
        return Latencies(samples: samples)
    }

    /// One flooder: room messages from its students in turn, as fast as acknowledged.
    static func flood(at address: String, students: [String], shared: Shared) {
        guard !students.isEmpty, let requester = try? SPRequester(), (try? requester.dial(address)) != nil else { return }
        defer { requester.close() }
        var counters = [UInt64](repeating: 0, count: students.count)
        var turn = 0
        let payload = Array("a question about the last slide, please".utf8)
        while shared.running.load(ordering: .acquiring) {
            let index = turn % students.count
            turn += 1
            counters[index] += 1
            let write = Write(author: students[index], authorRole: .student, authorCounter: counters[index],
                              operation: .sendMessage(type: "chat", payload: payload, previous: counters[index] - 1))
            let envelope = WireEnvelope(roomID: "hall", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        message: .writeRequest(WireMessage.WriteRequest(requestID: UInt64(turn), write: write)))
            guard let bytes = try? requester.request(WireCodec.encode(envelope), timeout: .seconds(5)),
                  let reply = try? WireCodec.decode(bytes), case let .writeAck(ack) = reply.message else { continue }
            if ack.status == .accepted { shared.chat.add(1, ordering: .relaxed) }
            else if ack.errorCode == "rate-limited" { shared.limited.add(1, ordering: .relaxed) }
        }
    }

    static func accepted(_ write: Write, requestID: UInt64, room: String, _ requester: SPRequester) -> Bool {
        let envelope = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                                    message: .writeRequest(WireMessage.WriteRequest(requestID: requestID, write: write)))
        guard let bytes = try? requester.request(WireCodec.encode(envelope), timeout: .seconds(5)),
              let reply = try? WireCodec.decode(bytes), case let .writeAck(ack) = reply.message else { return false }
        return ack.status == .accepted
    }
}
