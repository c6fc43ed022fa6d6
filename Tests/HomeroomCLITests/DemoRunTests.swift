import Foundation
import Testing

/// The main job, short: it ends by itself with a passing summary.
@Suite struct DemoRunTests {
    @Test func theDemoEndsByItselfWithAPassingSummary() throws {
        let started = Date()
        let result = try CLI.run(["demo", "--students", "4", "--seconds", "10"], timeout: 60)
        #expect(!result.timedOut)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 40)
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
