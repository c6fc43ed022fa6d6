import Foundation
import HomeroomTestSupport
import Testing

/// Invitations to the stage against two `homeroom node` processes: the teacher invites
/// through one node, the student sees it and accepts through the other, and is on stage
/// on the first; a second invitation left unanswered times out, and a late accept is
/// refused with the code.
@Suite(.serialized) struct InvitationProcessTests {
    @Test func aStudentAcceptsOnAnotherNodeAndAnUnansweredInvitationTimesOut() throws {
        let first = try NodeChild(name: "invite-a")
        let second = try NodeChild(name: "invite-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        func run(_ words: [String], on node: NodeChild = first) throws -> CLI.Result {
            let result = try CLI.run(words + ["--room", "podium", "--node", node.listen])
            #expect(!result.timedOut, "\(words) timed out")
            return result
        }
        func json(_ words: [String], on node: NodeChild) throws -> [String: Any] {
            let result = try run(words + ["--json"], on: node)
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout) \(result.stderr)")
        }
        func invitation(of user: String, on node: NodeChild) -> [String: Any]? {
            (try? json(["invitation", "--user", user], on: node))?["invitation"] as? [String: Any]
        }
        func known(_ user: String) -> Bool {
            ((try? json(["roster"], on: first))?["students"] as? [[String: Any]])?.contains { $0["user"] as? String == user } == true
        }
        for user in ["ana", "bob"] { #expect(try run(["name", user.capitalized, "--user", user], on: second).status == 0) }
        // They joined through the second node: the first must know them before the teacher's writes there.
        #expect(eventually(10) { known("ana") && known("bob") })

        let invited = try json(["stage", "invite", "ana", "--seconds", "60"], on: first)
        #expect(invited["ok"] as? Bool == true && invited["seconds"] as? Int == 60, "\(invited)")
        #expect(eventually(10) { invitation(of: "ana", on: second)?["status"] as? String == "pending" })
        #expect(invitation(of: "ana", on: second)?["inviter"] as? String != nil)
        let accepted = try run(["invitation", "accept", "--user", "ana"], on: second)
        #expect(accepted.status == 0 && accepted.stdout == "you accepted: you are on stage\n", "\(accepted.stdout) \(accepted.stderr)")
        #expect(eventually(10) { (try? json(["roster"], on: first))?["stage"] as? [String] == ["ana"] })
        let again = try run(["invitation", "decline", "--user", "ana"], on: second)
        #expect(again.status == 1 && again.stderr.contains("[invitation-answered]"), "\(again.stderr)")

        #expect(try run(["stage", "invite", "bob", "--seconds", "5"]).status == 0)
        #expect(eventually(10) { invitation(of: "bob", on: second)?["status"] as? String == "pending" })
        #expect(eventually(15) { invitation(of: "bob", on: second)?["status"] as? String == "expired" })
        let late = try run(["invitation", "accept", "--user", "bob"], on: second)
        #expect(late.status == 1 && late.stderr.contains("[invitation-expired]"), "\(late.stderr)")
        #expect(try json(["roster"], on: first)["stage"] as? [String] == ["ana"])
        let bad = try run(["stage", "invite", "bob", "--seconds", "3"])
        #expect(bad.status != 0 && bad.stderr.contains("--seconds"), "\(bad.stderr)")
    }
}
