@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomTestSupport
import HomeroomWire
import Synchronization

/// A school on three real `homeroom node` processes (`--suite school`): R rooms, each
/// with a teacher writing one room message a second (and a room property now and then)
/// and M listening members connected as room streams (`ws://H:P/v1/rooms/<room>` on a
/// node's publish port), against the same listeners as v1 SP/TCP subscribers in the same
/// run. Every byte is counted on the listeners' sockets, in reader child processes
/// (`homeroom-bench --school-child`, one poll loop over raw sockets each), in windows of
/// CLOCK_MONOTONIC time the parent sets; a v1 subscriber per node counts what each room's
/// topic carried in the same window (8 + topic + envelope a message, as SP/TCP frames it),
/// which is the traffic a stream listener is held against.
///
/// The writers are raw REQ sockets speaking the protocol, one per node: each room's
/// teacher joins through node `room % 3` and writes through it (a RoomClient per room
/// would be two threads and a sync every 300 ms each, a thousand threads for 500 rooms).
enum SchoolBench {
    struct Sizes {
        var rooms: Int
        var members: Int
        var windowSeconds: Int
        var idleSeconds = 3
        /// v1 listeners: member 0 of every `v1RoomStride`-th room (every member when 1), plus the timed ones.
        var v1RoomStride: Int
    }

    static let nodeCount = 3
    /// Listeners per reader child, sharded by room: poll(2) looks at every descriptor of its
    /// set on each wake-up, so small sets keep the readers' own CPU (on the nodes' 2 cores) low.
    static let listenersPerChild = 250
    static let idle = 0, busy = 1
    static let probeSequence: UInt64 = 0xFFFF_FFFF
    static let text = Array("a question about fractions".utf8)

    static func roomName(_ room: Int) -> String { "school-room-\(room)" }
    static func node(room: Int, member: Int) -> Int { (room + member) % nodeCount }
    /// The listeners whose arrivals are timed: members 0-2 (one on each node) of rooms 0-3.
    static func timed(room: Int, member: Int) -> Bool { room < 4 && member < 3 }

    // MARK: - Suite

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        let sizes = quick ? Sizes(rooms: 50, members: 5, windowSeconds: 10, v1RoomStride: 1)
                          : Sizes(rooms: 500, members: 20, windowSeconds: 30, v1RoomStride: 5)
        let label = "\(sizes.rooms)-rooms-\(sizes.members)-members"
        func incomplete(_ reason: String) {
            fputs("school: \(reason)\n", stderr)
            emit(BenchRow(suite: "school", name: "stream-bytes-per-listener-\(label)", n: 0, note: "INCOMPLETE: \(reason)"))
        }
        guard let binary = homeroomBinary() else {
            return incomplete("no homeroom binary beside homeroom-bench: run `swift build -c release --product homeroom` (or set HOMEROOM_BIN)")
        }
        let base = "/tmp/homeroom-bench-school-\(getpid())"
        guard let nodes = startNodes(binary: binary, base: base) else { return incomplete("the 3 homeroom node processes did not start") }
        defer { stopNodes(nodes) }
        guard waitUntil(seconds: 60, { nodes.allSatisfy { metrics($0)["homeroom_peers{status=\"alive\"}"] == Double(nodeCount - 1) } }) else {
            return incomplete("the nodes did not see each other alive within 60 s")
        }
        var requesters: [SPRequester] = []
        defer { for requester in requesters { requester.close() } }
        for node in nodes {
            guard let requester = try? SPRequester(), (try? requester.dial(node.listen)) != nil else { return incomplete("a REQ socket did not dial \(node.listen)") }
            requesters.append(requester)
        }
        let ledger = Ledger(rooms: sizes.rooms)
        let joinFailures = joinEveryone(sizes, requesters: requesters)
        guard joinFailures == 0 else { return incomplete("\(joinFailures) joins were refused or unanswered") }
        guard waitUntil(seconds: 60, { nodes.allSatisfy { metrics($0)["homeroom_rooms"] == Double(sizes.rooms) } }) else {
            return incomplete("not every node held the \(sizes.rooms) rooms within 60 s of the joins")
        }

