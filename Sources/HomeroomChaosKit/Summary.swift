@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomHarness

extension ChaosRun {
    var replayCommand: String {
        let program = CommandLine.arguments.first.map { $0.hasSuffix("homeroom-chaos") ? $0 : "homeroom-chaos" } ?? "homeroom-chaos"
        return ([program] + options.replayArguments).joined(separator: " ")
    }

    func makeReport(result: Checker.Result, passed: Bool, nemesis: Nemesis, skipped: [FaultKind], schedule: [PlannedFault],
                    runtime: UInt64, runDirectory: String, metrics: [(String, [String: Double])], writers: [Writer],
                    observatory: Observatory, convergence: UInt64?, presence: UInt64?) -> JSON {
        let interesting = ["deltas_in_total", "deltas_out_total", "gaps_repaired_total", "peers_declared_down_total", "deltas_rejected_total",
                           "writes_accepted_total", "writes_refused_total", "sync_bytes_total", "cluster_rejected_total",
                           "requests_rejected_total", "joins_total", "incarnation", "peers", "refutations_total",
                           "sessions_reclaimed_total", "links_renewed_total"]
        let tracking = observatory.snapshot
        let writes = result.writesJSON
        let convergenceJSON: JSON = .object([
            ("final_ms", convergence.map { .int($0) } ?? .null),
            ("bound_ms", .int(options.convergenceBoundMillis)),
            ("target_p99_ms", .int(options.convergenceTargetMillis)),
            ("after_heals", result.healConvergence.json),
            ("samples", .array(result.healSamples)),
            ("differences", .array(result.differences.prefix(20).map { .string($0) })),
        ])
        let presenceJSON: JSON = .object([("online_ms", presence.map { .int($0) } ?? .null), ("bound_ms", .int(options.presenceBoundMillis)),
                                          ("offline", .array(result.presenceDetails.map { .string($0) }))])
        let exercised: [(String, JSON)] = FaultKind.allCases.compactMap { kind in
            nemesis.kindsExercised[kind].map { (kind.rawValue, .int($0)) }
        }
        let timeline: [JSON] = nemesis.events.map { event in
            .object([("at_ms", .int(event.atMillis)), ("action", .string(event.action)),
                     ("kind", event.kind.map { .string($0.rawValue) } ?? .null), ("detail", .string(event.detail))])
        }
        let faults: JSON = .object([
            ("exercised", .object(exercised)),
            ("skipped", .array(skipped.map { .string($0.rawValue) })),
            ("planned", .int(schedule.count)),
            ("drains_completed", .int(nemesis.drainsCompleted)),
            ("joins_completed", .int(nemesis.joinsCompleted)),
            ("newcomer_writes_accepted", .int(nemesis.newcomerWrites)),
            ("timeline", .array(timeline)),
        ])
        let clients: [JSON] = writers.map { writer in
            .object([("user", .string(writer.user)), ("role", .string("\(writer.role)")),
                     ("recreated", .int(writer.recreated.load(ordering: .relaxed))),
                     ("rejoined_after_kicks", .int(writer.rejoins.load(ordering: .relaxed))),
                     ("returned_home", .int(writer.returnedHome.load(ordering: .relaxed))),
                     ("banned", .bool(writer.banned.load(ordering: .relaxed))),
                     ("state", .string(writer.current?.connectionState.rawValue ?? "none"))])
        }
        let nodeMetrics: [(String, JSON)] = metrics.map { name, values in
            let picked = values.filter { series in
                interesting.contains { series.key.hasPrefix("homeroom_" + $0 + "{") || series.key == "homeroom_" + $0 }
            }
            return (name, .object(picked.sorted { $0.key < $1.key }.map { (String($0.key.dropFirst("homeroom_".count)), .number($0.value)) }))
        }
        let observers: JSON = .object([("samples", .int(tracking.samples)), ("reattached", .int(tracking.recreated)),
                                       ("invariant_violations", .int(tracking.violationCount))])
        var fields: [(String, JSON)] = []
        fields.append(("tool", .string("homeroom-chaos")))
        fields.append(("result", .string(passed ? "pass" : "fail")))
        fields.append(("seed", .int(options.seed)))
        fields.append(("mode", .string(options.mode.rawValue)))
        fields.append(("duration_s", options.mode == .soak ? .int(options.durationSeconds) : .null))
        fields.append(("network", .string(network.kind)))
        fields.append(("network_detail", .string(network.description)))
        fields.append(("nodes", .int(options.nodes)))
        fields.append(("replay", .string(replayCommand)))
        fields.append(("runtime_ms", .int(runtime)))
        fields.append(("run_directory", .string(runDirectory)))
        fields.append(("checks", result.checksJSON))
        fields.append(("writes", writes))
        fields.append(("stable_latency", result.stableLatency.json))
        fields.append(("convergence", convergenceJSON))
        fields.append(("presence", presenceJSON))
        fields.append(("rewards", result.rewards))
        fields.append(("faults", faults))
        fields.append(("observers", observers))
        fields.append(("clients", .array(clients)))
        fields.append(("node_metrics", .object(nodeMetrics)))
        return .object(fields)
    }

    func printSummary(result: Checker.Result, passed: Bool, nemesis: Nemesis, skipped: [FaultKind], runtime: UInt64,
                      reportPath: String, runDirectory: String, convergence: UInt64?) {
        var lines: [String] = []
        let verdict = passed ? "PASS" : "FAIL"
        lines.append("homeroom-chaos \(verdict): seed \(options.seed), \(options.mode.rawValue)\(options.mode == .soak ? " \(options.durationSeconds) s" : ""), \(network.kind), \(options.nodes) nodes, \(runtime / 1000) s")
        let exercised = FaultKind.allCases.compactMap { kind in nemesis.kindsExercised[kind].map {
            "\(kind.rawValue) x\($0)" + (kind == .drain ? " (\(nemesis.drainsCompleted) ran to the end)" : "")
                + (kind == .join ? " (\(nemesis.joinsCompleted) drained out at the heal, \(nemesis.newcomerWrites) writes accepted there)" : "")
        } }
        lines.append("  faults:      \(exercised.joined(separator: ", "))" + (skipped.isEmpty ? "" : "; skipped: \(FaultKind.describeSkipped(skipped))"))
        lines += result.writeLines
        lines.append("  convergence: final \(convergence.map { "\($0) ms" } ?? "never") after the last heal (bound \(options.convergenceBoundMillis) ms); after every heal \(result.healConvergence.text)")
        if !result.healLines.isEmpty { lines.append("  per heal:    " + result.healLines.joined(separator: ", ")) }
        lines += result.checkLines
        lines.append("  report:      \(reportPath)")
        if !passed || options.keepRunDirectory { lines.append("  node logs:   \(runDirectory)/n*/node.log") }
        lines.append("  replay:      \(replayCommand)")
        print(lines.joined(separator: "\n"))
        fflush(stdout)
    }
}
