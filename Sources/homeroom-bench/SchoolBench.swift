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
    /// After the busy window: a message of the window that arrives late (a writer behind its
    /// schedule on a loaded machine) is still delivered, not lost; no bytes are counted here.
    static let grace = 2
    static let graceSeconds: UInt64 = 6
    static let probeSequence: UInt64 = 0xFFFF_FFFF
    static let text = Array("a question about fractions".utf8)

    static func roomName(_ room: Int) -> String { "school-room-\(room)" }
    static func node(room: Int, member: Int) -> Int { (room + member) % nodeCount }
    /// The listeners whose arrivals are timed: members 0-2 (one on each node) of rooms 0-3.
    static func timed(room: Int, member: Int) -> Bool { room < 4 && member < 3 }

    // MARK: - Suite

    /// What `--suite school` measures, one after the other in the same sitting: the Homeroom
    /// nodes (streams, then v1), then the NATS and Redis baselines (`--suite school-nats`,
    /// `--suite school-redis` run one alone).
    enum System: String, CaseIterable { case homeroom, nats, redis }

    static func run(quick: Bool, systems: Set<System> = Set(System.allCases), emit: (BenchRow) -> Void) {
        let sizes = quick ? Sizes(rooms: 50, members: 5, windowSeconds: 10, v1RoomStride: 1)
                          : Sizes(rooms: 500, members: 20, windowSeconds: 30, v1RoomStride: 5)
        // Each system's servers are stopped before the next one's start.
        if systems.contains(.homeroom) { runHomeroom(sizes, emit: emit) }
        if systems.contains(.nats) { runBroker(.nats, sizes, emit: emit) }
        if systems.contains(.redis) { runBroker(.redis, sizes, emit: emit) }
    }

    static func runHomeroom(_ sizes: Sizes, emit: (BenchRow) -> Void) {
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
                let home = node(room: room, member: member)
                let listener = Listener(id: room * sizes.members + member, room: room, node: home, port: port(nodes[home].publish),
                                        timed: timed(room: room, member: member))
                streamPlan.append(listener)
                if (member == 0 && room % sizes.v1RoomStride == 0) || sizes.v1RoomStride == 1 || listener.timed { v1Plan.append(listener) }
            }
        }
        let target = Target(pids: nodes.map(\.pid), writers: requesters.map { HomeroomWriter(requester: $0) },
                            writerOf: (0..<sizes.rooms).map { $0 % nodeCount }, referencePorts: nodes.map { port($0.publish) },
                            stateChanges: "room property writes")
        let streams = runPhase(.stream, streamPlan, sizes: sizes, target: target, ledger: ledger, base: base)
        let v1 = runPhase(.v1, v1Plan, sizes: sizes, target: target, ledger: ledger, base: base)
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

    enum Kind: String { case stream, v1, reference, nats, redis }

    struct Listener {
        var id: Int
        var room: Int
        /// The server (node) it listens on, and that server's port for it.
        var node: Int
        var port: UInt16
        var timed: Bool
    }

    /// The servers a phase measures and how the workload reaches them.
    struct Target {
        var pids: [pid_t]
        var writers: [any RoomWriter]
        /// Per room: the writer (and so the server) its messages are published through.
        var writerOf: [Int]
        /// Homeroom only: the publish ports of the nodes, one v1 reference subscriber each (stream phase).
        var referencePorts: [UInt16] = []
        /// What the writers' second kind of write is called in the notes.
        var stateChanges: String
    }

    /// One connection publishing for its rooms; used by one thread at a time.
    protocol RoomWriter: Sendable {
        /// A room message carrying `index` after the marker; true once the server acknowledged it.
        func message(room: Int, index: UInt64, ledger: Ledger) -> Bool
        /// The occasional state change of the room (every 10 s).
        func stateChange(room: Int, ledger: Ledger) -> Bool
    }

    struct HomeroomWriter: RoomWriter {
        let requester: SPRequester

        func message(room: Int, index: UInt64, ledger: Ledger) -> Bool { sendMessage(requester, room: room, index: index, ledger: ledger) }

        func stateChange(room: Int, ledger: Ledger) -> Bool {
            let counter = ledger.next(room)
            let operation = Operation.setRoomProperty(key: "slide", value: Array(String(counter).utf8), cause: "bench")
            return write(requester, room: room, operation, counter: counter)
        }
    }

    /// The name a listener of `kind` follows: the Homeroom room, or the broker's subject or channel.
    static func channel(_ kind: Kind, room: Int) -> String {
        switch kind {
        case .stream, .v1, .reference: return roomName(room)
        case .nats, .redis: return "room.\(room)"
        }
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

    static func runPhase(_ kind: Kind, _ listeners: [Listener], sizes: Sizes, target: Target, ledger: Ledger, base: String) -> PhaseResult? {
        let me = CommandLine.arguments[0]
        let windows = "\(base)-\(kind).windows", stop = "\(base)-\(kind).stop"
        unlink(windows)
        unlink(stop)
        // Listeners sharded by room, so a child wakes for its own rooms only.
        let childCount = max(1, (listeners.count + listenersPerChild - 1) / listenersPerChild)
        var plans = [[String]](repeating: [], count: childCount)
        for room in 0..<sizes.rooms { for c in 0..<childCount { plans[c].append("room \(room) \(channel(kind, room: room))") } }
        for listener in listeners {
            plans[listener.room % childCount].append("\(kind) \(listener.id) \(listener.port) \(listener.room) \(listener.node) \(listener.timed ? 1 : 0)")
        }
        let references = kind == .stream ? target.referencePorts : []
        if !references.isEmpty {
            // One v1 subscriber per node, counting what each room's topic carried.
            plans.append((0..<sizes.rooms).map { "room \($0) \(roomName($0))" } + references.indices.map { "reference \($0) \(references[$0]) 0 \($0) 0" })
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
                _ = target.writers[target.writerOf[room]].message(room: room, index: UInt64(room) << 32 | probeSequence, ledger: ledger)
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
        guard writeFile(windows + ".tmp", "idle \(idleStart) \(idleEnd)\nbusy \(busyStart) \(busyEnd)\ngrace \(busyEnd) \(busyEnd + graceSeconds * 1_000_000_000)\n"), rename(windows + ".tmp", windows) == 0 else { return nil }
        ledger.resetWindow()
        let threads = target.writers.indices.map { index -> RawThread in
            let rooms = (0..<sizes.rooms).filter { target.writerOf[$0] == index }
            let events = schedule(rooms: rooms, sizes: sizes, start: busyStart)
            let writer = target.writers[index]
            return RawThread { SchoolBench.write(events, writer: writer, ledger: ledger, until: busyEnd + 5_000_000_000) }
        }
        func cpu() -> [Double] { target.pids.map { NodeProcesses.cpuSeconds($0) ?? 0 } }
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
        result.references = [[[Int]]](repeating: [[Int]](repeating: [Int](repeating: 0, count: sizes.rooms), count: 2), count: references.count)
        result.referenceTotals = [[Int]](repeating: [0, 0], count: references.count)
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
            + "\(ledger.stateChanges.load(ordering: .relaxed)) \(target.stateChanges), \(ledger.failed.load(ordering: .relaxed)) writes refused or unanswered, "
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

    /// A writer's rooms: message s of room r at start + s seconds + 50-500 ms (spread by
    /// room), and a state change (a room property) 400 ms later every 10 s.
    static func schedule(rooms: [Int], sizes: Sizes, start: UInt64) -> [Event] {
        var events: [Event] = []
        for room in rooms {
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

    static func write(_ events: [Event], writer: any RoomWriter, ledger: Ledger, until deadline: UInt64) {
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
                if writer.message(room: event.room, index: index, ledger: ledger) {
                    ledger.acked.withLock { $0[event.room] += 1 }
                } else {
                    ledger.failed.add(1, ordering: .relaxed)
                }
            } else {
                if writer.stateChange(room: event.room, ledger: ledger) {
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
                             "--http", "http://127.0.0.1:0", "--session-timeout-ms", "0", "--joins-per-second", "1000000", "--room-creations-per-second", "1000000",
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
            /// Per window: idle, busy, grace.
            var bytes = [0, 0, 0]
            var foreign = [0, 0, 0]
            var ownTopicBytes = [0, 0, 0]
            /// Bit s set once message s of the room came, in the busy window or the grace after it.
            var seen: UInt64 = 0
        }

        var connections: [Connection] = []
        var roomNames: [Int: String] = [:]
        /// Per room: the name as bytes (a NATS subject or Redis channel is compared with it).
        var channels: [Int: [UInt8]] = [:]
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
                    channels[room] = Array(parts[2].utf8)
                    topics[room] = Topics.clientRoom(String(parts[2]))
                    roomsByTopic[Topics.clientRoom(String(parts[2]))] = room
                    continue
                }
                guard parts.count == 6, let kind = Kind(rawValue: String(parts[0])), let id = Int(parts[1]), let port = UInt16(parts[2]),
                      let room = Int(parts[3]), let node = Int(parts[4]) else { continue }
                connections.append(Connection(kind: kind, id: id, port: port, room: room, node: node, timed: parts[5] == "1"))
                if kind == .reference { references[node] = [[:], [:], [:]] }
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
            let channel = roomNames[c.room] ?? ""
            if c.kind == .nats {
                // INFO, then CONNECT and SUB; the PONG to our PING says the server has read the SUB.
                var consumed = 0
                var said = false
                while true {
                    if let end = Self.lineEnd(answer, from: consumed) {
                        let line = String(decoding: answer[consumed..<end], as: UTF8.self)
                        consumed = end + 2
                        if line.hasPrefix("INFO "), !said {
                            raw.write(Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB \(channel) 1\r\nPING\r\n".utf8))
                            said = true
                        } else if line == "PONG", said {
                            break
                        } else if line.hasPrefix("-ERR") {
                            fputs("school reader: SUB \(channel) on port \(c.port) refused: \(line)\n", stderr)
                            raw.close()
                            return false
                        }
                        continue
                    }
                    guard answer.count < 65_536, readMore() else { raw.close(); return false }
                }
                leftover = Array(answer[consumed...])
            } else if c.kind == .redis {
                // A shard channel: this must be the master that owns the channel's slot, or it answers MOVED.
                raw.write(RESP.command(["SSUBSCRIBE", channel]))
                while true {
                    let parsed = answer.withUnsafeBytes { RESP.parse($0, at: 0) }
                    if let (value, next) = parsed {
                        guard case let .array(items?) = value, items.count == 3, case .bulk(let kind?) = items[0], kind.elementsEqual("ssubscribe".utf8) else {
                            fputs("school reader: SSUBSCRIBE \(channel) on port \(c.port) refused: \(value)\n", stderr)
                            raw.close()
                            return false
                        }
                        leftover = Array(answer[next...])
                        break
                    }
                    guard answer.count < 65_536, readMore() else { raw.close(); return false }
                }
            } else if c.kind == .stream {
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

        /// Where the first CR LF at or after `start` begins.
        static func lineEnd(_ bytes: [UInt8], from start: Int) -> Int? {
            guard bytes.count >= start + 2 else { return nil }
            for i in start..<(bytes.count - 1) where bytes[i] == 13 && bytes[i + 1] == 10 { return i }
            return nil
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
                if connections[index].kind == .nats {
                    offset = natsFrames(index, raw, window: w, at: nanos)
                } else if connections[index].kind == .redis {
                    // RESP2 pushes: *3 $8 smessage $<n> <channel> $<n> <payload>.
                    while let (value, next) = RESP.parse(raw, at: offset) {
                        offset = next
                        guard case let .array(items?) = value, items.count == 3, case .bulk(let kind?) = items[0],
                              kind.elementsEqual("smessage".utf8) || kind.elementsEqual("message".utf8),
                              case .bulk(let channel?) = items[1], case .bulk(let payload?) = items[2] else {
                            if w >= 0 { connections[index].foreign[w] += 1 }
                            continue
                        }
                        payload.withUnsafeBytes { brokerMessage(index, channel: channel, payload: $0, window: w, at: nanos) }
                    }
                } else if connections[index].kind == .stream {
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

        /// NATS server lines: MSG <subject> <sid> [reply-to] <#bytes> CR LF <payload> CR LF; a PING
        /// is answered with a PONG. What was consumed.
        func natsFrames(_ index: Int, _ raw: UnsafeRawBufferPointer, window w: Int, at nanos: UInt64) -> Int {
            var offset = 0
            while true {
                var end = -1
                var i = offset
                while i + 1 < raw.count {
                    if raw[i] == 13 && raw[i + 1] == 10 { end = i; break }
                    i += 1
                }
                guard end >= 0 else { return offset }
                let line = UnsafeRawBufferPointer(rebasing: raw[offset..<end])
                if line.starts(with: "MSG ".utf8) {
                    let fields = line.split(separator: 32)
                    guard fields.count >= 4, let length = Int(String(decoding: fields[fields.count - 1], as: UTF8.self)) else {
                        if w >= 0 { connections[index].foreign[w] += 1 }
                        offset = end + 2
                        continue
                    }
                    guard raw.count >= end + 2 + length + 2 else { return offset }
                    brokerMessage(index, channel: Array(fields[1]), payload: UnsafeRawBufferPointer(rebasing: raw[(end + 2)..<(end + 2 + length)]), window: w, at: nanos)
                    offset = end + 2 + length + 2
                    continue
                }
                if line.elementsEqual("PING".utf8) {
                    let pong = Array("PONG\r\n".utf8)
                    _ = pong.withUnsafeBytes { send(connections[index].fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                } else if !line.elementsEqual("PONG".utf8) && !line.elementsEqual("+OK".utf8) && !line.starts(with: "INFO ".utf8) {
                    fputs("school reader: port \(connections[index].port): \(String(decoding: line, as: UTF8.self))\n", stderr)
                    if w >= 0 { connections[index].foreign[w] += 1 }
                }
                offset = end + 2
            }
        }

        /// A NATS or Redis message: own-channel payload bytes are what the listener's bytes are held against.
        func brokerMessage(_ index: Int, channel: [UInt8], payload: UnsafeRawBufferPointer, window w: Int, at nanos: UInt64) {
            guard let own = channels[connections[index].room], channel == own else {
                if w >= 0 { connections[index].foreign[w] += 1 }
                return
            }
            connections[index].attached = true
            if w >= 0 { connections[index].ownTopicBytes[w] += payload.count }
            guard w == SchoolBench.busy || w == SchoolBench.grace else { return }
            note(index, payload, at: nanos)
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
            guard w == SchoolBench.busy || w == SchoolBench.grace else { return }
            note(index, bytes, at: nanos)
        }

        /// Busy window: the room messages in `bytes`, each noted once per listener (and timed at the timed ones).
        func note(_ index: Int, _ bytes: UnsafeRawBufferPointer, at nanos: UInt64) {
            let room = connections[index].room
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

// MARK: - NATS and Redis baselines

/// The peers a user would pick instead, on the same school workload in the same sitting:
/// three `nats-server` processes clustered on loopback (core NATS, a subject per room), and
/// three `redis-server` processes as a Redis Cluster with sharded pub/sub (a shard channel
/// per room). The listeners are the same reader children, speaking the NATS text protocol
/// or RESP; the writers are raw connections paced by the same schedule. Neither server is
/// required: a missing binary gives a row saying how to install it.
extension SchoolBench {
    enum Broker: String {
        case nats, redis

        var package: String { self == .nats ? "nats-server" : "redis-server" }
        var suite: String { "school-\(rawValue)" }
        var kind: Kind { self == .nats ? .nats : .redis }
    }

    struct ServerChild {
        var pid: pid_t
        var port: UInt16
        var files: [String]
    }

    static func runBroker(_ broker: Broker, _ sizes: Sizes, emit: (BenchRow) -> Void) {
        let label = "\(sizes.rooms)-rooms-\(sizes.members)-members"
        let first = "\(broker.rawValue)-bytes-per-listener-\(label)"
        func incomplete(_ reason: String) {
            fputs("school: \(broker.rawValue): \(reason)\n", stderr)
            emit(BenchRow(suite: broker.suite, name: first, n: 0, note: "INCOMPLETE: \(reason)"))
        }
        guard let binary = findBinary(broker.package), broker == .nats || findBinary("redis-cli") != nil else {
            fputs("school: \(broker.package) is not installed; its baseline is skipped\n", stderr)
            emit(BenchRow(suite: broker.suite, name: first, n: 0, note: "not installed: apt-get install \(broker.package)"))
            return
        }
        let version = versionLine(binary)
        let base = "/tmp/homeroom-bench-school-\(getpid())-\(broker.rawValue)"
        var servers: [ServerChild] = []
        defer { stopServers(servers) }
        var owner: [Int] = []
        var layout = ""
        switch broker {
        case .nats:
            guard startNATS(binary: binary, base: base, into: &servers) else { return incomplete("the 3 nats-server processes did not form a cluster (see stderr)") }
        case .redis:
            guard startRedis(binary: binary, cli: findBinary("redis-cli")!, base: base, into: &servers) else { return incomplete("the Redis Cluster of 3 masters did not form (see stderr)") }
            guard let slots = redisSlots(port: servers[0].port) else { return incomplete("CLUSTER SLOTS gave no answer") }
            guard crc16(Array("123456789".utf8)) == 0x31C3 else { return incomplete("CRC16 (XMODEM) self-check failed") }
            for room in 0..<sizes.rooms {
                let slot = hashSlot(channel(.redis, room: room))
                guard let port = slots.first(where: { $0.range.contains(slot) })?.port, let index = servers.firstIndex(where: { $0.port == port }) else {
                    return incomplete("slot \(slot) (\(channel(.redis, room: room))) has no owner among the 3 masters in CLUSTER SLOTS")
                }
                owner.append(index)
            }
            // The slot computed here must be the server's.
            for room in [0, 1, sizes.rooms - 1] {
                guard case .integer(let slot)? = redisCommand(port: servers[0].port, ["CLUSTER", "KEYSLOT", channel(.redis, room: room)]),
                      slot == hashSlot(channel(.redis, room: room)) else { return incomplete("CLUSTER KEYSLOT disagrees with the CRC16 hash slot of \(channel(.redis, room: room))") }
            }
            layout = "; rooms per master: " + servers.indices.map { index in String(owner.filter { $0 == index }.count) }.joined(separator: ", ")
        }

        var writers: [BrokerWriter] = []
        defer { for writer in writers { writer.close() } }
        for server in servers {
            guard let writer = BrokerWriter(broker, port: server.port) else { return incomplete("a writer did not connect to port \(server.port)") }
            writers.append(writer)
        }
        var plan: [Listener] = []
        for room in 0..<sizes.rooms {
            for member in 0..<sizes.members {
                // NATS: placed as the Homeroom stream listeners are. Redis: the master owning the channel's slot.
                let home = broker == .nats ? node(room: room, member: member) : owner[room]
                plan.append(Listener(id: room * sizes.members + member, room: room, node: home, port: servers[home].port, timed: timed(room: room, member: member)))
            }
        }
        let target = Target(pids: servers.map(\.pid), writers: writers, writerOf: broker == .nats ? (0..<sizes.rooms).map { $0 % nodeCount } : owner,
                            stateChanges: "state-change messages")
        let ledger = Ledger(rooms: sizes.rooms)
        let phase = runPhase(broker.kind, plan, sizes: sizes, target: target, ledger: ledger, base: base)
        let exited = servers.filter { !running($0.pid) }.count
        reportBroker(broker, sizes: sizes, phase: phase, planned: plan.count, version: version, layout: layout, serversExited: exited, emit: emit)
    }

    static func reportBroker(_ broker: Broker, sizes: Sizes, phase: PhaseResult?, planned: Int, version: String, layout: String, serversExited: Int, emit: (BenchRow) -> Void) {
        let label = "\(sizes.rooms)-rooms-\(sizes.members)-members"
        let name = broker.rawValue
        let exitedNote = serversExited > 0 ? "; \(serversExited) server process(es) exited during the run" : ""
        guard let phase else {
            emit(BenchRow(suite: broker.suite, name: "\(name)-bytes-per-listener-\(label)", n: 0, note: "INCOMPLETE: the phase did not run (see stderr)" + exitedNote))
            return
        }
        let workload = "\(sizes.rooms) rooms x \(sizes.members) listeners; 1 message/s per room with the 42-byte payload of Homeroom's room message (marker, index, "
            + "the same line of text), paced on the same schedule, and every 10 s a second message on the room's channel (a JSON state change, 14-16 bytes) "
            + "standing in for the room property write"
        let setup: String
        switch broker {
        case .nats:
            setup = "3 nats-server processes (\(version)) clustered on loopback (-p, --cluster, --routes to the other two), core NATS: no JetStream, at most once, "
                + "nothing stored; a subject per room (room.<r>); member j of room r subscribes on server (r + j) % 3, as the Homeroom stream listeners are "
                + "placed; writers: 3 raw connections, one per server, room r's messages published through server r % 3 as Homeroom's teachers write, "
                + "each PUB followed by a PING and acknowledged at its PONG (the server has read the PUB; NATS confirms no delivery); " + workload
        case .redis:
            setup = "3 redis-server processes (\(version)) as a Redis Cluster of 3 masters and no replicas (cluster-enabled yes, redis-cli --cluster create, "
                + "save \"\" and appendonly no), sharded pub/sub (SSUBSCRIBE/SPUBLISH), a shard channel per room (room.<r>): the one a user would pick for "
                + "per-room channels, since a classic PUBLISH in a cluster is broadcast over the cluster bus to every node, so every node carries every room, "
                + "while a shard channel stays on the master owning its hash slot; each listener connects to that master (slot = CRC16 of the channel mod "
                + "16384, checked against CLUSTER KEYSLOT; owner from CLUSTER SLOTS) and the room's messages are SPUBLISHed through it (another master "
                + "answers MOVED), so no message crosses between servers, unlike 2 of 3 Homeroom and NATS listeners; acknowledged at SPUBLISH's integer "
                + "reply\(layout); " + workload
        }
        let measured = phase.listeners.values.filter { $0.connected }
        let window = phase.busySeconds, idleWindow = phase.idleSeconds
        let bytes = measured.reduce(0) { $0 + $1.bytes[busy] }
        let payload = measured.reduce(0) { $0 + $1.ownTopicBytes[busy] }
        let perListener = Double(bytes) / Double(max(1, measured.count)) / window
        let payloadPerListener = Double(payload) / Double(max(1, measured.count)) / window
        let ratios = measured.compactMap { $0.ownTopicBytes[busy] > 0 ? Double($0.bytes[busy]) / Double($0.ownTopicBytes[busy]) : nil }
        let delivered = measured.reduce(0) { $0 + $1.seen.nonzeroBitCount }
        let expected = measured.reduce(0) { $0 + phase.acked[$1.room] }
        let foreign = measured.reduce(0) { $0 + $1.foreign[busy] + $1.foreign[idle] }
        let idleBytes = measured.map { Double($0.bytes[idle]) / idleWindow }
        let loss = delivered == expected ? "" : "INCOMPLETE: \(delivered) of \(expected) room messages delivered; "
        let framing = broker == .nats ? "NATS protocol: a MSG line, the payload and CR LF per message" : "RESP2: a 3-element smessage array per message"
        let cpu = "server CPU-s per minute in the window: \(phase.cpuPerMinute(busy).map { format($0) }.joined(separator: ", "))"
        emit(BenchRow(suite: broker.suite, name: "\(name)-bytes-per-listener-\(label)", n: measured.count, bytesPerOp: perListener, seconds: window,
                      ratioVsRaw: Double(bytes) / Double(max(1, payload)),
                      note: loss + "baseline on the same workload, its servers alone on the machine (with --suite school, after the Homeroom nodes stopped); bytes/op: bytes per second per listening connection, "
                          + "every byte read on the socket (\(framing)), over a \(format(window)) s window; ratio: those bytes / the payload bytes of its own "
                          + "channel's messages in the same window (\(format(payloadPerListener)) B/s per listener; per-listener ratio "
                          + "\(format(ratios.min() ?? 0))-\(format(ratios.max() ?? 0))); \(delivered) of \(expected) room messages delivered (listener x message, "
                          + "by \(graceSeconds) s after the window's end; lost \(expected - delivered)); messages of other channels or errors: \(foreign); \(measured.count) of \(planned) listeners connected "
                          + "(\(phase.failed) failed to connect, \(phase.notAttached) never got a probe, \(phase.closed) closed by the server); " + setup
                          + "; \(phase.writeNote); " + cpu + exitedNote))
        emit(BenchRow(suite: broker.suite, name: "\(name)-idle-bytes-per-listener-\(label)", n: measured.count,
                      bytesPerOp: idleBytes.reduce(0, +) / Double(max(1, idleBytes.count)), seconds: idleWindow,
                      note: "bytes per second per listener over \(format(idleWindow)) s with no write at all (max \(format(idleBytes.max() ?? 0)) B/s); "
                          + "server CPU-s per minute: " + phase.cpuPerMinute(idle).map { format($0) }.joined(separator: ", ")))
        let latency = phase.latencies
        if !latency.isEmpty {
            emit(BenchRow(suite: broker.suite, name: "\(name)-delivery-latency-\(label)", n: latency.count,
                          p50Micros: percentile(latency, 0.5), p99Micros: percentile(latency, 0.99), seconds: window,
                          note: "from just before the publish write to the message's arrival at the listener (CLOCK_MONOTONIC in both processes), the same "
                              + "\(phase.timedCount) timed listeners as the Homeroom rows (members 0-2 of rooms 0-3), every room message of the window, "
                              + "while the servers served \(measured.count) listeners"
                              + (broker == .redis ? "; with sharded pub/sub all three are on the master owning the room's slot" : "")))
        }
    }

    // MARK: Writers

    /// A raw connection to one server, publishing for the rooms given to it; each publish
    /// waits for the server's answer (NATS: the PONG to a PING after the PUB; Redis: SPUBLISH's reply).
    final class BrokerWriter: RoomWriter {
        let broker: Broker
        let fd: Int32
        let pending = Mutex<[UInt8]>([])

        init?(_ broker: Broker, port: UInt16) {
            guard let raw = RawConnection(port: port) else { return nil }
            self.broker = broker
            fd = raw.fd
            if broker == .nats {
                // INFO first; then CONNECT, answered (with verbose off) only by the PONG.
                guard line(where: { $0.hasPrefix("INFO ") }) != nil else { raw.close(); return nil }
                send(Array("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n".utf8))
                guard line(where: { $0 == "PONG" }) != nil else { raw.close(); return nil }
            }
        }

        func close() { Glibc.close(fd) }

        func message(room: Int, index: UInt64, ledger: Ledger) -> Bool {
            var payload = MessagingBench.marker
            withUnsafeBytes(of: index.littleEndian) { payload.append(contentsOf: $0) }
            payload += SchoolBench.text
            return publish(room: room, payload)
        }

        func stateChange(room: Int, ledger: Ledger) -> Bool {
            publish(room: room, Array("{\"slide\":\"\(ledger.next(room))\"}".utf8))
        }

        func publish(room: Int, _ payload: [UInt8]) -> Bool {
            let channel = SchoolBench.channel(broker.kind, room: room)
            switch broker {
            case .nats:
                send(Array("PUB \(channel) \(payload.count)\r\n".utf8) + payload + Array("\r\nPING\r\n".utf8))
                return line(where: { $0 == "PONG" }) != nil
            case .redis:
                send(RESP.command(["SPUBLISH", channel], payload))
                guard case .integer? = reply() else { return false }
                return true
            }
        }

        func send(_ bytes: [UInt8]) {
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                offset += n
            }
        }

        func readMore(_ buffer: inout [UInt8]) -> Bool {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &chunk, chunk.count, 0)
            guard n > 0 else { return false }
            buffer += chunk[0..<n]
            return true
        }

        /// NATS: lines until one matches (a PING from the server is answered on the way); nil on -ERR, close or 3 s of silence.
        func line(where wanted: (String) -> Bool) -> String? {
            pending.withLock { buffer in
                while true {
                    while let end = Reader.lineEnd(buffer, from: 0) {
                        let line = String(decoding: buffer[..<end], as: UTF8.self)
                        buffer.removeFirst(end + 2)
                        if wanted(line) { return line }
                        if line == "PING" { send(Array("PONG\r\n".utf8)) }
                        if line.hasPrefix("-ERR") {
                            fputs("school: nats writer: \(line)\n", stderr)
                            return nil
                        }
                    }
                    guard readMore(&buffer) else { return nil }
                }
            }
        }

        /// Redis: the next reply; nil on close or 3 s of silence, the error printed.
        func reply() -> RESP.Value? {
            pending.withLock { buffer in
                while true {
                    if let (value, next) = buffer.withUnsafeBytes({ RESP.parse($0, at: 0) }) {
                        buffer.removeFirst(next)
                        if case .error(let text) = value { fputs("school: redis writer: \(String(decoding: text, as: UTF8.self))\n", stderr) }
                        return value
                    }
                    guard readMore(&buffer) else { return nil }
                }
            }
        }
    }

    // MARK: Servers

    /// Three nats-server processes on loopback, each routed to the other two; true once
    /// each reports 2 routes on its monitoring port (60 s at most).
    static func startNATS(binary: String, base: String, into servers: inout [ServerChild]) -> Bool {
        let ports = (0..<nodeCount).map { _ in (client: freePort(), cluster: freePort(), monitor: freePort()) }
        guard ports.allSatisfy({ $0.client != 0 && $0.cluster != 0 && $0.monitor != 0 }) else { return false }
        for index in 0..<nodeCount {
            let log = "\(base)-\(index).log", output = "\(base)-\(index).out"
            let routes = ports.indices.filter { $0 != index }.map { "nats://127.0.0.1:\(ports[$0].cluster)" }.joined(separator: ",")
            let arguments = [binary, "-n", "school-\(index)", "-a", "127.0.0.1", "-p", String(ports[index].client), "-m", String(ports[index].monitor),
                             "--cluster_name", "school", "--cluster", "nats://127.0.0.1:\(ports[index].cluster)", "--routes", routes, "-l", log]
            guard let pid = SubscriberProcesses.spawn(arguments, stdout: output) else {
                fputs("school: nats-server \(index) did not start\n", stderr)
                return false
            }
            servers.append(ServerChild(pid: pid, port: ports[index].client, files: [log, output]))
        }
        let formed = waitUntil(seconds: 60) {
            ports.allSatisfy { port in
                guard let connection = RawConnection(port: port.monitor) else { return false }
                defer { connection.close() }
                connection.write(Array("GET /routez HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                let text = String(decoding: connection.read(Int.max), as: UTF8.self).filter { $0 != " " }
                return text.contains("\"num_routes\":\(nodeCount - 1)")
            }
        }
        if !formed {
            fputs("school: the nats-servers did not each report \(nodeCount - 1) routes within 60 s\n", stderr)
            for server in servers { fputs(SubscriberProcesses.readFile(server.files[0]).map { String($0.suffix(2_000)) } ?? "", stderr) }
        }
        return formed
    }

    /// Three redis-server processes in cluster mode on loopback (each port + 10000 is its
    /// cluster bus), made one cluster of 3 masters by `redis-cli --cluster create`; true once
    /// every one says cluster_state:ok (60 s at most).
    static func startRedis(binary: String, cli: String, base: String, into servers: inout [ServerChild]) -> Bool {
        var ports: [UInt16] = []
        var candidate = 20_000 + Int(getpid() % 5_000)
        while ports.count < nodeCount && candidate < 30_000 {
            if canBind(UInt16(candidate)) && canBind(UInt16(candidate + 10_000)) { ports.append(UInt16(candidate)) }
            candidate += 7
        }
        guard ports.count == nodeCount else {
            fputs("school: no free loopback ports for 3 redis-servers and their cluster buses\n", stderr)
            return false
        }
        for (index, port) in ports.enumerated() {
            let directory = "/tmp", nodesFile = "homeroom-bench-school-\(getpid())-redis-\(index).nodes"
            let log = "\(base)-\(index).log", output = "\(base)-\(index).out"
            let arguments = [binary, "--port", String(port), "--bind", "127.0.0.1", "--protected-mode", "no", "--cluster-enabled", "yes",
                             "--cluster-config-file", nodesFile, "--dir", directory, "--save", "", "--appendonly", "no", "--maxclients", "15000",
                             "--logfile", log, "--daemonize", "no"]
            guard let pid = SubscriberProcesses.spawn(arguments, stdout: output) else {
                fputs("school: redis-server \(index) did not start\n", stderr)
                return false
            }
            servers.append(ServerChild(pid: pid, port: port, files: [log, output, "\(directory)/\(nodesFile)"]))
        }
        guard waitUntil(seconds: 30, { ports.allSatisfy { if case .simple(let text)? = redisCommand(port: $0, ["PING"]) { return text.elementsEqual("PONG".utf8) } else { return false } } }) else {
            fputs("school: the redis-servers did not answer PING within 30 s\n", stderr)
            return false
        }
        let createOutput = "\(base)-create.out"
        defer { unlink(createOutput) }
        guard let create = SubscriberProcesses.spawn([cli, "--cluster", "create"] + ports.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "0", "--cluster-yes"],
                                                     stdout: createOutput) else {
            fputs("school: redis-cli did not start\n", stderr)
            return false
        }
        var status: Int32 = 0
        let deadline = monotonicNanos() + 60_000_000_000
        while waitpid(create, &status, WNOHANG) != create {
            if monotonicNanos() > deadline {
                kill(create, SIGKILL)
                waitpid(create, &status, 0)
                fputs("school: redis-cli --cluster create did not finish within 60 s\n", stderr)
                return false
            }
            usleep(50_000)
        }
        guard status == 0 else {
            fputs("school: redis-cli --cluster create failed:\n\(SubscriberProcesses.readFile(createOutput) ?? "")\n", stderr)
            return false
        }
        let formed = waitUntil(seconds: 60) {
            ports.allSatisfy { port in
                guard case .bulk(let text?)? = redisCommand(port: port, ["CLUSTER", "INFO"]) else { return false }
                return String(decoding: text, as: UTF8.self).contains("cluster_state:ok")
            }
        }
        if !formed { fputs("school: the Redis Cluster did not reach cluster_state:ok on every master within 60 s\n", stderr) }
        return formed
    }

    /// SIGTERM, then SIGKILL after 10 s; every server reaped and its files removed.
    static func stopServers(_ servers: [ServerChild]) {
        for server in servers { kill(server.pid, SIGTERM) }
        let deadline = monotonicNanos() + 10_000_000_000
        for server in servers {
            SubscriberProcesses.waitOrKill(server.pid, deadlineNanos: deadline)
            for file in server.files { unlink(file) }
        }
    }

    /// CLUSTER SLOTS: each range of slots and the port of the master that owns it.
    static func redisSlots(port: UInt16) -> [(range: ClosedRange<Int>, port: UInt16)]? {
        guard case .array(let ranges?)? = redisCommand(port: port, ["CLUSTER", "SLOTS"]) else { return nil }
        var result: [(range: ClosedRange<Int>, port: UInt16)] = []
        for range in ranges {
            guard case .array(let fields?) = range, fields.count >= 3, case .integer(let start) = fields[0], case .integer(let end) = fields[1],
                  case .array(let master?) = fields[2], master.count >= 2, case .integer(let owner) = master[1], start <= end else { return nil }
            result.append((start...end, UInt16(owner)))
        }
        return result
    }

    /// One command on a connection of its own; its reply, or nil.
    static func redisCommand(port: UInt16, _ arguments: [String]) -> RESP.Value? {
        guard let connection = RawConnection(port: port) else { return nil }
        defer { connection.close() }
        connection.write(RESP.command(arguments))
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let (value, _) = answer.withUnsafeBytes({ RESP.parse($0, at: 0) }) { return value }
            let n = recv(connection.fd, &buffer, buffer.count, 0)
            if n <= 0 { return nil }
            answer += buffer[0..<n]
        }
    }

    /// A Redis Cluster hash slot: CRC16 (XMODEM) of the key, or of its {hash tag}, mod 16384.
    static func hashSlot(_ key: String) -> Int {
        var bytes = Array(key.utf8)
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")), let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            bytes = Array(bytes[(open + 1)..<close])
        }
        return Int(crc16(bytes) % 16_384)
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial 0; "123456789" gives 0x31C3.
    static func crc16(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }

    /// An executable named `name` on PATH or in the usual system directories (nats-server is in /usr/sbin on Debian).
    static func findBinary(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        return directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// The first line `binary --version` prints.
    static func versionLine(_ binary: String) -> String {
        let output = "/tmp/homeroom-bench-school-\(getpid())-version.out"
        defer { unlink(output) }
        guard let pid = SubscriberProcesses.spawn([binary, "--version"], stdout: output) else { return "version unknown" }
        SubscriberProcesses.waitOrKill(pid, deadlineNanos: monotonicNanos() + 10_000_000_000)
        // "nats-server: v2.9.10"; "Redis server v=7.0.15 sha=... malloc=...": up to the sha.
        let line = (SubscriberProcesses.readFile(output) ?? "").split(separator: "\n").first.map { String($0) } ?? "version unknown"
        return line.firstRange(of: " sha=").map { String(line[..<$0.lowerBound]) } ?? line
    }

    /// A free loopback TCP port (bound, read back, released), or 0.
    static func freePort() -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? UInt16(bigEndian: address.sin_port) : 0
    }

    static func canBind(_ port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 } }
    }
}

/// The few RESP2 values Redis answers with, parsed from the front of a buffer.
enum RESP {
    indirect enum Value: CustomStringConvertible {
        case simple([UInt8]), error([UInt8]), integer(Int), bulk([UInt8]?), array([Value]?)

        var description: String {
            switch self {
            case .simple(let text): return "+" + String(decoding: text, as: UTF8.self)
            case .error(let text): return "-" + String(decoding: text, as: UTF8.self)
            case .integer(let value): return ":\(value)"
            case .bulk(let bytes): return bytes.map { "\"" + String(decoding: $0, as: UTF8.self) + "\"" } ?? "(nil)"
            case .array(let items): return items.map { "[" + $0.map(\.description).joined(separator: ", ") + "]" } ?? "(nil array)"
            }
        }
    }

    /// A command as an array of bulk strings; `last`, when given, is one more argument in raw bytes.
    static func command(_ arguments: [String], _ last: [UInt8]? = nil) -> [UInt8] {
        let all = arguments.map { Array($0.utf8) } + (last.map { [$0] } ?? [])
        var bytes = Array("*\(all.count)\r\n".utf8)
        for argument in all { bytes += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10] }
        return bytes
    }

    /// The value at `start` and where the next begins; nil while it is incomplete. An
    /// unknown type byte is taken as an error line, so a stream never sticks on it.
    static func parse(_ raw: UnsafeRawBufferPointer, at start: Int) -> (Value, Int)? {
        guard start < raw.count else { return nil }
        var end = start + 1
        while end + 1 < raw.count && !(raw[end] == 13 && raw[end + 1] == 10) { end += 1 }
        guard end + 1 < raw.count else { return nil }
        let line = Array(raw[(start + 1)..<end])
        let next = end + 2
        let number = Int(String(decoding: line, as: UTF8.self)) ?? -1
        switch raw[start] {
        case UInt8(ascii: "+"): return (.simple(line), next)
        case UInt8(ascii: ":"): return (.integer(number), next)
        case UInt8(ascii: "$"):
            guard number >= 0 else { return (.bulk(nil), next) }
            guard raw.count >= next + number + 2 else { return nil }
            return (.bulk(Array(raw[next..<(next + number)])), next + number + 2)
        case UInt8(ascii: "*"), UInt8(ascii: ">"):
            guard number >= 0 else { return (.array(nil), next) }
            var items: [Value] = []
            var at = next
            for _ in 0..<number {
                guard let (item, after) = parse(raw, at: at) else { return nil }
                items.append(item)
                at = after
            }
            return (.array(items), at)
        default: return (.error(line), next)
        }
    }
}