        // The same listeners twice: as room streams (with a v1 reference per node), then as v1 subscribers.
        var streamPlan: [Listener] = []
        var v1Plan: [Listener] = []
        for room in 0..<sizes.rooms {
            for member in 0..<sizes.members {
                let listener = Listener(id: room * sizes.members + member, room: room, node: node(room: room, member: member),
                                        timed: timed(room: room, member: member))
                streamPlan.append(listener)
                if (member == 0 && room % sizes.v1RoomStride == 0) || sizes.v1RoomStride == 1 || listener.timed { v1Plan.append(listener) }
            }
        }
        let streams = runPhase(.stream, streamPlan, sizes: sizes, nodes: nodes, requesters: requesters, ledger: ledger, base: base)
        let v1 = runPhase(.v1, v1Plan, sizes: sizes, nodes: nodes, requesters: requesters, ledger: ledger, base: base)
        let exited = nodes.filter { !running($0.pid) }.count
        report(sizes: sizes, streams: streams, v1: v1, planned: (streamPlan.count, v1Plan.count), nodesExited: exited, emit: emit)
    }

    // MARK: - Rows

    static func report(sizes: Sizes, streams: PhaseResult?, v1: PhaseResult?, planned: (streams: Int, v1: Int), nodesExited: Int, emit: (BenchRow) -> Void) {
        let label = "\(sizes.rooms)-rooms-\(sizes.members)-members"
        let setup = "3 homeroom node processes (release, default --replicas 3: every room on every node, --session-timeout-ms 0), "
            + "\(sizes.rooms) rooms, each with a teacher and \(sizes.members) observers joined (raw REQ joins); writers: 3 raw REQ sockets, "
            + "one per node, each room's teacher writing through node room%3: 1 room message/s per room (42-byte payload), paced, "
            + "and a room property every 10 s per room"
        let exitedNote = nodesExited > 0 ? "; \(nodesExited) node process(es) exited during the run" : ""
        guard let streams else {
            emit(BenchRow(suite: "school", name: "stream-bytes-per-listener-\(label)", n: 0, note: "INCOMPLETE: the stream phase did not run (see stderr)" + exitedNote))
            return
        }
        let measured = streams.listeners.values.filter { $0.connected }
        let window = streams.busySeconds, idleWindow = streams.idleSeconds
        let streamBytes = measured.reduce(0) { $0 + $1.bytes[busy] }
        // Each listener against its room's topic on its node, as a v1 subscriber counted it in the same window.
        let ownRoom = measured.reduce(0) { $0 + streams.reference(node: $1.node, room: $1.room) }
        let perListener = Double(streamBytes) / Double(max(1, measured.count)) / window
        let ownPerListener = Double(ownRoom) / Double(max(1, measured.count)) / window
        let ratios = measured.compactMap { listener -> Double? in
            let own = streams.reference(node: listener.node, room: listener.room)
            return own > 0 ? Double(listener.bytes[busy]) / Double(own) : nil
        }
        let ratio = Double(streamBytes) / Double(max(1, ownRoom))
        let delivered = measured.reduce(0) { $0 + $1.seen.nonzeroBitCount }
        let expected = measured.reduce(0) { $0 + streams.acked[$1.room] }
        let foreign = measured.reduce(0) { $0 + $1.foreign[busy] + $1.foreign[idle] }
        let idleBytes = measured.map { Double($0.bytes[idle]) / idleWindow }
        let connection = "\(measured.count) of \(planned.streams) listeners connected (\(streams.failed) failed to connect, \(streams.notAttached) never got a probe, "
            + "\(streams.closed) closed by the node)"
        let loss = delivered == expected ? "" : "INCOMPLETE: \(delivered) of \(expected) room messages delivered; "
        let cpu = "node CPU-s per minute in the window: \(streams.cpuPerMinute(busy).map { format($0) }.joined(separator: ", "))"
        emit(BenchRow(suite: "school", name: "stream-bytes-per-listener-\(label)", n: measured.count, bytesPerOp: perListener, seconds: window, ratioVsRaw: ratio,
                      target: "<= 1.2x own-room traffic: \(ratio <= 1.2 ? "met" : "missed")",
                      note: loss + "bytes/op: bytes per second per listening connection, every byte read on the socket (WebSocket frames, ws:// on the publish port, path /v1/rooms/<room>), "
                          + "over a \(format(window)) s window; ratio: those bytes / the bytes of the messages published on the listener's room topic by its node in the same window, "
                          + "as a v1 subscriber counts them (8-byte SP length + topic + envelope; one v1 SP/TCP subscriber per node counted them): "
                          + "\(format(ownPerListener)) B/s per listener; per-listener ratio \(format(ratios.min() ?? 0))-\(format(ratios.max() ?? 0)); "
                          + "the reference v1 subscribers themselves got \(format(streams.referencePerSecond(busy))) B/s each; "
                          + "\(delivered) of \(expected) room messages delivered (listener x message); frames of other topics: \(foreign); "
                          + connection + "; " + setup + "; \(streams.writeNote); " + cpu + exitedNote))
        emit(BenchRow(suite: "school", name: "stream-idle-bytes-per-listener-\(label)", n: measured.count,
                      bytesPerOp: idleBytes.reduce(0, +) / Double(max(1, idleBytes.count)), seconds: idleWindow,
                      target: "<= 500 B/s per listener: \((idleBytes.max() ?? 0) <= 500 ? "met" : "missed")",
                      note: "bytes/op: bytes per second per stream listener over \(format(idleWindow)) s with no write at all (max \(format(idleBytes.max() ?? 0)) B/s); "
                          + "the reference v1 subscribers got \(format(streams.referencePerSecond(idle))) B/s each meanwhile; node CPU-s per minute: "
                          + streams.cpuPerMinute(idle).map { format($0) }.joined(separator: ", ")))
        let streamLatency = streams.latencies
        if !streamLatency.isEmpty {
            emit(BenchRow(suite: "school", name: "stream-delivery-latency-\(label)", n: streamLatency.count,
                          p50Micros: percentile(streamLatency, 0.5), p99Micros: percentile(streamLatency, 0.99), seconds: window,
                          note: "from just before the REQ write to the frame's arrival at the listener (CLOCK_MONOTONIC in both processes), "
                              + "\(streams.timedCount) timed listeners (members 0-2 of rooms 0-3: one on the writer's node, two on the others), "
                              + "every room message of the window, while the nodes served \(measured.count) stream listeners"))
        }
        guard let v1 else {
            emit(BenchRow(suite: "school-v1", name: "v1-sp-tcp-bytes-per-listener-\(label)", n: 0, note: "INCOMPLETE: the v1 phase did not run (see stderr)"))
            return
        }
        let v1Measured = v1.listeners.values.filter { $0.connected }
        let v1Window = v1.busySeconds
        let v1Bytes = v1Measured.reduce(0) { $0 + $1.bytes[busy] }
        let v1Own = v1Measured.reduce(0) { $0 + $1.ownTopicBytes[busy] }
        let v1PerListener = Double(v1Bytes) / Double(max(1, v1Measured.count)) / v1Window
        let v1Delivered = v1Measured.reduce(0) { $0 + $1.seen.nonzeroBitCount }
        let v1Expected = v1Measured.reduce(0) { $0 + v1.acked[$1.room] }
        let v1Idle = v1Measured.map { Double($0.bytes[idle]) / v1.idleSeconds }
        let v1Loss = v1Delivered == v1Expected ? "" : "INCOMPLETE: \(v1Delivered) of \(v1Expected) room messages delivered; "
        let subset = sizes.v1RoomStride == 1 ? "the same \(planned.v1) listeners as the streams"
            : "\(planned.v1) of the \(planned.streams) listeners (member 0 of every \(sizes.v1RoomStride)th room, and the timed ones): a v1 subscriber gets every room's "
                + "traffic whoever else listens, and \(planned.streams) of them would be about \(format(v1PerListener * Double(planned.streams) / 1e6)) MB/s on this 2-core VM"
        emit(BenchRow(suite: "school-v1", name: "v1-sp-tcp-bytes-per-listener-\(label)", n: v1Measured.count, bytesPerOp: v1PerListener, seconds: v1Window,
                      ratioVsRaw: Double(v1Bytes) / Double(max(1, v1Own)),
                      note: v1Loss + "baseline, same nodes, rooms and workload, after the streams: v1 SP/TCP subscribers on the tcp:// publish address, each following its room topic "
                          + "(SP filters at the subscriber, so every message arrives); bytes/op: bytes per second per listener, every byte read on the socket; "
                          + "ratio: those bytes / its own room's messages on the same socket (8 + topic + envelope each, \(format(Double(v1Own) / Double(max(1, v1Measured.count)) / v1Window)) B/s); "
                          + "\(v1Delivered) of \(v1Expected) own-room messages delivered; \(subset); \(v1Measured.count) connected, \(v1.failed) failed, "
                          + "\(v1.closed) closed by the node; \(v1.writeNote); node CPU-s per minute: \(v1.cpuPerMinute(busy).map { format($0) }.joined(separator: ", "))"))
        emit(BenchRow(suite: "school-v1", name: "v1-sp-tcp-idle-bytes-per-listener-\(label)", n: v1Measured.count,
                      bytesPerOp: v1Idle.reduce(0, +) / Double(max(1, v1Idle.count)), seconds: v1.idleSeconds,
                      note: "baseline: bytes per second per v1 subscriber over \(format(v1.idleSeconds)) s with no write (heartbeats, gossip)"))
        let v1Latency = v1.latencies
        if !v1Latency.isEmpty {
            emit(BenchRow(suite: "school-v1", name: "v1-delivery-latency-\(label)", n: v1Latency.count,
                          p50Micros: percentile(v1Latency, 0.5), p99Micros: percentile(v1Latency, 0.99), seconds: v1Window,
                          note: "baseline: the same \(v1.timedCount) timed listeners as v1 subscribers, same workload; from just before the REQ write to arrival, "
                              + "while the nodes served \(v1Measured.count) v1 subscribers"))
        }
        emit(BenchRow(suite: "school", name: "stream-vs-v1-bytes-per-listener-\(label)", n: measured.count, bytesPerOp: perListener, ratioVsRaw: perListener / max(v1PerListener, 1),
                      note: "ratio: a stream listener's bytes per second / a v1 subscriber's, same nodes and workload, same run (\(format(perListener)) / \(format(v1PerListener)) B/s)"))
    }

    static func percentile(_ sorted: [Double], _ q: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }

    static func format(_ value: Double) -> String {
        if value >= 100 { return String(Int64(value.rounded())) }
        return String((value * 100).rounded() / 100)
    }

    // MARK: - A phase

    enum Kind: String { case stream, v1, reference }

    struct Listener {
        var id: Int
        var room: Int
        var node: Int
        var timed: Bool
    }

    struct ListenerResult {
        var node = 0
        var room = 0
        var timed = false
        var connected = false
        var attached = false
        var closed = false
        var bytes = [0, 0]
        var foreign = [0, 0]
        var ownTopicBytes = [0, 0]
        var seen: UInt64 = 0
    }

    struct PhaseResult {
        var listeners: [Int: ListenerResult] = [:]
        /// [node][window][room]: bytes on the room topic, as a v1 subscriber counts them.
        var references: [[[Int]]] = []
        var referenceTotals: [[Int]] = []
        var arrivals: [(id: Int, index: UInt64, nanos: UInt64)] = []
        var sentAt: [UInt64: UInt64] = [:]
        var acked: [Int] = []
        var failed = 0, notAttached = 0, closed = 0
        var idleSeconds = 0.0, busySeconds = 0.0
        var cpu: [[Double]] = [[], []]
        /// CPU-s the reader children used in the busy window, and how many there were.
        var readerCPU = 0.0
        var readers = 0
        var writeNote = ""
        var timedCount: Int { listeners.values.filter { $0.timed && $0.connected }.count }

        func reference(node: Int, room: Int) -> Int { node < references.count ? references[node][busy][room] : 0 }

        func referencePerSecond(_ window: Int) -> Double {
            guard !referenceTotals.isEmpty else { return 0 }
            return Double(referenceTotals.reduce(0) { $0 + $1[window] }) / Double(referenceTotals.count) / (window == busy ? busySeconds : idleSeconds)
        }

        func cpuPerMinute(_ window: Int) -> [Double] { cpu[window].map { $0 * 60 / (window == busy ? busySeconds : idleSeconds) } }

        var latencies: [Double] {
            arrivals.compactMap { arrival -> Double? in
                guard let sent = sentAt[arrival.index], arrival.nanos > sent else { return nil }
                return Double(arrival.nanos - sent) / 1_000
            }.sorted()
        }
    }

    struct ReaderChild {
        var pid: pid_t
        var output: String
        var plan: String
    }

    static func runPhase(_ kind: Kind, _ listeners: [Listener], sizes: Sizes, nodes: [NodeChild], requesters: [SPRequester], ledger: Ledger, base: String) -> PhaseResult? {
        let me = CommandLine.arguments[0]
        let windows = "\(base)-\(kind).windows", stop = "\(base)-\(kind).stop"
        unlink(windows)
        unlink(stop)
        // Listeners sharded by room, so a child wakes for its own rooms only.
        let childCount = max(1, (listeners.count + listenersPerChild - 1) / listenersPerChild)
        var plans = [[String]](repeating: [], count: childCount)
        for room in 0..<sizes.rooms { for c in 0..<childCount { plans[c].append("room \(room) \(roomName(room))") } }
        for listener in listeners {
            let publishPort = SchoolBench.port(nodes[listener.node].publish)
            plans[listener.room % childCount].append("\(kind) \(listener.id) \(publishPort) \(listener.room) \(listener.node) \(listener.timed ? 1 : 0)")
        }
        if kind == .stream {
            // One v1 subscriber per node, counting what each room's topic carried.
            plans.append((0..<sizes.rooms).map { "room \($0) \(roomName($0))" } + nodes.indices.map { "reference \($0) \(SchoolBench.port(nodes[$0].publish)) 0 \($0) 0" })
        }
        var children: [ReaderChild] = []
        var reaped = false
        defer {
            // On every way out: the children stop (asked, then SIGKILL) and their files go.
            close(open(stop, O_WRONLY | O_CREAT, 0o644))
            let deadline = monotonicNanos() + 30_000_000_000
            for child in children {
                if !reaped { SubscriberProcesses.waitOrKill(child.pid, deadlineNanos: deadline) }
                unlink(child.output)
                unlink(child.plan)
            }
            unlink(windows)
            unlink(stop)
        }
        for (index, plan) in plans.enumerated() {
            let planPath = "\(base)-\(kind)-\(index).plan", output = "\(base)-\(kind)-\(index).out"
            unlink(output)
            guard writeFile(planPath, plan.joined(separator: "\n") + "\n"),
                  let pid = SubscriberProcesses.spawn([me, "--school-child", planPath, windows, stop], stdout: output) else {
                fputs("school: a reader child (\(kind)) did not start\n", stderr)
                return nil
            }
            children.append(ReaderChild(pid: pid, output: output, plan: planPath))
        }
        // Every child connects its listeners one after another (a storm of thousands at once
        // measures the storm), then says how many it has.
        guard waitUntil(seconds: 180, { children.allSatisfy { lastNumbers(in: $0.output, "connected") != nil } }) else {
            fputs("school: \(kind) readers did not finish connecting within 180 s\n", stderr)
            return nil
        }
        var result = PhaseResult()
        let connected = children.reduce(0) { $0 + (lastNumbers(in: $1.output, "connected")?.first ?? 0) }
        result.failed = children.reduce(0) { $0 + (lastNumbers(in: $1.output, "connected")?.last ?? 0) }
        // Probes (a room message per room, sequence 0xFFFFFFFF) until each connection got one of its room's.
        func attached() -> Int { children.reduce(0) { $0 + (lastNumbers(in: $1.output, "attached")?.first ?? 0) } }
        let probeDeadline = monotonicNanos() + 60_000_000_000
        while attached() < connected && monotonicNanos() < probeDeadline {
            for room in 0..<sizes.rooms {
                _ = sendMessage(requesters[room % nodeCount], room: room, index: UInt64(room) << 32 | probeSequence, ledger: ledger)
            }
            for _ in 0..<15 where attached() < connected { usleep(100_000) }
        }
        let attachedCount = attached()
        if attachedCount < connected { fputs("school: \(kind): \(connected - attachedCount) of \(connected) connections never got a probe of their room\n", stderr) }
        // Let the probes' deltas and any repair settle before the idle window.
        usleep(2_000_000)

        // The windows, on CLOCK_MONOTONIC: idle (no writes), then busy (the workload).
        let idleStart = monotonicNanos() + 500_000_000
        let idleEnd = idleStart + UInt64(sizes.idleSeconds) * 1_000_000_000
        let busyStart = idleEnd + 500_000_000
        let busyEnd = busyStart + UInt64(sizes.windowSeconds) * 1_000_000_000
        guard writeFile(windows + ".tmp", "idle \(idleStart) \(idleEnd)\nbusy \(busyStart) \(busyEnd)\n"), rename(windows + ".tmp", windows) == 0 else { return nil }
        ledger.resetWindow()
        let threads = (0..<nodeCount).map { writer -> RawThread in
            let events = schedule(writer: writer, sizes: sizes, start: busyStart)
            let requester = requesters[writer]
            return RawThread { SchoolBench.write(events, requester: requester, ledger: ledger, until: busyEnd + 5_000_000_000) }
        }
        func cpu() -> [Double] { nodes.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 } }
        sleepUntil(idleStart)
        let cpuIdleStart = cpu()
        sleepUntil(idleEnd)
        let cpuIdleEnd = cpu()
        sleepUntil(busyStart)
        let cpuBusyStart = cpu()
        let readersBefore = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        sleepUntil(busyEnd)
        let cpuBusyEnd = cpu()
        let readersAfter = children.map { NodeProcesses.cpuSeconds($0.pid) ?? 0 }
        result.readerCPU = zip(readersBefore, readersAfter).map { $1 - $0 }.reduce(0, +)
        result.readers = children.count
        for thread in threads { thread.join() }
        // Arrivals after the window's end are not counted; let the last in-window reads finish.
        usleep(1_000_000)
        close(open(stop, O_WRONLY | O_CREAT, 0o644))
        let deadline = monotonicNanos() + 60_000_000_000
        var failedChildren = 0
        for child in children where !SubscriberProcesses.waitOrKill(child.pid, deadlineNanos: deadline) { failedChildren += 1 }
        reaped = true
        result.idleSeconds = Double(idleEnd - idleStart) / 1e9
        result.busySeconds = Double(busyEnd - busyStart) / 1e9
        result.cpu = [zip(cpuIdleStart, cpuIdleEnd).map { $1 - $0 }, zip(cpuBusyStart, cpuBusyEnd).map { $1 - $0 }]
        result.references = [[[Int]]](repeating: [[Int]](repeating: [Int](repeating: 0, count: sizes.rooms), count: 2), count: kind == .stream ? nodes.count : 0)
        result.referenceTotals = [[Int]](repeating: [0, 0], count: kind == .stream ? nodes.count : 0)
        let byID = Dictionary(uniqueKeysWithValues: listeners.map { ($0.id, $0) })
        for child in children {
            let text = SubscriberProcesses.readFile(child.output) ?? ""
            if !text.hasSuffix("done\n") { failedChildren += 1 }
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                switch parts.first {
                case "c":
                    // c <kind> <id> <connected> <attached> <closed> then, per window: bytes foreign own-topic-bytes; then seen.
                    guard parts.count == 13, let id = Int(parts[2]), let numbers = Optional(parts[3...].compactMap { Int($0) }), numbers.count == 10 else { continue }
                    if parts[1] == "reference" {
                        guard id < result.referenceTotals.count else { continue }
                        if numbers[0] == 1 { result.referenceTotals[id] = [numbers[3], numbers[6]] } else { fputs("school: the reference subscriber of node \(id) did not connect\n", stderr) }
                        continue
                    }
                    guard let listener = byID[id] else { continue }
                    result.listeners[id] = ListenerResult(node: listener.node, room: listener.room, timed: listener.timed, connected: numbers[0] == 1, attached: numbers[1] == 1,
                                                          closed: numbers[2] == 1, bytes: [numbers[3], numbers[6]], foreign: [numbers[4], numbers[7]],
                                                          ownTopicBytes: [numbers[5], numbers[8]], seen: UInt64(bitPattern: Int64(numbers[9])))
                case "r":
                    guard parts.count == 5, let node = Int(parts[1]), let window = Int(parts[2]), let room = Int(parts[3]), let bytes = Int(parts[4]),
                          node < result.references.count, room < sizes.rooms, window < 2 else { continue }
                    result.references[node][window][room] += bytes
                case "a":
                    guard parts.count == 4, let id = Int(parts[1]), let index = UInt64(parts[2]), let nanos = UInt64(parts[3]) else { continue }
                    result.arrivals.append((id, index, nanos))
                default:
                    continue
                }
            }
        }
        if failedChildren > 0 { fputs("school: \(failedChildren) \(kind) reader children did not report\n", stderr) }
        result.notAttached = result.listeners.values.filter { $0.connected && !$0.attached }.count
        result.closed = result.listeners.values.filter { $0.closed }.count
        result.sentAt = ledger.sentAt.withLock { $0 }
        result.acked = ledger.acked.withLock { $0 }
        let sent = result.acked.reduce(0, +)
        result.writeNote = "the \(result.readers) reader process\(result.readers == 1 ? "" : "es") used \(format(result.readerCPU * 60 / result.busySeconds)) CPU-s per minute in the window; "
            + "\(sent) room messages acknowledged in the window (expected \(sizes.rooms * sizes.windowSeconds)), "
            + "\(ledger.stateChanges.load(ordering: .relaxed)) room property writes, \(ledger.failed.load(ordering: .relaxed)) writes refused or unanswered, "
            + "latest send \(format(Double(ledger.latestLateness.load(ordering: .relaxed)) / 1e6)) ms behind its schedule"
        return failedChildren > 0 ? nil : result
    }

    // MARK: - Writers

    struct Event: Sendable {
        var at: UInt64
        var room: Int
        /// A room message's sequence in the window, or nil for a room property write.
        var sequence: Int?
    }

    /// Writer `writer`'s rooms (room % 3 == writer): message s of room r at start + s seconds
    /// + 50-500 ms (spread by room), and a property 400 ms later every 10 s.
    static func schedule(writer: Int, sizes: Sizes, start: UInt64) -> [Event] {
        var events: [Event] = []
        for room in stride(from: writer, to: sizes.rooms, by: nodeCount) {
            let offset = 50_000_000 + UInt64(room) * 450_000_000 / UInt64(sizes.rooms)
            for second in 0..<sizes.windowSeconds {
                let at = start + UInt64(second) * 1_000_000_000 + offset
                events.append(Event(at: at, room: room, sequence: second))
                if (second + room) % 10 == 0 { events.append(Event(at: at + 400_000_000, room: room, sequence: nil)) }
            }
        }
        return events.sorted { $0.at < $1.at }
    }

    /// What the writers did, shared with the parent.
    final class Ledger: Sendable {
        /// Per room: the teacher's last author counter, and that of its last message.
        let counters: Mutex<[UInt64]>
        let lastMessage: Mutex<[UInt64]>
        /// Per message index (room << 32 | sequence): when its write was sent (monotonic ns).
        let sentAt = Mutex<[UInt64: UInt64]>([:])
        /// Per room: messages acknowledged in this phase's window.
        let acked: Mutex<[Int]>
        let failed = Atomic<Int>(0)
        let stateChanges = Atomic<Int>(0)
        let latestLateness = Atomic<Int>(0)

        init(rooms: Int) {
            counters = Mutex([UInt64](repeating: 1, count: rooms))
            lastMessage = Mutex([UInt64](repeating: 0, count: rooms))
            acked = Mutex([Int](repeating: 0, count: rooms))
        }

        func next(_ room: Int) -> UInt64 { counters.withLock { $0[room] += 1; return $0[room] } }

        func resetWindow() {
            sentAt.withLock { $0.removeAll() }
            acked.withLock { for i in $0.indices { $0[i] = 0 } }
            failed.store(0, ordering: .relaxed)
            stateChanges.store(0, ordering: .relaxed)
            latestLateness.store(0, ordering: .relaxed)
        }
    }

    static func write(_ events: [Event], requester: SPRequester, ledger: Ledger, until deadline: UInt64) {
        for event in events {
            var now = monotonicNanos()
            guard now < deadline else { return }
            while now < event.at {
                usleep(UInt32(min(20_000, (event.at - now) / 1_000 + 1)))
                now = monotonicNanos()
            }
            let late = Int(now - event.at)
            if late > ledger.latestLateness.load(ordering: .relaxed) { ledger.latestLateness.store(late, ordering: .relaxed) }
            if let sequence = event.sequence {
                let index = UInt64(event.room) << 32 | UInt64(sequence)
                ledger.sentAt.withLock { $0[index] = monotonicNanos() }
                if sendMessage(requester, room: event.room, index: index, ledger: ledger) {
                    ledger.acked.withLock { $0[event.room] += 1 }
                } else {
                    ledger.failed.add(1, ordering: .relaxed)
                }
            } else {
                let counter = ledger.next(event.room)
                let operation = Operation.setRoomProperty(key: "slide", value: Array(String(counter).utf8), cause: "bench")
                if write(requester, room: event.room, operation, counter: counter) {
                    ledger.stateChanges.add(1, ordering: .relaxed)
                } else {
                    ledger.failed.add(1, ordering: .relaxed)
                }
            }
        }
    }

    /// A room message from the room's teacher: the marker, the index, a line of chat.
    static func sendMessage(_ requester: SPRequester, room: Int, index: UInt64, ledger: Ledger) -> Bool {
        let counter = ledger.next(room)
        let previous = ledger.lastMessage.withLock { $0[room] }
        var payload = MessagingBench.marker
        withUnsafeBytes(of: index.littleEndian) { payload.append(contentsOf: $0) }
        payload += text
        guard write(requester, room: room, .sendMessage(type: "chat", payload: payload, previous: previous), counter: counter) else { return false }
        ledger.lastMessage.withLock { $0[room] = max($0[room], counter) }
        return true
    }

    static func write(_ requester: SPRequester, room: Int, _ operation: Operation, counter: UInt64) -> Bool {
        let write = Write(author: "teacher-\(room)", authorRole: .teacher, authorCounter: counter, operation: operation)
        guard case let .writeAck(ack)? = request(requester, room: room, .writeRequest(WireMessage.WriteRequest(requestID: counter, write: write))) else { return false }
        return ack.status == .accepted
    }

    static func request(_ requester: SPRequester, room: Int, _ message: WireMessage) -> WireMessage? {
        let envelope = WireEnvelope(roomID: roomName(room), sender: ReplicaID(0), sequence: 0, clock: .zero, message: message)
        guard let bytes = try? requester.request(WireCodec.encode(envelope), timeout: .seconds(5)),
              let reply = try? WireCodec.decode(bytes, limits: .largeReplies) else { return nil }
        return reply.message
    }

    /// Each room's teacher, then its members (observers), joined through the nodes the
    /// teacher writes through and the members listen on; one thread per node. Failures.
    static func joinEveryone(_ sizes: Sizes, requesters: [SPRequester]) -> Int {
        let failures = Count()
        let threads = (0..<nodeCount).map { node -> RawThread in
            let requester = requesters[node]
            return RawThread {
                for room in 0..<sizes.rooms {
                    var joins: [WireMessage.JoinRequest] = []
                    if room % nodeCount == node { joins.append(.init(user: "teacher-\(room)", role: .teacher, session: "t-\(room)", name: "Teacher \(room)")) }
                    for member in 0..<sizes.members where SchoolBench.node(room: room, member: member) == node {
                        joins.append(.init(user: "member-\(room)-\(member)", role: .observer, session: "m-\(room)-\(member)", name: "Member \(member)"))
                    }
                    for join in joins {
                        guard case .joinResponse? = request(requester, room: room, .joinRequest(join)) else {
                            failures.value.add(1, ordering: .relaxed)
                            continue
                        }
                    }
                }
            }
        }
        for thread in threads { thread.join() }
        return failures.value.load(ordering: .relaxed)
    }

    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }

    // MARK: - Nodes

    struct NodeChild {
        var pid: pid_t
        var output: String
        var listen = ""
        var publish = ""
        var http = ""
    }

    /// `homeroom` beside this binary (the release build runs the release node), or HOMEROOM_BIN.
    static func homeroomBinary() -> String? {
        if let path = getenv("HOMEROOM_BIN").map({ String(cString: $0) }), access(path, X_OK) == 0 { return path }
        let me = CommandLine.arguments[0]
        let directory = me.contains("/") ? String(me[..<me.lastIndex(of: "/")!]) : "."
        let path = directory + "/homeroom"
        return access(path, X_OK) == 0 ? path : nil
    }

    /// Three `homeroom node` processes on loopback, each seeded with the ones before it;
    /// nil (and every one stopped) when one did not print its ready line within 30 s.
    static func startNodes(binary: String, base: String) -> [NodeChild]? {
        var nodes: [NodeChild] = []
        for index in 0..<nodeCount {
            let output = "\(base)-node-\(index).out"
            unlink(output)
            var arguments = [binary, "node", "--name", "school-\(index)", "--listen", "tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0",
                             "--http", "http://127.0.0.1:0", "--session-timeout-ms", "0", "--joins-per-second", "1000000",
                             "--writes-per-second", "1000000", "--log-level", "error"]
            for seed in nodes { arguments += ["--seed", seed.listen] }
            guard let pid = SubscriberProcesses.spawn(arguments, stdout: output) else {
                stopNodes(nodes)
                return nil
            }
            var node = NodeChild(pid: pid, output: output)
            _ = waitUntil(seconds: 30) {
                guard let line = (SubscriberProcesses.readFile(output) ?? "").split(separator: "\n").first(where: { $0.contains("\"event\":\"ready\"") }) else { return false }
                node.listen = jsonField(line, "listen") ?? ""
                node.publish = jsonField(line, "publish") ?? ""
                node.http = jsonField(line, "http") ?? ""
                return true
            }
            nodes.append(node)
            if node.listen.isEmpty || node.publish.isEmpty || node.http.isEmpty {
                fputs("school: node \(index) (pid \(pid)) did not get ready within 30 s\n", stderr)
                stopNodes(nodes)
                return nil
            }
        }
        return nodes
    }

    /// SIGTERM, then SIGKILL after 10 s; every node reaped.
    static func stopNodes(_ nodes: [NodeChild]) {
        for node in nodes { kill(node.pid, SIGTERM) }
        let deadline = monotonicNanos() + 10_000_000_000
        for node in nodes {
            SubscriberProcesses.waitOrKill(node.pid, deadlineNanos: deadline)
            unlink(node.output)
        }
    }

    /// A string field of a one-line JSON object with no escapes in the wanted value.
    static func jsonField(_ line: Substring, _ key: String) -> String? {
        let parts = line.split(separator: "\"", omittingEmptySubsequences: false)
        guard let at = parts.firstIndex(where: { $0 == key }), at + 2 < parts.count, parts[at + 1] == ":" else { return nil }
        return String(parts[at + 2])
    }

    /// The node's /metrics, series name (labels included) to value.
    static func metrics(_ node: NodeChild) -> [String: Double] {
        guard let port = UInt16(node.http.split(separator: ":").last ?? ""), let connection = RawConnection(port: port) else { return [:] }
        defer { connection.close() }
        connection.write(Array("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8))
        var values: [String: Double] = [:]
        for line in String(decoding: connection.read(Int.max), as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            values[String(line[..<space])] = value
        }
        return values
    }

    /// Whether the process still runs (not a zombie), read from /proc without reaping it.
    static func running(_ pid: pid_t) -> Bool {
        guard let text = SubscriberProcesses.readFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return false }
        return !text[text.index(after: close)...].hasPrefix(" Z")
    }

    static func port(_ address: String) -> UInt16 { UInt16(address.split(separator: ":").last ?? "") ?? 0 }

    // MARK: - Helpers

    /// Polls `condition` every 100 ms for at most `seconds`.
    static func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = monotonicNanos() + UInt64(seconds * 1e9)
        while true {
            if condition() { return true }
            if monotonicNanos() >= deadline { return false }
            usleep(100_000)
        }
    }

    static func sleepUntil(_ nanos: UInt64) {
        while true {
            let now = monotonicNanos()
            if now >= nanos { return }
            usleep(UInt32(min(100_000, (nanos - now) / 1_000 + 1)))
        }
    }

    /// The numbers of the last line of `path` that starts with `word`.
    static func lastNumbers(in path: String, _ word: String) -> [Int]? {
        let text = SubscriberProcesses.readFile(path) ?? ""
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix(word + " ") }) else { return nil }
        return line.split(separator: " ").dropFirst().compactMap { Int($0) }
    }

    static func writeFile(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return false }
        SubscriberProcesses.writeAll(fd, text)
        return close(fd) == 0
    }
}

