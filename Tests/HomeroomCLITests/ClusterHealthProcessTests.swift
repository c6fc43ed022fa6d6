import Foundation
import Testing
import HomeroomTestSupport

/// What an operator alerts on (issue 42): `cluster status` by the names the nodes were
/// given, `cluster check` exit codes (0 OK, 1 WARNING, 2 CRITICAL), /readyz for a node
/// cut off from its peers, and the peer metrics in the CLI's words. Real processes.
@Suite(.serialized) struct ClusterHealthProcessTests {
    static func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    @Test func statusShowsNamesAndCheckAndReadinessFollowThePeers() throws {
        let first = try NodeChild(name: "amber", extra: ["--http", "http://127.0.0.1:0"])
        defer { first.stop() }
        let second = try NodeChild(name: "birch", seeds: [first.listen])
        defer { second.stop() }
        let third = try NodeChild(name: "cedar", seeds: [first.listen])
        defer { third.stop() }
        #expect(try Self.waitUntil(20) { try CLI.run(["cluster", "check", "--node", first.listen]).status == 0 }, "never OK with three nodes up")
        let ok = try CLI.run(["cluster", "check", "--node", first.listen])
        #expect(ok.stdout.hasPrefix("OK: 3 of 3 members alive as amber"), "\(ok.stdout)")
        let table = try CLI.run(["cluster", "status", "--node", first.listen]).stdout
        #expect(table.contains("Name ") && table.contains("amber ") && table.contains("birch ") && table.contains("cedar "), "\(table)")
        #expect(first.get("/readyz")?.status == 200)

        // One member down: WARNING, exit 1, naming it; still ready.
        third.stop()
        // (suspect first, then down: both are WARNING)
        var warning = try CLI.run(["cluster", "check", "--node", first.listen])
        #expect(try Self.waitUntil(20) {
            warning = try CLI.run(["cluster", "check", "--node", first.listen])
            return warning.status == 1 && warning.stdout.contains("cedar down")
        }, "never WARNING with cedar down: \(warning.stdout)")
        #expect(warning.stdout.hasPrefix("WARNING: 2 of 3 members alive") && warning.stdout.contains("cedar down"), "\(warning.stdout)")
        #expect(first.metric("homeroom_peers{status=\"down\"}") == 1)
        #expect(first.metric("homeroom_peer_behind{peer=\"birch\"}") != nil, "no lag series for birch by name")
        #expect(first.get("/readyz")?.status == 200)

        // Every other member down: the node is cut off. CRITICAL, exit 2; not ready
        // (a load balancer moves clients), yet alive (a restart would not help).
        second.stop()
        #expect(try Self.waitUntil(20) { try CLI.run(["cluster", "check", "--node", first.listen]).status == 2 }, "never CRITICAL when cut off")
        #expect(try CLI.run(["cluster", "check", "--node", first.listen]).stdout.contains("no other member is alive"))
        #expect(try Self.waitUntil(10) { first.get("/readyz")?.status == 503 }, "an isolated node said it was ready")
        #expect(first.get("/readyz")?.body.contains("isolated") == true)
        #expect(first.get("/healthz")?.status == 200, "liveness must not fail an isolated node (a restart does not help)")
        #expect(first.metric("homeroom_ready") == 0)

        // No node at the address: CRITICAL, and the reason is the refused connection.
        first.stop()
        let gone = try CLI.run(["cluster", "check", "--node", first.listen])
        #expect(gone.status == 2 && gone.stdout.hasPrefix("CRITICAL:") && gone.stdout.contains("nothing listens"), "\(gone.stdout)")
    }

    @Test func connectionErrorsNameTheirCause() throws {
        let refused = try CLI.run(["cluster", "status", "--node", "tcp://127.0.0.1:1"])
        #expect(refused.status == 1 && refused.stderr.contains("nothing listens at tcp://127.0.0.1:1"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("no node answered: no node answered"), "\(refused.stderr)")
        let unknown = try CLI.run(["cluster", "status", "--node", "tcp://no-such-host.invalid:7100"])
        #expect(unknown.status == 1 && unknown.stderr.contains("does not resolve"), "\(unknown.stderr)")
        // A usage error shows the USAGE lines and where the rest is, not the whole help.
        let usage = try CLI.run(["cluster", "status"])
        #expect(usage.status == 64 && usage.stderr.contains("USAGE: homeroom cluster") && usage.stderr.contains("--help"), "\(usage.stderr)")
        #expect(!usage.stderr.contains("OPTIONS:"), "the whole help was printed: \(usage.stderr)")
    }
}
