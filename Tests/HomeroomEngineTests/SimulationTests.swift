import Foundation
import Testing
import HomeroomCore
import HomeroomSimulation

/// Seeded schedules over several replicas with loss, duplication, reordering,
/// partitions and restarts. `HOMEROOM_SCHEDULES` sets how many (CI runs 10,000);
/// `HOMEROOM_SEED` replays one (`HOMEROOM_TRACE_USER` adds what happened to one user).
@Suite struct SimulationTests {
    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    @Test func randomSchedulesConvergeAndKeepInvariants() {
        let env = Self.environment
        let seeds: [UInt64]
        if let replay = env["HOMEROOM_SEED"].flatMap(UInt64.init) {
            seeds = [replay]
        } else {
            let count = env["HOMEROOM_SCHEDULES"].flatMap(Int.init) ?? 2_000
            let base = env["HOMEROOM_SEED_BASE"].flatMap(UInt64.init) ?? 0x5EED_0000
            seeds = (0..<UInt64(count)).map { base &+ $0 }
        }
        var failures = 0
        var refutations = 0, presenceChecked = 0, falseDowns = 0, probes = 0, vouches = 0
        var vanishedChecked = 0, leasesExpired = 0, attached = 0, reclaims = 0
        var rooms = 0, inFlight = 0, clockReadings = 0, groupRefusals = 0, groupAdmissions = 0
        var tally = SimulationTally()
        for seed in seeds {
            var config = Self.scheduleConfig(seed: seed)
            config.traceUser = env["HOMEROOM_TRACE_USER"]
            let report = Simulation.run(seed: seed, config: config)
            tally.add(report)
            refutations += report.refutations
            falseDowns += report.falseDowns
            presenceChecked += report.presenceChecked
            probes += report.probesSent
            vouches += report.probeVouches
            vanishedChecked += report.vanishedChecked
            leasesExpired += report.leasesExpired
            attached += report.attachedAcrossRestarts
            reclaims += report.reclaims
            rooms += report.rooms
            inFlight += report.writesInFlight
            clockReadings += report.clockReadingsChecked
            groupRefusals += report.groupRoomRefusals
            groupAdmissions += report.groupRoomAdmissions
            if !report.converged {
                failures += 1
                Issue.record("""
                    schedule failed: \(report)
                    replay: HOMEROOM_SEED=\(seed) swift test --filter SimulationTests
                    """)
                if failures >= 3 { break }
            }
        }
        #expect(failures == 0, "\(failures) of \(seeds.count) schedules failed")
        print("simulated \(seeds.count) schedules (\(rooms) rooms): \(inFlight) writes left in flight, \(clockReadings) clock readings checked "
              + "(across restarts too), group room: \(groupRefusals) writes refused by the main room, \(groupAdmissions) let in")
        print("simulated \(tally)")
        print("simulated \(seeds.count) schedules: \(falseDowns) alive nodes declared down, \(refutations) refutations, \(presenceChecked) users checked online, \(probes) probes (\(vouches) found a silent node alive), \(vanishedChecked) vanished clients checked offline, \(leasesExpired) leases ran out, \(attached) clients attached across a restart, \(reclaims) sessions reclaimed")
        // The presence check must have had something to check.
        if seeds.count >= 100 {
            #expect(presenceChecked > seeds.count, "\(presenceChecked) users checked online (\(refutations) refutations)")
            // Failure detection must have declared alive nodes down, and they refuted.
            #expect(falseDowns > seeds.count / 20 && refutations > seeds.count / 20, "\(falseDowns) alive nodes declared down, \(refutations) refutations")
            // The engine's probes ran, and some found a node alive that its prober had stopped hearing.
            #expect(probes > seeds.count && vouches > 0, "\(probes) probes, \(vouches) vouches")
            // Clients vanished and their leases ran out; clients stayed attached across restarts and were reclaimed.
            #expect(vanishedChecked > seeds.count / 10 && leasesExpired > seeds.count / 10,
                    "\(vanishedChecked) vanished clients checked, \(leasesExpired) leases ran out")
            #expect(attached > seeds.count / 10 && reclaims > seeds.count / 20, "\(attached) attached across a restart, \(reclaims) reclaimed")
            // Several rooms per schedule; writes stayed in flight while others went on; the
            // clock check had readings to check; the main room let writes into its group's
            // room and shut some out.
            #expect(rooms >= 2 * seeds.count, "\(rooms) rooms in \(seeds.count) schedules")
            #expect(inFlight > seeds.count * 5 && clockReadings > seeds.count * 100, "\(inFlight) writes in flight, \(clockReadings) clock readings")
            #expect(groupRefusals > seeds.count / 10 && groupAdmissions > seeds.count, "group room: \(groupRefusals) refused, \(groupAdmissions) let in")
            // Restarts, partitions, store failures, folds, lock grants, guarded writes, accepted
            // messages and acknowledged writes checked (`SimulationFloor`).
            #expect(tally.tripped.isEmpty, "\(tally.shortfalls.joined(separator: "; "))")
        }
    }

    /// The shape of the schedule `seed` runs: 2-5 replicas, 2-10 students, 40-170 steps,
    /// now and then a one-to-one room.
    static func scheduleConfig(seed: UInt64) -> SimulationConfig {
        var config = SimulationConfig()
        var rng = SplitMix64(seed: seed ^ 0xC0FFEE)
        config.replicas = Int.random(in: 2...5, using: &rng)
        config.students = Int.random(in: 2...10, using: &rng)
        config.steps = Int.random(in: 40...170, using: &rng)
        config.roomType = Int.random(in: 0..<10, using: &rng) == 0 ? .oneToOne : .smallClassroom
        return config
    }

    @Test func lectureHallScheduleConverges() {
        var config = SimulationConfig()
        config.replicas = 3
        config.students = 60
        config.steps = 2_000
        config.roomType = .lectureHall
        let report = Simulation.run(seed: 42, config: config)
        #expect(report.converged, "\(report)\nreplay: swift test --filter lectureHallScheduleConverges")
    }
}