// MARK: - Reader child

extension SchoolBench {
    /// `--school-child <plan> <windows file> <stop file>`: connects every connection of the
    /// plan one after another, reads them all in one poll loop, counts bytes and messages
    /// in the windows the parent writes, and reports when the stop file appears. Never returns.
    static func childMain(_ arguments: [String]) -> Never {
        guard arguments.count == 3, let plan = SubscriberProcesses.readFile(arguments[0]) else {
            fputs("usage: homeroom-bench --school-child <plan> <windows file> <stop file>\n", stderr)
            exit(64)
        }
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let reader = Reader(plan: plan)
        reader.connectAll(deadline: monotonicNanos() + 150_000_000_000)
        reader.run(windowsPath: arguments[1], stopPath: arguments[2])
        SubscriberProcesses.writeAll(1, reader.report() + "done\n")
        // The sockets close with the process.
        _exit(0)
    }

    final class Reader {
        struct Connection {
            let kind: Kind
            let id: Int
            let port: UInt16
            let room: Int
            let node: Int
            let timed: Bool
            var fd: Int32 = -1
            var pending: [UInt8] = []
            var connected = false
            var attached = false
            var closed = false
            var bytes = [0, 0]
            var foreign = [0, 0]
            var ownTopicBytes = [0, 0]
            /// Busy window: bit s set once message s of the room came.
            var seen: UInt64 = 0
        }

