@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport
import HomeroomHarness

/// What `homeroom verify` runs: the chaos workload, observers and checker, pointed at a
/// cluster someone else started and faults someone else injects.
package struct VerifyOptions: Sendable {
    package var nodes: [String]
    package var seconds: Int
    /// The room of this run: new each time, so that no real class is touched.
    package var room: String
    package var seed: UInt64
    /// Signs the clients' tokens, for nodes that require them (`--key`).
    package var signing: SigningKeys?
    package var json = false
    package var teachers = 2
    package var students = 6
    package var racers = 3
    package var writesPerSecond = 6.0
    package var stormClients = 20
    package var stormBoundMillis: UInt64 = 10_000
    package var convergenceBoundMillis: UInt64 = 10_000

    package init(nodes: [String], seconds: Int, room: String, seed: UInt64) {
        self.nodes = nodes
        self.seconds = seconds
        self.room = room
        self.seed = seed
    }

    /// The least the run must see acknowledged, else it judged nothing and fails: a quarter
    /// of what the teachers and students aim at.
    var acknowledgedFloor: Int { max(20, Int(Double(seconds) * Double(teachers + students) * writesPerSecond / 4)) }
}

/// `homeroom verify`: an observer per node (a protocol client attached to that node only,
/// so its replica is what the node holds), the writers of the chaos workload in a room of
/// their own, then the chaos checker. Heals it can observe are an observer losing its node
/// and getting it back (a node stopped, restarted or cut from the tool); partitions between
/// nodes show only in the final convergence.
package struct VerifyRun {
    package let options: VerifyOptions

    package init(options: VerifyOptions) { self.options = options }

    private func fail(_ message: String) -> Int32 {
        print("homeroom verify ERROR: \(message)")
        return 2
    }

    /// 0: nothing violated; 1: a violation (the verdict names it); 2: the run could not be made.
    package func run() -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        let room = options.room
        let (logger, _) = Logger.capturing(label: "verify", level: .error)
        if let signing = options.signing {
            ClosedRoom.shared.withLock { $0 = ClosedRoom(signing: signing, lifetimeSeconds: Int64(options.seconds) + 3_600) }
        }
        let nodes = options.nodes.map { NodeEndpoint($0) }
        let history = History()
        let bannedUser = WorkloadCast.bannedUser
        let observatory = Observatory(room: room, endpoints: nodes, logger: logger, history: history, bannedUser: bannedUser)
        say("verify: room \(room) on \(nodes.count) nodes, \(options.seconds) s, seed \(options.seed)")
        var lastError = ""
        guard retry(seconds: 15, { () throws(ClientError) in try observatory.attachAll() }, lastError: &lastError) else {
            return fail("observers could not attach to every node within 15 s: \(lastError)")
        }
        let students = (1...options.students).map { "s\($0)" }
        let writers = WorkloadCast.writers(nodes: nodes, owners: [], teachers: options.teachers, students: students,
                                           racers: options.racers, seed: options.seed)
        for writer in writers {
            guard retry(seconds: 15, { () throws(ClientError) in try writer.connect(room: room, logger: logger) }, lastError: &lastError) else {
                return fail("\(writer.user) could not join room \(room): \(lastError)")
            }
        }
        let teacher = writers[0]
        for operation in [Operation.setClassState(.during), .setRoomName("verify"), .setStageLimit(6)] {
            _ = history.recordWrite(by: teacher, operation)
        }
        let formed = waitUntil(seconds: 20) {
            observatory.states().allSatisfy { state in
                guard let state else { return false }
                return writers.allSatisfy { state.users[$0.user]?.isKnown == true } && state.classState.state == .during
            }
        }
        guard formed else { return fail("the room did not reach every node within 20 s (every writer known, class started)") }
        say("verify: \(writers.count) writers joined, \(nodes.count) observers; the workload runs \(options.seconds) s")

        // The workload; heals seen by the observers as it runs; the ban halfway.
        let plan = WorkloadPlan(students: students, writesPerSecond: options.writesPerSecond)
        observatory.start()
        for writer in writers { writer.start(room: room, logger: logger, history: history, plan: plan) }
        let start = Clock.now
        let end = start + UInt64(options.seconds) * 1000
        var banAcknowledged = false
        var banned = false
        var outageFrom: UInt64?
        var outages: [(from: UInt64, to: UInt64)] = []
        while Clock.now < end {
            // An observer that is not connected has lost its node (stopped, killed, paused or cut
            // off): the heal is when every observer is connected again.
            let missing = observatory.clients.contains { $0 == nil || $0?.connectionState != .connected }
            if missing, outageFrom == nil { outageFrom = Clock.now; say("verify: an observer lost its node") }
            if !missing, let from = outageFrom {
                outages.append((from, Clock.now))
                outageFrom = nil
                say("verify: every observer attached again (a heal)")
            }
            if !banned && Clock.now >= start + (end - start) / 2 {
                banned = true
                banAcknowledged = history.recordWrite(by: teacher, .ban(user: bannedUser)) != nil
            }
            Clock.sleep(millis: 100)
        }
        if !banned { banAcknowledged = history.recordWrite(by: teacher, .ban(user: bannedUser)) != nil }

        // The workload stops: from here every replica must come to agree.
        for writer in writers { writer.stop() }
        let stoppedAt = Clock.now
        var stuck: [String] = []
        for writer in writers where !writer.wait(millis: stoppedAt + 20_000 > Clock.now ? stoppedAt + 20_000 - Clock.now : 0) {
            stuck.append("\(writer.user) still inside a write 20 s after the workload stopped")
        }
        let workloadEnd = WorkloadEnd(writers: writers, observatory: observatory, history: history)
        let waitLimit = max(options.convergenceBoundMillis * 2, 20_000)
        var convergedAt: UInt64?
        var presentAt: UInt64?
        var settled: [FinalReplica]?
        let presenceBound: UInt64 = 5_000
        while Clock.now - stoppedAt < waitLimit {
            for writer in writers where writer.loopEnded { writer.rejoinIfKickedOut(room: room, logger: logger) }
            let replicas = workloadEnd.finalReplicas()
            if replicas.count == nodes.count + writers.filter({ !$0.banned.load(ordering: .acquiring) }).count,
               let first = replicas.first, replicas.allSatisfy({ $0.state == first.state }) {
                let now = Clock.now
                if convergedAt == nil { convergedAt = now }
                settled = replicas
                if workloadEnd.connectedWriters().allSatisfy({ first.state.isOnline($0) }) { presentAt = now; break }
                if now - stoppedAt >= presenceBound { break }
            }
            Clock.sleep(millis: 25)
        }
        observatory.stop()
        observatory.sample(reattach: false)
        var replicas = workloadEnd.finalReplicas()
        if let settled, let first = replicas.first, !replicas.allSatisfy({ $0.state == first.state }) { replicas = settled }
        let convergence = convergedAt.map { $0 - stoppedAt }
        say(convergence.map { "verify: every replica identical \($0) ms after the workload stopped" } ?? "verify: replicas NOT identical within \(waitLimit) ms")
        let delivered = workloadEnd.awaitDeliveries(millis: 8_000, reference: replicas.first?.state)
        let (presenceWriters, presenceSince) = workloadEnd.presence()

        var chaos = ChaosOptions()
        chaos.nodes = nodes.count
        chaos.teachers = options.teachers
        chaos.students = options.students
        chaos.racers = options.racers
        chaos.writesPerSecond = options.writesPerSecond
        chaos.convergenceBoundMillis = options.convergenceBoundMillis
        let heals = outages.enumerated().map { index, outage in
            (at: outage.to, nextFault: index + 1 < outages.count ? outages[index + 1].from : Optional(stoppedAt), kinds: "observer outage \(index + 1)")
        }
        let checker = Checker(history: history.all, tracking: observatory.snapshot, replicas: replicas,
                              finalConvergenceMillis: convergence, finalHealAt: stoppedAt, convergedAt: convergedAt,
                              heals: heals, options: chaos, bannedUser: bannedUser, banAcknowledged: banAcknowledged,
                              connectedWriters: workloadEnd.connectedWriters(), presenceMillis: presentAt.map { $0 - stoppedAt },
                              checkedAt: Clock.now - stoppedAt, nodeLogFindings: [], declaredDowns: 0, downsExpected: false, falseDowns: [],
                              unexpectedExits: [], nemesisFailures: [], stuckWriters: stuck,
                              inboxes: delivered.all, finalClients: delivered.final, compareAndSetKept: workloadEnd.compareAndSetKept(),
                              presenceWriters: presenceWriters, presenceSince: presenceSince,
                              compareAndSetLossesTold: workloadEnd.compareAndSetLossesTold(),
                              floors: WorkloadFloors(plannedMillis: UInt64(options.seconds) * 1000, teachers: options.teachers,
                                                     writesPerSecond: options.writesPerSecond, racers: options.racers))
        var result = checker.run()
        // The node logs are the operator's: verify reads none, so it judges no crash or down from them.
        result.checks.removeAll { ["no-crash", "no-false-down"].contains($0.name) }
        // No nemesis here: the harness check is only about the writers.
        if let index = result.checks.firstIndex(where: { $0.name == "harness" && $0.passed }) {
            result.checks[index].detail = "every writer stopped within 20 s of the end of the workload"
        }
        let floor = options.acknowledgedFloor
        result.checks.append(Check(name: "floor", passed: result.acknowledged >= floor,
                                   detail: "\(result.acknowledged) writes acknowledged (at least \(floor) needed, or the checks judged too little)"))
        for writer in writers { writer.current?.close() }
        for client in observatory.clients { client?.close() }

        say("verify: join storm, \(options.stormClients) clients at once")
        let storm = JoinStorm(room: room, nodes: nodes, count: options.stormClients, boundMillis: options.stormBoundMillis, logger: logger).run()
        result.checks.append(storm.check)

        let passed = result.passed
        let verdict = VerifyVerdict(result: result, passed: passed)
        if options.json {
            print(report(result: result, verdict: verdict, convergence: convergence, storm: storm).render())
        } else {
            print(summary(result: result, verdict: verdict, convergence: convergence, storm: storm))
        }
        fflush(stdout)
        return passed ? 0 : 1
    }

    private func summary(result: Checker.Result, verdict: VerifyVerdict, convergence: UInt64?, storm: JoinStorm.Outcome) -> String {
        var lines = ["homeroom verify \(verdict.line)",
                     "  run:         room \(options.room), \(options.nodes.count) nodes, \(options.seconds) s, seed \(options.seed)"]
        lines += result.writeLines
        lines.append("  convergence: every replica identical \(convergence.map { "\($0) ms" } ?? "never") after the workload stopped (bound \(options.convergenceBoundMillis) ms); after each heal the observers saw, and the stop: \(result.healConvergence.text)")
        lines.append("  join storm:  \(storm.latencies.count) of \(options.stormClients) saw the full roster: \(Percentiles(storm.latencies).text)")
        lines += result.checkLines
        return lines.joined(separator: "\n")
    }

    private func report(result: Checker.Result, verdict: VerifyVerdict, convergence: UInt64?, storm: JoinStorm.Outcome) -> JSON {
        .object([
            ("tool", .string("homeroom verify")),
            ("result", .string(verdict.passed ? "pass" : "fail")),
            ("verdict", .string(verdict.line)),
            ("room", .string(options.room)),
            ("nodes", .array(options.nodes.map { .string($0) })),
            ("seconds", .int(options.seconds)),
            ("seed", .int(options.seed)),
            ("checks", result.checksJSON),
            ("writes", result.writesJSON),
            ("convergence", .object([("final_ms", convergence.map { .int($0) } ?? .null), ("bound_ms", .int(options.convergenceBoundMillis)),
                                     ("after_heals", result.healConvergence.json)])),
            ("join_storm", .object([("clients", .int(options.stormClients)), ("full_roster", Percentiles(storm.latencies).json),
                                    ("problems", .array(storm.problems.map { .string($0) }))])),
        ])
    }

    private func retry(seconds: UInt64, _ body: () throws(ClientError) -> Void, lastError: inout String) -> Bool {
        let deadline = Clock.now + seconds * 1000
        while Clock.now < deadline {
            do {
                try body()
                return true
            } catch {
                lastError = "\(error)"
                // A refusal (no token, a bad key, banned) does not pass by waiting.
                if case .refused = error { return false }
                Clock.sleep(millis: 300)
            }
        }
        return false
    }

    private func waitUntil(seconds: UInt64, _ condition: () -> Bool) -> Bool {
        let deadline = Clock.now + seconds * 1000
        while Clock.now < deadline {
            if condition() { return true }
            Clock.sleep(millis: 50)
        }
        return false
    }
}

/// The one line that says what happened: PASS, or FAIL with the first violations named
/// (lost acknowledged writes first: what the tool exists to find).
struct VerifyVerdict {
    var passed: Bool
    var line: String

    init(result: Checker.Result, passed: Bool) {
        self.passed = passed
        if passed {
            line = "PASS: \(result.acknowledged) acknowledged writes, lost 0, every replica agrees"
            return
        }
        var reasons: [String] = []
        if result.lostCount > 0 { reasons.append("\(result.lostCount) of \(result.acknowledged) acknowledged writes lost") }
        let failed = result.checks.filter { !$0.passed && !$0.isTarget }.map(\.name).filter { $0 != "no-lost-writes" }
        if !failed.isEmpty { reasons.append("checks failed: \(failed.joined(separator: ", "))") }
        line = "FAIL: " + reasons.joined(separator: "; ")
    }
}
