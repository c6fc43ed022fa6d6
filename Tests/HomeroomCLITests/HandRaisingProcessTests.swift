import Foundation
import HomeroomTestSupport
import Testing

/// Hand raising against two `homeroom node` processes: switched off through one node, a
/// student's raise through the other is refused with the code and a raised hand is
/// lowered; switched on with auto-stage, a raise takes the free seat, and with the stage
/// full the next raise is a raised hand.
@Suite(.serialized) struct HandRaisingProcessTests {
    @Test func handRaisingOffRefusesAndAutoStageTakesFreeSeats() throws {
        let first = try NodeChild(name: "hands-a")
        let second = try NodeChild(name: "hands-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        func run(_ words: [String], on node: NodeChild = first) throws -> CLI.Result {
            let result = try CLI.run(words + ["--room", "hands", "--node", node.listen])
            #expect(!result.timedOut, "\(words) timed out")
            return result
        }
        func roster(on node: NodeChild) -> [String: Any] {
            guard let result = try? run(["roster", "--json"], on: node) else { return [:] }
            return (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any] ?? [:]
        }
        #expect(try run(["hand", "up", "--user", "ana"], on: second).stdout == "your hand is up\n")
        #expect(try run(["hand", "off"]).stdout == "hand raising is off: students cannot raise their hands, and raised ones are lowered\n")
        #expect(eventually(10) { roster(on: second)["hands"] as? [String] == [] }, "\(roster(on: second))")
        let refused = try run(["hand", "up", "--user", "ben"], on: second)
        #expect(refused.status == 1 && refused.stderr.hasPrefix("Error: refused [hand-raising-off]: a teacher has switched hand raising off"),
                "\(refused.stderr)")
        let asStudent = try run(["hand", "on", "--as", "student", "--user", "ben"], on: second)
        #expect(asStudent.status == 1 && asStudent.stderr.contains("[not-allowed]"), "\(asStudent.stderr)")

        #expect(try run(["room", "stage-limit", "1"]).status == 0)
        let on = try run(["hand", "on", "--auto-stage", "--json"])
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(on.stdout.utf8)) as? [String: Any], "\(on.stderr)")
        #expect(fields["allowed"] as? Bool == true && fields["auto_stage"] as? Bool == true, "\(fields)")
        #expect(eventually(10) { (roster(on: second)["room"] as? [String: Any])?["hand_raising"] as? String == "on, auto-stage" },
                "\(roster(on: second))")
        let seated = try run(["hand", "up", "--user", "ben"], on: second)
        #expect(seated.stdout == "you are on stage: the room's auto-stage gave your raised hand a seat\n", "\(seated.stdout) \(seated.stderr)")
        #expect(eventually(10) { roster(on: first)["stage"] as? [String] == ["ben"] })
        // Full: ana's raise is a raised hand; her earlier one stays down (it was lowered by the switch-off).
        #expect(try run(["hand", "up", "--user", "ana"]).stdout == "your hand is up\n")
        #expect(eventually(10) { roster(on: second)["hands"] as? [String] == ["ana"] && roster(on: second)["stage"] as? [String] == ["ben"] })
    }
}