        var connections: [Connection] = []
        var roomNames: [Int: String] = [:]
        var topics: [Int: [UInt8]] = [:]
        var roomsByTopic: [[UInt8]: Int] = [:]
        /// Reference connections: [node][window][room] bytes on the room topic.
        var references: [Int: [[Int: Int]]] = [:]
        var arrivals: [(id: Int, index: UInt64, nanos: UInt64)] = []
        var windows: [(start: UInt64, end: UInt64)] = []
        var failed = 0

        init(plan: String) {
            for line in plan.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.first == "room", parts.count == 3, let room = Int(parts[1]) {
                    roomNames[room] = String(parts[2])
                    topics[room] = Topics.clientRoom(String(parts[2]))
                    roomsByTopic[Topics.clientRoom(String(parts[2]))] = room
                    continue
                }
                guard parts.count == 6, let kind = Kind(rawValue: String(parts[0])), let id = Int(parts[1]), let port = UInt16(parts[2]),
                      let room = Int(parts[3]), let node = Int(parts[4]) else { continue }
                connections.append(Connection(kind: kind, id: id, port: port, room: room, node: node, timed: parts[5] == "1"))
                if kind == .reference { references[node] = [[:], [:]] }
            }
        }

        func connectAll(deadline: UInt64) {
            for index in connections.indices {
                guard monotonicNanos() < deadline, connect(index) else {
                    failed += 1
                    continue
                }
            }
            SubscriberProcesses.writeAll(1, "connected \(connections.count - failed) \(failed)\n")
        }

