@preconcurrency import Glibc
import HomeroomCore
import HomeroomEngine
import HomeroomNode
import Synchronization
import HomeroomSupport
import HomeroomHarness

/// A flag that several threads read.
final class Flag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// What must go whatever happens: every child process and every namespace. Run by
/// the main thread at the end, or by the signal thread or the watchdog when the main
/// thread is stuck.
final class Teardown: Sendable {
    static let shared = Teardown()
    private let namespaces = Mutex<[String]>([])
    private let done = Atomic<Bool>(false)

    func register(namespaces names: [String]) { namespaces.withLock { $0 = names } }

    func emergency(_ reason: String) {
        guard !done.exchange(true, ordering: .acquiringAndReleasing) else { return }
        fputs("homeroom-chaos: \(reason): killing every process it started\n", stderr)
        ProcessRegistry.shared.killAll()
        if let ip = Spawn.which("ip") {
            for name in namespaces.withLock({ $0 }) { _ = try? Spawn.run([ip, "netns", "del", name], timeoutMillis: 5_000) }
        }
    }
}

struct ChaosRun {
    let options: ChaosOptions
    let network: ChaosNetwork
    /// The room every client writes to (the nemesis drains one of its owners).
    static let room = "chaos-room"
    let room = ChaosRun.room
    let interrupted = Flag()
    let finished = Flag()

    func run() -> Int32 {
        startSignalThread()
        startWatchdog()
        let started = Clock.now
        guard let binary = findBinary() else {
            fputs("homeroom-chaos: no homeroom binary: run `swift build` first, or pass --binary or set HOMEROOM_BIN\n", stderr)
            return 2
        }
        let runDirectory = absolutePath(options.runDirectory ?? ".build/chaos/run-\(options.seed)")
        guard prepareRunDirectory(runDirectory) else { return 64 }
        let reportPath = absolutePath(options.reportPath ?? ".build/chaos/report-\(options.seed).json")
        _ = makeDirectories(String(reportPath[..<(reportPath.lastIndex(of: "/") ?? reportPath.endIndex)]))

        let (schedule, skipped) = Schedule.make(options: options, cutsLinks: network.cutsLinks)
        say("homeroom-chaos: seed \(options.seed), \(options.mode.rawValue) mode, \(options.nodes) nodes, \(network.kind); \(schedule.count) faults planned"
            + (skipped.isEmpty ? "" : "; skipped: \(FaultKind.describeSkipped(skipped))"))
        if options.verbose {
            for fault in schedule {
                say("  plan: +\(fault.startMillis) ms for \(fault.durationMillis) ms: \(fault.kind.rawValue) \(fault.describe(nodeCount: options.nodes))")
            }
        }

        let newcomerName = schedule.contains { $0.kind == .join }
            ? Schedule.newcomerName(nodes: options.nodes, replicas: options.effectiveReplicas) : nil
        if let newcomerName { say("join: the newcomer is \(newcomerName), the first owner of \(room) once it joins") }
        do throws(SpawnError) {
            // One slot more for the join fault's newcomer.
            try network.setUp(nodes: options.nodes + (newcomerName == nil ? 0 : 1))
        } catch {
            fputs("homeroom-chaos: cannot set up the \(network.kind) network: \(error)\n", stderr)
            network.tearDown()
            return options.netns ? 77 : 2
        }
        if let netns = network as? NetnsNetwork { Teardown.shared.register(namespaces: netns.names) }

        var nodeFlags = options.rewardWindowMillis.map { ["--reward-window-ms", "\($0)"] } ?? []
        // Always said: a node would otherwise take HOMEROOM_REPLICAS or a config file from
        // the harness's environment, and the schedule plans drains by this count.
        nodeFlags += ["--replicas", "\(options.effectiveReplicas)"]
        // Just above the clock-skew fault's largest skew: a skewed node's deltas are taken,
        // and reward folds (a window plus the drift limit) come during a short run.
        nodeFlags += ["--max-clock-drift-ms", "\(Schedule.clockSkewMillis.upperBound + 1_000)"]
        if let helpers = options.probeHelpers { nodeFlags += ["--probe-helpers", helpers] }
        if options.closed {
            do throws(SecurityError) {
                let closed = try ClosedRoom(directory: runDirectory, lifetimeSeconds: Int64(options.hardLimitSeconds) + 3_600)
                ClosedRoom.shared.withLock { $0 = closed }
                nodeFlags += closed.nodeFlags
            } catch {
                fputs("homeroom-chaos: cannot write the keys: \(error)\n", stderr)
                network.tearDown()
                return 2
            }
        }
        let cluster = Cluster(network: network, count: options.nodes, binary: binary, runDirectory: runDirectory,
                              heartbeatMillis: options.heartbeatMillis, nodeFlags: nodeFlags, newcomerName: newcomerName)
        let outcome = execute(cluster: cluster, schedule: schedule, skipped: skipped, runDirectory: runDirectory,
                              reportPath: reportPath, started: started)
        cluster.stopAll()
        ProcessRegistry.shared.killAll()
        network.tearDown()
        if outcome == 0 && !options.keepRunDirectory { removeTree(runDirectory) }
        finished.set()
        return outcome
    }

