import Dispatch
import HomeroomContext
import HomeroomCore
import HomeroomNode
import HomeroomTerminalUI
import HomeroomWeb
import Synchronization
import HomeroomSupport

/// `homeroom demo`: the main job. A three-node cluster in this process, a teacher, an
/// assistant and students in a scripted lesson (hands, stage, devices, privileges,
/// rewards, refusals, a node lost and replaced, a kick), the live roster meanwhile, and
/// a summary with a convergence check across every node and client.
enum DemoCommand {
    static let usage = """
        OVERVIEW: Run the Homeroom demo: a live lesson on a three-node cluster, with its roster and a summary.

        USAGE: homeroom demo [--students <n>] [--seconds <n>] [--transport tcp|ipc] [--web]

        OPTIONS:
          --students <n>         Students in the lesson, 2-40 (default 8).
          --seconds <n>          Length of the lesson, 10-45 (default 25); the demo ends by itself about then.
          --transport <t>        tcp (127.0.0.1, ephemeral ports; default) or ipc (sockets in /tmp).
          --theme <file>         Theme (UI config) for the roster.                (HOMEROOM_THEME)
          --web                  Also serve the lesson to a browser (homeroom web on 127.0.0.1, an
                                 ephemeral port): prints a link that logs in as an observer. On a
                                 terminal the page stays up after the summary until Ctrl-C.
          -h, --help             Show help information.

        On a terminal the roster is live and full-screen (q leaves early); otherwise the demo
        prints its narration and roster snapshots. Exits 1 if the final check fails.
        Everything runs in this process, on loopback: nothing listens on another address.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let students = try reader.integer("--students", in: 2...40) ?? 8
        let seconds = try reader.integer("--seconds", in: 10...45) ?? 25
        let transport = try reader.string("--transport") ?? "tcp"
        let themePath = try reader.string("--theme")
        let web = reader.flag("--web")
        try reader.finish()
        guard transport == "tcp" || transport == "ipc" else { throw .usage("unknown transport '\(transport)': use tcp or ipc", usage: usage) }
        let theme = try ThemeCommand.load(themePath)
        let environment = ProcessEnvironment.current
        let live = TerminalCapabilities.isTerminal()
        Console.catchInterrupts()

        // Node and client logs are kept, not printed (they would tear the live view).
        let logs = LogLines()
        let logger = Logger(label: "demo", level: .warning, sink: { logs.append($0) })
        let log = DemoLog(steps: Lesson.steps) { entry in
            if !live { Console.line(DemoLog.stamp(entry.elapsedMillis) + " " + entry.text) }
        }
        if !live {
            Console.line("Homeroom demo: a \(seconds)-second lesson with \(students) students on a three-node cluster (\(transport), loopback only).\n")
        }

        let cluster: DemoCluster
        do {
            cluster = try DemoCluster(size: 3, transport: transport, logger: logger)
        } catch {
            throw .failure("cannot start the demo cluster: \(error)")
        }
        defer { cluster.stopAll() }
        let meshed = waitUntil(millis: 10_000) { cluster.meshed() }
        log.say(meshed ? "3 nodes up (\(cluster.addresses.joined(separator: ", "))), meshed from one seed"
                : "3 nodes up, but they did not all see each other within 10 s")

        let lesson = try Lesson(cluster: cluster, log: log, students: students, seconds: seconds, logger: logger)
        defer { lesson.closeAll() }
        let page = web ? try DemoWebPage(room: lesson.room, nodes: cluster.addresses, theme: theme, logger: logger) : nil
        defer { page?.server.stop() }
        if let page {
            Console.line("Watch the lesson in a browser: \(page.link)")
            if live { sleepMillis(3_000) }   // time to read the link before the live view takes the screen
        }

        // The script runs beside the view; a plain run prints roster snapshots at milestones.
        let finished = Flag()
        let failure = Mutex<CommandLineError?>(nil)
        let script = { @Sendable in
            do throws(CommandLineError) {
                try lesson.run()
            } catch {
                failure.withLock { $0 = error }
            }
            finished.set()
        }
        var interrupted = false
        if live {
            DispatchQueue.global().async(execute: script)
            let view = LiveView(pool: lesson.teacher, theme: theme, environment: environment)
            let ending = view.run(deadlineMillis: nil, status: { status(log) }, finished: { finished.isSet })
            if ending == .quit || ending == .interrupted {
                interrupted = true
                lesson.cancelled.set()
                _ = waitUntil(millis: 15_000) { finished.isSet }
            }
            // The transcript stays on the normal screen.
            Console.line("Homeroom demo: a \(seconds)-second lesson with \(students) students on a three-node cluster (\(transport), loopback only).\n")
            for entry in log.entries { Console.line(DemoLog.stamp(entry.elapsedMillis) + " " + entry.text) }
        } else {
            let snapshots = DispatchQueue(label: "homeroom.demo.snapshots")
            let milestones = Set([6, 9, 11])
            let printed = Mutex<Set<Int>>([])
            DispatchQueue.global().async(execute: script)
            while !finished.isSet {
                if Console.interrupted { interrupted = true; lesson.cancelled.set() }
                let step = log.step
                if milestones.contains(step), printed.withLock({ $0.insert(step).inserted }) {
                    // Half a step in, so the step's writes show.
                    snapshots.asyncAfter(deadline: .now() + .milliseconds(Int(lesson.stepMillis / 2))) {
                        guard !finished.isSet else { return }
                        var page = 0
                        Console.line("\n" + LiveView.frame(pool: lesson.teacher, theme: theme, environment: environment, page: &page,
                                                           status: [], fullScreen: false) + "\n")
                    }
                }
                sleepMillis(50)
            }
            snapshots.sync {}
        }
        if let error = failure.withLock({ $0 }) { throw error }

        // The final check: wait (bounded) for every node and client to hold the same room.
        let converged = waitUntil(millis: 10_000) { lesson.converged() }
        let ok = printSummary(lesson: lesson, log: log, converged: converged, interrupted: interrupted, theme: theme,
                              environment: environment, logs: logs)
        if interrupted { throw .failure("the demo was interrupted before the end of the lesson") }
        if let page, live {
            Console.line("The page stays up at \(page.link) (Ctrl-C ends it).")
            while !Console.interrupted { sleepMillis(100) }
        }
        if !ok { throw .failure("the final check failed (see above)") }
    }

    static func status(_ log: DemoLog) -> [String] {
        let recent = log.entries.suffix(5).map { DemoLog.stamp($0.elapsedMillis) + " " + $0.text }
        return recent + ["step \(min(log.step, log.steps))/\(log.steps) · writes \(log.acknowledged) acknowledged, \(log.refusedText) · q leaves"]
    }

    /// Prints the summary; true when every check held.
    static func printSummary(lesson: Lesson, log: DemoLog, converged: Bool, interrupted: Bool, theme: Theme,
                             environment: [String: String], logs: LogLines) -> Bool {
        let facts = lesson.summaryFacts
        let nodes = lesson.cluster.nodes
        let reference = lesson.cluster.agreedRoom(lesson.room)
        let active = lesson.activePools
        var checks: [(String, Bool)] = []

        checks.append(("converged: \(nodes.count) nodes (\(nodes.map(\.name).joined(separator: ", "))) and \(active.count) clients "
                       + "hold the same room, \(reference?.seen.count ?? 0) deltas", converged))
        let unexpected = log.unexpected
        checks.append(("refused only what the script provoked: \(log.refusedByCode)", unexpected.isEmpty))
        if let reference {
            let roster = reference.roster()
            let totals = Dictionary(uniqueKeysWithValues: roster.rows.map { ($0.user, $0.rewards) })
            let expected = log.rewards
            let lost = expected.filter { totals[$0.key] != $0.value }
            checks.append(("rewards counted once each: " + expected.keys.sorted().map { "\($0) \(totals[$0] ?? 0)" }.joined(separator: ", "),
                           lost.isEmpty))
            checks.append(("stage within its limit: \(roster.stage.count) of \(roster.stageLimit) seats", roster.stage.count <= roster.stageLimit))
        }
        if !facts.stoppedNode.isEmpty {
            checks.append(("\(facts.affectedClients) clients of \(facts.stoppedNode) reconnected elsewhere"
                           + (facts.reconnectMillis.map { " in \(Lesson.seconds($0))" } ?? ""), facts.reconnectMillis != nil))
        }
        if !facts.replacementNode.isEmpty {
            checks.append(("\(facts.replacementNode) caught up" + (facts.catchUpMillis.map { " in \(Lesson.seconds($0))" } ?? ""),
                           facts.catchUpMillis != nil))
        }
        if let kicked = facts.kicked {
            checks.append(("\(kicked) was kicked out and their client told", facts.kickNoticed))
        }
        if let agreed = facts.carouselAgreed {
            checks.append(("every client derived the carousel's turn alike: \(facts.carouselStage.joined(separator: ", "))", agreed))
        }
        if let apart = facts.breakoutKeptApart {
            checks.append(("breakout: \(facts.breakoutGroups) groups met in their own rooms, each member heard only its group", apart))
            checks.append(("breakout: the teacher's broadcast reached every group", facts.breakoutBroadcastHeard ?? false))
            checks.append(("breakout: after the end every client shows everyone back in the main room", facts.breakoutEnded ?? false))
        }
        checks += lesson.chat.checks(active: active)
        let connected = active.filter { $0.pool.monitor.connectionState == .connected }.count
        checks.append(("clients connected at the end: \(connected) of \(active.count)", connected == active.count))

        let colors = TerminalCapabilities.detect(environment: environment).colors
        func mark(_ ok: Bool) -> String {
            colors ? (ok ? "\u{1B}[32m✓\u{1B}[0m" : "\u{1B}[31m✗\u{1B}[0m") : (ok ? "ok  " : "FAIL")
        }
        Console.line("\nFinal roster (the teacher's view):\n")
        var page = 0
        let chat = ["Latest messages:"] + lesson.teacher.message.history(limit: 5).map { "  " + MessageText.line($0, local: "lovelace") }
        Console.line(LiveView.frame(pool: lesson.teacher, theme: theme, environment: environment, page: &page, status: chat, fullScreen: false))
        Console.line("\nSummary")
        Console.line("  writes       \(log.acknowledged) acknowledged, \(log.refusedText)")
        if let rewards = facts.concurrentRewards {
            Console.line("  rewards      \(rewards.user): +\(rewards.teacher) (teacher) and +\(rewards.assistant) (assistant) at the same moment, both counted")
        }
        if !facts.stoppedNode.isEmpty {
            var line = "  node loss    \(facts.stoppedNode) stopped at \(Lesson.seconds(facts.stoppedAtMillis))"
            if let millis = facts.declaredDownMillis { line += ", recorded down after \(Lesson.seconds(millis))" }
            Console.line(line)
        }
        for (text, ok) in checks { Console.line("  \(mark(ok)) \(text)") }
        for problem in unexpected { Console.line("       \(problem)") }
        let warnings = logs.all
        if !warnings.isEmpty {
            Console.line("  \(warnings.count) warning(s) logged by nodes and clients" + (checks.allSatisfy(\.1) ? "" : ":"))
            if !checks.allSatisfy(\.1) { for line in warnings.suffix(20) { Console.line("    " + line) } }
        }
        let ok = checks.allSatisfy(\.1) && !interrupted
        Console.line("\n\(ok ? "PASS" : "FAIL"): \(ok ? "every check held" : "a check failed") after \(Lesson.seconds(log.elapsedMillis)).")
        return ok
    }
}

/// Log lines kept in memory (the demo shows how many at the end, and the last ones on failure).
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}