        /// The WebSocket key of RFC 6455's example, and the accept value it must get back.
        static let key = "dGhlIHNhbXBsZSBub25jZQ=="
        static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

        func connect(_ index: Int) -> Bool {
            let c = connections[index]
            guard let raw = RawConnection(port: c.port) else { return false }
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            func readMore() -> Bool {
                let n = recv(raw.fd, &buffer, buffer.count, 0)
                if n <= 0 { return false }
                answer += buffer[0..<n]
                return true
            }
            var leftover: [UInt8] = []
            if c.kind == .stream {
                let path = RoomStreams.path(room: roomNames[c.room] ?? "")
                raw.write(Array(("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(c.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: pub.sp.nanomsg.org\r\n\r\n").utf8))
                var end: Int?
                while end == nil {
                    guard answer.count < 8_192, readMore() else { raw.close(); return false }
                    end = Self.headerEnd(answer)
                }
                let head = String(decoding: answer[..<end!], as: UTF8.self)
                guard head.hasPrefix("HTTP/1.1 101"), head.contains("Sec-WebSocket-Accept: \(Self.accept)") else {
                    fputs("school reader: \(path) on port \(c.port) refused: \(head.split(separator: "\r\n").first ?? "")\n", stderr)
                    raw.close()
                    return false
                }
                leftover = Array(answer[(end! + 4)...])
            } else {
                raw.write(RawConnection.header(0x21))
                while answer.count < 8 { guard readMore() else { raw.close(); return false } }
                guard answer.prefix(8).elementsEqual(RawConnection.header(0x20)) else { raw.close(); return false }
                leftover = Array(answer[8...])
            }
            connections[index].fd = raw.fd
            connections[index].connected = true
            if !leftover.isEmpty { received(index, leftover[...], at: monotonicNanos()) }
            return true
        }