    // MARK: - The run

    private func execute(cluster: Cluster, schedule: [PlannedFault], skipped: [FaultKind], runDirectory: String,
                         reportPath: String, started: UInt64) -> Int32 {
        let (logger, _) = Logger.capturing(label: "chaos", level: .error)
        let history = History()
        let bannedUser = WorkloadCast.bannedUser
        let observatory = Observatory(room: room, endpoints: cluster.nodes.map { NodeEndpoint($0.listen) }, logger: logger,
                                      history: history, bannedUser: bannedUser)
        cluster.onNodeState = { index, up in observatory.setNode(index, up: up) }

        // Start the cluster.
        do throws(SpawnError) {
            try cluster.startAll()
        } catch {
            fputs("homeroom-chaos: the cluster did not start: \(error)\n", stderr)
            return 2
        }
        say("cluster up: \(cluster.nodes.map { "\($0.name) \($0.listen)" }.joined(separator: ", "))")

        // Observers and writers.
        guard retry(seconds: 15, { () throws(ClientError) in try observatory.attachAll() }) else {
            fputs("homeroom-chaos: observers could not attach to every node\n", stderr)
            return 2
        }
        let n = options.nodes
        let students = (1...options.students).map { "s\($0)" }
        // Racers start at different owners of the room, so their races cross nodes (and partitions).
        let owners = options.effectiveReplicas == 0 ? Array(0..<n)
            : Placement(replicas: options.effectiveReplicas, members: (1...n).map { "n\($0)" })
                .owners(of: room).compactMap { Int($0.dropFirst()).map { $0 - 1 } }
        let writers = WorkloadCast.writers(nodes: cluster.nodes.map { NodeEndpoint($0.listen) }, owners: owners, teachers: options.teachers,
                                           students: students, racers: options.racers, seed: options.seed)
        for writer in writers {
            guard retry(seconds: 15, { () throws(ClientError) in try writer.connect(room: room, logger: logger) }) else {
                fputs("homeroom-chaos: \(writer.user) could not join\n", stderr)
                return 2
            }
        }
        let teacher = writers[0]
        // The class starts; the stage limit is the default.
        for operation in [Operation.setClassState(.during), .setRoomName("chaos"), .setStageLimit(6)] {
            _ = history.recordWrite(by: teacher, operation)
        }
        // Formed: every observer sees every writer and the class running.
        let formed = waitUntil(seconds: 20) {
            observatory.states().allSatisfy { state in
                guard let state else { return false }
                return writers.allSatisfy { state.users[$0.user]?.isKnown == true } && state.classState.state == .during
            }
        }
        guard formed else {
            fputs("homeroom-chaos: the cluster did not form within 20 s; node logs in \(runDirectory)\n", stderr)
            return 2
        }
        say("cluster formed: \(writers.count) writers (\(options.teachers) teachers, \(students.count) students, \(bannedUser), \(options.racers) racers), \(n) observers")

        // Workload and nemesis.
        let plan = WorkloadPlan(students: students, writesPerSecond: options.writesPerSecond)
        observatory.start()
        for writer in writers { writer.start(room: room, logger: logger, history: history, plan: plan) }
        Clock.sleep(millis: 2_000)
        let nemesis = Nemesis(cluster: cluster, interrupted: interrupted)
        var visitors = 0
        nemesis.writeThroughNewcomer = { newcomer in
            visitors += 1
            let user = "via-\(newcomer.name)-\(visitors)"
            let visitor = Writer(user: user, role: .student, endpoints: [NodeEndpoint(newcomer.listen)],
                                 seed: options.seed &+ UInt64(visitors) &* 104_729)
            guard retry(seconds: 10, { () throws(ClientError) in try visitor.connect(room: room, logger: logger) }) else { return false }
            defer { visitor.current?.close() }
            let mark = PropertyMark(user: user, key: "joined-through", value: newcomer.name)
            let dot = history.recordWrite(by: visitor, .setUserProperty(user: user, key: mark.key, value: Array(mark.value.utf8), cause: "chaos"),
                                           property: mark)
            // Sequenced by the newcomer itself: the acknowledged dot's origin is its replica id.
            return dot.map { $0.origin.description == newcomer.replica } ?? false
        }
        let nemesisStart = Clock.now
        let banAt = nemesisStart + (schedule.map(\.endMillis).max() ?? 0) / 2
        var banned = false
        var banAcknowledged = false
        let completed = nemesis.run(schedule) {
            if interrupted.isSet { return false }
            _ = cluster.reapUnexpected()
            if !banned && Clock.now >= banAt {
                banned = true
                banAcknowledged = history.recordWrite(by: teacher, .ban(user: bannedUser)) != nil
                say("\(teacher.user) banned \(bannedUser): \(banAcknowledged ? "acknowledged" : "not acknowledged")")
            }
            return true
        }
        if !banned {
            banAcknowledged = history.recordWrite(by: teacher, .ban(user: bannedUser)) != nil
        }

        // Final heal; stop the workload; wait for convergence.
        for writer in writers { writer.stop() }
        nemesis.hurry = interrupted.isSet
        nemesis.healAll()
        _ = cluster.reapUnexpected()
        let finalHealAt = Clock.now
        nemesis.log("final-heal", nil, "every fault removed, every node running")
        var stuck: [String] = []
        let writersDeadline = Clock.now + 20_000
        for writer in writers where !writer.wait(millis: writersDeadline > Clock.now ? writersDeadline - Clock.now : 0) {
            stuck.append("\(writer.user) still inside a write 20 s after the final heal")
        }
        if !completed { say("interrupted: checking what there is") }

        let end = WorkloadEnd(writers: writers, observatory: observatory, history: history)
        func finalReplicas() -> [FinalReplica] { end.finalReplicas() }
        func connectedWriters() -> [UserID] { end.connectedWriters() }
        // Past the bound the run has failed, but how long convergence took is still worth
        // knowing; an interrupted run waits only briefly. Presence settles after the data:
        // a node refutes (or reclaims a session) only once it hears it was declared down
        // (or its client syncs), so the wait goes on, bounded, until every connected
        // writer is online in identical replicas.
        let waitLimit = interrupted.isSet ? 5_000 : max(options.convergenceBoundMillis * 2, 20_000)
        let presenceLimit = interrupted.isSet ? 0 : options.presenceBoundMillis
        var convergedAt: UInt64?
        var presentAt: UInt64?
        var settled: [FinalReplica]?
        var rejoinedAtEnd = 0
        while Clock.now - finalHealAt < waitLimit {
            // A kick that reached a student only after its loop stopped: it joins again, as in the run.
            for writer in writers where writer.loopEnded && writer.rejoinIfKickedOut(room: room, logger: logger) { rejoinedAtEnd += 1 }
            let replicas = finalReplicas()
            if replicas.count == n + writers.filter({ !$0.banned.load(ordering: .acquiring) }).count,
               let first = replicas.first, replicas.allSatisfy({ $0.state == first.state }) {
                let now = Clock.now
                if convergedAt == nil { convergedAt = now }
                settled = replicas
                if connectedWriters().allSatisfy({ first.state.isOnline($0) }) {
                    presentAt = now
                    break
                }
                if now - finalHealAt >= presenceLimit { break }
            }
            Clock.sleep(millis: 25)
        }
        // One more sample so every write visible now is timestamped, then stop sampling.
        observatory.stop()
        observatory.sample(reattach: false)
        // The replicas checked: as they are now when identical, else the last identical ones.
        var replicas = finalReplicas()
        if let settled, let first = replicas.first, !replicas.allSatisfy({ $0.state == first.state }) { replicas = settled }
        let convergence = convergedAt.map { $0 - finalHealAt }
        let presence = presentAt.map { $0 - finalHealAt }
        say(convergence.map { "converged \($0) ms after the final heal" } ?? "NOT converged within \(waitLimit) ms of the final heal")
        if rejoinedAtEnd > 0 { say("\(rejoinedAtEnd) kicked writers joined again after the final heal") }
        if convergence != nil {
            say(presence.map { "every connected writer online \($0) ms after the final heal" }
                ?? "some connected writers still offline \(Clock.now - finalHealAt) ms after the final heal")
        }

        let delivered = end.awaitDeliveries(millis: interrupted.isSet ? 0 : 8_000, reference: replicas.first?.state)
        let compareAndSetKept = end.compareAndSetKept()
        let (presenceWriterNames, presenceSince) = end.presence()
        let lossesTold = end.compareAndSetLossesTold()
        let metrics = cluster.nodes.map { ($0.name, $0.metrics()) }
        // Stop the nodes (graceful: their shutdown path is checked too), then read their logs.
        let stoppingAt = Clock.now
        cluster.stopAll()
        var findings: [String] = []
        var downs: [DeclaredDown] = []
        let names = Dictionary(uniqueKeysWithValues: cluster.everyNode.map { ($0.listen, $0.name) })
        for node in cluster.everyNode {
            let log = readFile(node.logPath) ?? ""
            downs += DeclaredDown.parse(log: log, node: node.name, names: names, origin: Clock.origin)
            for line in log.split(separator: "\n") where ["Fatal error", "Sanitizer", "panic", "Segmentation fault"].contains(where: { line.contains($0) }) {
                findings.append("\(node.name): \(line.prefix(200))")
                if findings.count > 20 { break }
            }
        }

        var heals: [(at: UInt64, nextFault: UInt64?, kinds: String)] = []
        let starts = nemesis.events.filter { $0.action == "start" || $0.action == "failed" }.map(\.atMillis)
        for heal in nemesis.fullHeals {
            heals.append((heal.at, starts.first { $0 > heal.at } ?? finalHealAt, heal.kinds))
        }
        let nodeIndex = Dictionary(uniqueKeysWithValues: cluster.everyNode.map { ($0.name, $0.index) })
        let falseDowns = FalseDowns.find(downs, spans: nemesis.spans, index: nodeIndex, until: stoppingAt)
        // Faults that silence a node longer than the down period must show as downs, or the
        // down lines are no longer read (and the check above would pass on nothing).
        let downMillis = (options.heartbeatMillis ?? 200) * 10
        // A bridge or a ring leaves every node heard by some other: with probes asking
        // others (the nodes' default), nobody is declared down there (docs/PROTOCOL.md, "Probes").
        let probesAskOthers = options.probeHelpers.map { $0 != "off" && $0 != "0" } ?? true
        let silencing: Set<FaultKind> = probesAskOthers ? [.kill, .pause, .isolate, .halves] : [.kill, .pause, .isolate, .halves, .ring, .bridge]
        let downsExpected = schedule.contains { silencing.contains($0.kind) && $0.durationMillis >= downMillis + 1_000 }
        let connected = connectedWriters()
        let checker = Checker(history: history.all, tracking: observatory.snapshot, replicas: replicas,
                              finalConvergenceMillis: convergence, finalHealAt: finalHealAt, convergedAt: convergedAt,
                              heals: heals, options: options, bannedUser: bannedUser, banAcknowledged: banAcknowledged,
                              connectedWriters: connected, presenceMillis: presence, checkedAt: Clock.now - finalHealAt,
                              nodeLogFindings: findings, declaredDowns: downs.count, downsExpected: downsExpected, falseDowns: falseDowns,
                              downsByFault: FalseDowns.byFault(downs, spans: nemesis.spans, index: nodeIndex, until: stoppingAt),
                              unexpectedExits: cluster.unexpectedExits, nemesisFailures: nemesis.failures, stuckWriters: stuck,
                              inboxes: delivered.all, finalClients: delivered.final, compareAndSetKept: compareAndSetKept,
                              presenceWriters: presenceWriterNames, presenceSince: presenceSince, compareAndSetLossesTold: lossesTold,
                              cutWindows: nemesis.spans.filter { [.halves, .ring, .bridge, .isolate].contains($0.kind) }
                                  .map { $0.from...max($0.from, $0.to ?? finalHealAt) },
                              floors: WorkloadFloors(plannedMillis: schedule.map(\.endMillis).max() ?? 0, teachers: options.teachers,
                                                     writesPerSecond: options.writesPerSecond, racers: options.racers))
        var result = checker.run()
        if options.closed {
            result.checks.append(closedRoomCheck(metrics: metrics, writers: writers, banAcknowledged: banAcknowledged))
        }
        if !completed {
            result.checks.append(Check(name: "completed", passed: false, detail: "interrupted before the schedule ended"))
        }
        let passed = result.passed(strict: options.strict)
        let runtime = Clock.now - started
        let report = makeReport(result: result, passed: passed, nemesis: nemesis, skipped: skipped, schedule: schedule,
                                runtime: runtime, runDirectory: runDirectory, metrics: metrics, writers: writers,
                                observatory: observatory, convergence: convergence, presence: presence)
        if !writeFile(reportPath, report.render() + "\n") { fputs("homeroom-chaos: cannot write \(reportPath)\n", stderr) }
        printSummary(result: result, passed: passed, nemesis: nemesis, skipped: skipped, runtime: runtime,
                     reportPath: reportPath, runDirectory: runDirectory, convergence: convergence)
        if !completed { return 130 }
        return passed ? 0 : 1
    }

