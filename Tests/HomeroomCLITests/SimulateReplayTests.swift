import Foundation
import Testing

/// Replays are exact (issue 40, item 7): one seed gives the same schedule in any
/// process. Each process hashes with its own random seed, so a dictionary iterated
/// unsorted where it feeds an order or a random draw (in the engine or the simulation)
/// makes two runs differ in what was delivered where, which the digest shows.
@Suite struct SimulateReplayTests {
    @Test func aSeedReplaysExactlyInAnotherProcess() throws {
        let arguments = ["simulate", "--seed", "4100", "--schedules", "12", "--json"]
        let first = try CLI.run(arguments)
        let second = try CLI.run(arguments)
        #expect(first.status == 0 && second.status == 0, "\(first.stderr)\(second.stderr)")
        let lines = first.stdout.split(separator: "\n")
        #expect(lines.count == 12)
        // Every schedule delivered something, so the digests say something.
        #expect(lines.allSatisfy { $0.contains("\"delivery_digest\":\"") && !$0.contains("\"delivery_digest\":\"cbf29ce484222325\"") },
                "\(first.stdout)")
        #expect(first.stdout == second.stdout, "the same seeds gave different runs:\n\(first.stdout)\n---\n\(second.stdout)")
    }
}
