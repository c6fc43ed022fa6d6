import Foundation
import Testing

/// The main job, short: it ends by itself with a passing summary.
@Suite struct DemoRunTests {
    @Test func theDemoEndsByItselfWithAPassingSummary() throws {
        // A 10 s lesson: about 15 s in all on an idle machine. It ends by itself (the bound
        // is for a demo that never ends, generous for a loaded machine); how long it takes
        // is not this test's to say.
        let started = Date()
        let result = try CLI.run(["demo", "--students", "4", "--seconds", "10"], timeout: 150)
        print("DemoRunTests: the demo took \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        #expect(!result.timedOut, "the demo did not end by itself within 150 s")
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        for text in ["3 nodes up", "refused [stage-full]", "refused [not-allowed]", "demo-3 stopped", "reconnected", "caught up",
                     "class ended", "Final roster", "ok   converged: 3 nodes (demo-1, demo-2, demo-4)", "PASS: every check held"] {
            #expect(result.stdout.contains(text), "no '\(text)' in:\n\(result.stdout)")
        }
        #expect(!result.stdout.contains("\u{1B}"), "not a terminal: no escapes")
        for line in result.stdout.split(separator: "\n") where line.contains("tcp://") {
            #expect(!line.contains("tcp://0.0.0.0") && line.contains("tcp://127.0.0.1"), "\(line)")
        }
    }
}