    // MARK: - Pieces

    @discardableResult
    /// `--closed`: every client held keys (it read the sealed stream), none saw a sealed
    /// message that did not open, and the acknowledged ban rotated keys on some node.
    func closedRoomCheck(metrics: [(String, [String: Double])], writers: [Writer], banAcknowledged: Bool) -> Check {
        let rotations = metrics.map { ($0.0, Int($0.1["homeroom_topic_key_rotations_total"] ?? 0)) }
        let total = rotations.reduce(0) { $0 + $1.1 }
        let clients = writers.compactMap(\.current)
        let keyless = writers.filter { !$0.banned.load(ordering: .acquiring) && $0.current?.holdsTopicKeys != true }.map(\.user)
        let unopened = clients.reduce(0) { $0 + $1.unopenedMessages }
        var problems: [String] = []
        if !keyless.isEmpty { problems.append("writers without topic keys: \(keyless.joined(separator: ", "))") }
        if unopened > 0 { problems.append("\(unopened) sealed messages did not open") }
        if banAcknowledged && total == 0 { problems.append("the acknowledged ban rotated no keys") }
        let counts = rotations.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
        return Check(name: "closed-room", passed: problems.isEmpty,
                     detail: problems.isEmpty ? "sealed topics: every writer held keys, 0 messages failed to open; key rotations: \(counts)"
                                              : problems.joined(separator: "; ") + " (rotations: \(counts))")
    }