        static func headerEnd(_ bytes: [UInt8]) -> Int? {
            guard bytes.count >= 4 else { return nil }
            for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return i }
            return nil
        }

        func window(_ nanos: UInt64) -> Int {
            for (index, window) in windows.enumerated() where nanos >= window.start && nanos < window.end { return index }
            return -1
        }

        func run(windowsPath: String, stopPath: String) {
            var polls = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            let parent = getppid()
            // Bounded: a child whose parent died stops by itself.
            let lifetime = monotonicNanos() + 1_800_000_000_000
            var nextCheck: UInt64 = 0
            var said = -1
            while monotonicNanos() < lifetime {
                let now = monotonicNanos()
                if now >= nextCheck {
                    nextCheck = now + 100_000_000
                    if access(stopPath, F_OK) == 0 || getppid() != parent { return }
                    if windows.isEmpty, let text = SubscriberProcesses.readFile(windowsPath) {
                        for line in text.split(separator: "\n") {
                            let parts = line.split(separator: " ")
                            if parts.count == 3, let start = UInt64(parts[1]), let end = UInt64(parts[2]) { windows.append((start, end)) }
                        }
                    }
                    let attached = connections.filter { $0.attached }.count
                    if attached != said {
                        said = attached
                        SubscriberProcesses.writeAll(1, "attached \(attached)\n")
                    }
                }
                guard poll(&polls, nfds_t(polls.count), 100) > 0 else { continue }
                for index in polls.indices where polls[index].revents != 0 {
                    polls[index].revents = 0
                    // Level-triggered: what is left is read on the next turn.
                    for _ in 0..<16 {
                        let n = buffer.withUnsafeMutableBytes { recv(polls[index].fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
                        if n > 0 {
                            received(index, buffer[0..<n], at: monotonicNanos())
                            if n < buffer.count { break }
                            continue
                        }
                        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { break }
                        connections[index].closed = true
                        close(polls[index].fd)
                        polls[index].fd = -1
                        break
                    }
                }
            }
        }

        func received(_ index: Int, _ chunk: ArraySlice<UInt8>, at nanos: UInt64) {
            let w = window(nanos)
            if w >= 0 { connections[index].bytes[w] += chunk.count }
            var pending = connections[index].pending
            connections[index].pending = []
            pending += chunk
            var offset = 0
            pending.withUnsafeBytes { raw in
                if connections[index].kind == .stream {
                    // WebSocket frames from a server: unmasked, 2, 4 or 10 header bytes.
                    while raw.count - offset >= 2 {
                        let first = raw[offset], second = raw[offset + 1]
                        var length = Int(second & 0x7F), head = 2
                        if length == 126 {
                            guard raw.count - offset >= 4 else { break }
                            length = Int(raw[offset + 2]) << 8 | Int(raw[offset + 3])
                            head = 4
                        } else if length == 127 {
                            guard raw.count - offset >= 10 else { break }
                            length = 0
                            for i in 2..<10 { length = length << 8 | Int(raw[offset + i]) }
                            head = 10
                        }
                        if second & 0x80 != 0 { head += 4 }
                        guard raw.count - offset >= head + length else { break }
                        let opcode = first & 0x0F
                        let payload = UnsafeRawBufferPointer(rebasing: raw[(offset + head)..<(offset + head + length)])
                        if opcode == 0x2 || opcode == 0x0 { message(index, payload, window: w, at: nanos) } else if w >= 0 { connections[index].foreign[w] += 1 }
                        offset += head + length
                    }
                } else {
                    // SP/TCP: an 8-byte big-endian length, then the message.
                    while raw.count - offset >= 8 {
                        var length = 0
                        for i in 0..<8 { length = length << 8 | Int(raw[offset + i]) }
                        guard raw.count - offset >= 8 + length else { break }
                        message(index, UnsafeRawBufferPointer(rebasing: raw[(offset + 8)..<(offset + 8 + length)]), window: w, at: nanos)
                        offset += 8 + length
                    }
                }
            }
            pending.removeFirst(offset)
            connections[index].pending = pending
        }

        func message(_ index: Int, _ bytes: UnsafeRawBufferPointer, window w: Int, at nanos: UInt64) {
            let kind = connections[index].kind, room = connections[index].room
            if kind == .reference {
                connections[index].attached = true
                guard w >= 0, let zero = bytes.firstIndex(of: 0), let topicRoom = roomsByTopic[Array(bytes[...zero])] else { return }
                references[connections[index].node]![w][topicRoom, default: 0] += 8 + bytes.count
                return
            }
            guard let topic = topics[room], bytes.count >= topic.count, bytes.prefix(topic.count).elementsEqual(topic) else {
                if w >= 0 { connections[index].foreign[w] += 1 }
                return
            }
            connections[index].attached = true
            if w >= 0 { connections[index].ownTopicBytes[w] += 8 + bytes.count }
            guard w == SchoolBench.busy else { return }
            for found in MessagingBench.indexes(in: bytes, marker: MessagingBench.marker) where Int(found >> 32) == room {
                let sequence = found & 0xFFFF_FFFF
                guard sequence < 64 else { continue }
                let bit = UInt64(1) << sequence
                if connections[index].seen & bit == 0 {
                    connections[index].seen |= bit
                    if connections[index].timed { arrivals.append((connections[index].id, found, nanos)) }
                }
            }
        }

        func report() -> String {
            var lines: [String] = []
            for c in connections {
                let numbers = [c.connected ? 1 : 0, c.attached ? 1 : 0, c.closed ? 1 : 0,
                               c.bytes[0], c.foreign[0], c.ownTopicBytes[0], c.bytes[1], c.foreign[1], c.ownTopicBytes[1], Int(Int64(bitPattern: c.seen))]
                // A reference reports under its node.
                lines.append("c \(c.kind) \(c.kind == .reference ? c.node : c.id) " + numbers.map(String.init).joined(separator: " "))
            }
            for (node, perWindow) in references.sorted(by: { $0.key < $1.key }) {
                for (w, rooms) in perWindow.enumerated() {
                    for (room, bytes) in rooms.sorted(by: { $0.key < $1.key }) { lines.append("r \(node) \(w) \(room) \(bytes)") }
                }
            }
            for arrival in arrivals { lines.append("a \(arrival.id) \(arrival.index) \(arrival.nanos)") }
            return lines.joined(separator: "\n") + "\n"
        }
    }
}
