@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomWire
import HomeroomSupport
import Synchronization

/// Write capacity against nodes (#20 item 4): nodes in child processes of their own on
/// loopback, rooms spread by placement (`--replicas 3`), the same offered write load,
/// against the same cluster with every room on every node (the baseline, same run).
/// Clients here are raw REQ sockets speaking the protocol: each room's teacher joins
/// through any node and follows `not-owner` to the room's first owner, then one writer
/// per node sends its rooms' property writes at an even pace. Per node: the deltas it
/// applied (its own acknowledged writes and other nodes' deltas) and its CPU time; with
/// placement a node should apply about total x R / N of them.
enum WriteCapacityBench {
    static let replicas = 3

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let window = quick ? 5.0 : 15.0
        let clusters = quick ? [3] : [3, 6, 9]
        let rooms = quick ? 60 : 300
        let offered = quick ? 300.0 : 600.0
        for nodes in clusters {
            var everyNode: Measurement?
            for placed in [false, true] {
                guard let measured = measure(nodes: nodes, replicas: placed ? replicas : 0, rooms: rooms,
                                             writesPerSecond: offered, windowSeconds: window) else {
                    fputs("writes: \(nodes) nodes (\(placed ? "\(replicas) replicas" : "every node")) did not settle; no row\n", stderr)
                    continue
                }
                let label = placed ? "\(replicas)-replicas" : "every-node"
                let applied = measured.appliedPerSecond
                let total = measured.acknowledgedPerSecond
                let expected = placed ? Double(min(replicas, nodes)) / Double(nodes) : 1
                emit(BenchRow(suite: "writes", name: "writes-\(nodes)-nodes-\(label)", n: nodes, opsPerSecond: total,
                              seconds: measured.cpuPerMinute.reduce(0, +) / Double(nodes),
                              note: "\(BenchNamespaces.whereNodesRun); ops/s: acknowledged writes per second, cluster total (offered \(Int(offered))); seconds: mean CPU-s per minute per node "
                                  + "(each: \(measured.cpuPerMinute.map { String(format: "%.1f", $0) }.joined(separator: ", "))); deltas applied per node per second: "
                                  + applied.map { String(format: "%.0f", $0) }.joined(separator: ", ")
                                  + String(format: "; mean share of the total %.2f (expected %.2f); refused or unanswered: %d", applied.reduce(0, +) / Double(nodes) / max(total, 1), expected, measured.failed)))
                if !placed { everyNode = measured; continue }
                guard let everyNode else { continue }
                let ratio = (applied.reduce(0, +) / Double(nodes) / max(total, 1))
                    / (everyNode.appliedPerSecond.reduce(0, +) / Double(nodes) / max(everyNode.acknowledgedPerSecond, 1))
                emit(BenchRow(suite: "writes", name: "writes-\(nodes)-nodes-per-node-load-vs-every-node", n: nodes,
                              opsPerSecond: applied.reduce(0, +) / Double(nodes), ratioVsRaw: ratio,
                              target: String(format: "per-node write load close to total x R / N = %.2f of the total", expected),
                              note: "\(BenchNamespaces.whereNodesRun); ops/s: mean deltas applied per node per second with \(replicas) replicas; ratio: per-node share of the total with placement / "
                                  + "the same with every room on every node, same run, same offered load"))
            }
        }
    }

    /// What the writers were told, summed over them.
    final class Tally: Sendable {
        let acknowledged = Atomic<Int>(0)
        let failed = Atomic<Int>(0)
    }

    struct Measurement {
        var acknowledgedPerSecond: Double
        var appliedPerSecond: [Double]
        var cpuPerMinute: [Double]
        var failed: Int
    }

    static func measure(nodes: Int, replicas: Int, rooms: Int, writesPerSecond: Double, windowSeconds: Double) -> Measurement? {
        guard let children = NodeProcesses.start(count: nodes, rooms: 0, replicas: replicas) else { return nil }
        defer { NodeProcesses.finish(children) }
        guard IdleCostBench.settled(children, rooms: 0, timeoutSeconds: 60) else { return nil }
        // Each room's teacher joins at its first owner (followed from any node).
        var ownerOf: [Int: [Int]] = [:]
        for room in 0..<rooms {
            guard let owner = join(room: room, children: children) else {
                fputs("writes: room \(room) could not be joined\n", stderr)
                return nil
            }
            ownerOf[owner, default: []].append(room)
        }
        usleep(2_000_000)
        let appliedBefore = children.map { NodeProcesses.metric($0, "writes_accepted_total") + NodeProcesses.metric($0, "deltas_in_total") }
        let cpuBefore = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        let tally = Tally()
        let started = monotonicNanos()
        let deadline = started + UInt64(windowSeconds * 1e9)
        var threads: [RawThread] = []
        for (index, child) in children.enumerated() {
            let mine = ownerOf[index] ?? []
            if mine.isEmpty { continue }
            let interval = 1e9 / (writesPerSecond * Double(mine.count) / Double(rooms))
            let address = child.address
            threads.append(RawThread { write(rooms: mine, at: address, intervalNanos: interval, until: deadline, tally: tally) })
        }
        for thread in threads { thread.join() }
        let seconds = Double(monotonicNanos() - started) / 1e9
        let cpuAfter = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        // Remote deltas still on the way, and the once-a-second counter reports.
        usleep(2_100_000)
        let appliedAfter = children.map { NodeProcesses.metric($0, "writes_accepted_total") + NodeProcesses.metric($0, "deltas_in_total") }
        return Measurement(acknowledgedPerSecond: Double(tally.acknowledged.load(ordering: .relaxed)) / seconds,
                           appliedPerSecond: zip(appliedBefore, appliedAfter).map { Double($1 &- $0) / seconds },
                           cpuPerMinute: zip(cpuBefore, cpuAfter).map { ($1 - $0) * 60 / seconds },
                           failed: tally.failed.load(ordering: .relaxed))
    }

    static func roomName(_ index: Int) -> String { "write-room-\(index)" }

    /// Joins room `room`'s teacher through node `room % count`, following `not-owner`;
    /// returns the index of the node that took the join.
    static func join(room: Int, children: [NodeProcesses.Child], named name: (Int) -> String = roomName) -> Int? {
        var address = children[room % children.count].address
        for _ in 0..<3 {
            let join = WireMessage.JoinRequest(user: "teacher-\(room)", role: .teacher, session: "s-\(room)", name: "Teacher")
            guard let reply = request(.joinRequest(join), room: name(room), at: address) else { return nil }
            switch reply {
            case .joinResponse: return children.firstIndex { $0.address == address }
            case let .error(refusal) where refusal.code == "not-owner":
                guard let owner = refusal.owners.first?.address else { return nil }
                address = owner
            default: return nil
            }
        }
        return nil
    }

    /// One node's writer: its rooms' teachers set a property in turn, one write every
    /// `intervalNanos`, until the deadline.
    static func write(rooms: [Int], at address: String, intervalNanos: Double, until deadline: UInt64, tally: Tally) {
        guard let requester = try? SPRequester(), (try? requester.dial(address)) != nil else { return }
        defer { requester.close() }
        var next = Double(monotonicNanos())
        var counter: UInt64 = 0
        var turn = 0
        while monotonicNanos() < deadline {
            let now = Double(monotonicNanos())
            if now < next { usleep(UInt32(min(20_000, (next - now) / 1_000))); continue }
            next += intervalNanos
            counter += 1
            let room = rooms[turn % rooms.count]
            turn += 1
            let write = Write(author: "teacher-\(room)", authorRole: .teacher, authorCounter: counter,
                              operation: .setRoomProperty(key: "slide", value: Array(String(counter).utf8), cause: "bench"))
            let envelope = WireEnvelope(roomID: roomName(room), sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        message: .writeRequest(WireMessage.WriteRequest(requestID: counter, write: write)))
            guard let bytes = try? requester.request(WireCodec.encode(envelope), timeout: .seconds(2)),
                  let reply = try? WireCodec.decode(bytes), case let .writeAck(ack) = reply.message, ack.status == .accepted else {
                tally.failed.add(1, ordering: .relaxed)
                continue
            }
            tally.acknowledged.add(1, ordering: .relaxed)
        }
    }

    static func request(_ message: WireMessage, room: String, at address: String) -> WireMessage? {
        guard let requester = try? SPRequester(), (try? requester.dial(address)) != nil else { return nil }
        defer { requester.close() }
        let envelope = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero, message: message)
        guard let bytes = try? requester.request(WireCodec.encode(envelope), timeout: .seconds(5)),
              let reply = try? WireCodec.decode(bytes, limits: .largeReplies) else { return nil }
        return reply.message
    }
}