    func retry(seconds: UInt64, _ body: () throws(ClientError) -> Void) -> Bool {
        let deadline = Clock.now + seconds * 1000
        while Clock.now < deadline && !interrupted.isSet {
            do {
                try body()
                return true
            } catch {
                if options.verbose { say("retrying: \(error)") }
                Clock.sleep(millis: 300)
            }
        }
        return false
    }

    func waitUntil(seconds: UInt64, _ condition: () -> Bool) -> Bool {
        let deadline = Clock.now + seconds * 1000
        while Clock.now < deadline && !interrupted.isSet {
            if condition() { return true }
            Clock.sleep(millis: 50)
        }
        return false
    }

    func findBinary() -> String? {
        if let path = options.binary { return access(path, X_OK) == 0 ? absolutePath(path) : nil }
        if let env = getenv("HOMEROOM_BIN"), access(env, X_OK) == 0 { return absolutePath(String(cString: env)) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        if length > 0 {
            let own = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            if let slash = own.lastIndex(of: "/") {
                let sibling = String(own[..<slash]) + "/homeroom"
                if access(sibling, X_OK) == 0 { return sibling }
            }
        }
        for candidate in [".build/debug/homeroom", ".build/release/homeroom"] where access(candidate, X_OK) == 0 {
            return absolutePath(candidate)
        }
        return nil
    }

    /// The run directory is ours when new or marked; processes a killed earlier run
    /// left there (pid files) are ended first.
    func prepareRunDirectory(_ path: String) -> Bool {
        let marker = path + "/.homeroom-chaos"
        if access(path, F_OK) == 0 {
            guard access(marker, F_OK) == 0 else {
                fputs("homeroom-chaos: \(path) exists and was not made by homeroom-chaos; choose another --run-dir\n", stderr)
                return false
            }
            // Members are n1-n9; a join's newcomer may be named up to n73.
            for index in 1...73 {
                guard let text = readFile("\(path)/n\(index)/pid"), let pid = Int32(text.trimmingSpaces) else { continue }
                let command = (readFile("/proc/\(pid)/cmdline") ?? "").split(separator: "\0").joined(separator: " ")
                if command.contains("homeroom") && command.contains(path) {
                    kill(pid, SIGCONT)
                    kill(pid, SIGKILL)
                    say("killed n\(index) (pid \(pid)) left running by an earlier run")
                }
            }
            removeTree(path)
        }
        guard makeDirectories(path) else {
            fputs("homeroom-chaos: cannot create \(path): \(String(cString: strerror(errno)))\n", stderr)
            return false
        }
        writeFile(marker, "made by homeroom-chaos; removed after a passing run unless --keep\n")
        return true
    }

    func startSignalThread() {
        let interrupted = interrupted
        let finished = finished
        _ = Worker {
            var set = sigset_t()
            sigemptyset(&set)
            for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
            var received: Int32 = 0
            sigwait(&set, &received)
            fputs("homeroom-chaos: signal \(received): stopping (faults healed, nodes stopped, report written)\n", stderr)
            interrupted.set()
            // The main thread gets 60 s to wind down on its own.
            let deadline = Clock.now + 60_000
            while Clock.now < deadline && !finished.isSet {
                if sigtimedwaitOnce(&set) {
                    break
                }
            }
            if !finished.isSet {
                Teardown.shared.emergency("interrupted and not finished")
                _exit(130)
            }
        }
    }

    func startWatchdog() {
        let limit = UInt64(options.hardLimitSeconds) * 1000
        let finished = finished
        _ = Worker {
            while Clock.now < limit {
                if finished.isSet { return }
                Clock.sleep(millis: 200)
            }
            if !finished.isSet {
                Teardown.shared.emergency("hard limit of \(limit / 1000) s reached (--hard-limit)")
                _exit(3)
            }
        }
    }
}

/// Waits up to 200 ms for a second signal; true when one came (give up waiting then).
private func sigtimedwaitOnce(_ set: inout sigset_t) -> Bool {
    var timeout = timespec(tv_sec: 0, tv_nsec: 200_000_000)
    return sigtimedwait(&set, nil, &timeout) > 0
}
