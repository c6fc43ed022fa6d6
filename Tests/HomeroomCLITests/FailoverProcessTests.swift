import HomeroomTestSupport
import Foundation
import Testing

/// Issue 42, item 1: every node a client is given is a fallback. A teacher's `join`
/// and a live roster that lose their node move to another by themselves; while no node
/// answers they say which node was lost, since when, why and what they try, and a
/// command typed meanwhile is refused with that reason rather than left hanging.
@Suite(.serialized) struct FailoverProcessTests {
    @Test func aJoinThatLosesItsNodeMovesOnAndSaysWhyWhileItCannot() throws {
        let a = try NodeChild(name: "fo-a")
        let b = try NodeChild(name: "fo-b", seeds: [a.listen])
        let c = try NodeChild(name: "fo-c", seeds: [a.listen])
        #expect(try CLI.run(["hand", "up", "--user", "zoe", "--name", "Zoe", "--room", "fo", "--node", a.listen]).status == 0)
        let teacher = try TerminalSession(["join", "--as", "teacher", "--user", "ada", "--name", "Ada", "--room", "fo",
                                           "--node", a.listen, "--node", b.listen, "--node", c.listen])
        #expect(teacher.waitFor("fo ada (teacher)> "), "no prompt: \(teacher.plainTail)")
        // The link's events may print a prompt before the banner: wait for the banner itself.
        #expect(teacher.waitFor("through \(a.listen)"), "\(teacher.plainTail)")
        let watch = try TerminalSession(["roster", "--watch", "--room", "fo", "--node", a.listen, "--node", b.listen], columns: 140, rows: 30)
        #expect(watch.waitFor("Zoe"), "\(watch.plainTail)")

        // The first node dies: both move to another node by themselves, and say so.
        a.stop()
        // A quick failover may show only its end; either way the lost node is named.
        #expect(teacher.waitFor("moved from \(a.listen) after", timeout: 30), "\(teacher.plainTail)")
        teacher.send("stage add zoe\n")
        #expect(teacher.waitFor("ok: Zoe on stage", timeout: 20), "\(teacher.plainTail)")
        #expect(watch.waitFor("Stage 1/", timeout: 20), "the live view did not follow on another node: \(watch.plainTail)")
        teacher.send("status\n")
        #expect(teacher.waitFor("connected to \(b.listen)") || teacher.shown.contains("connected to \(c.listen)"), "\(teacher.plainTail)")

        // Every node gone: a command is refused at once with the reason, not left hanging.
        b.stop()
        c.stop()
        let before = teacher.mark
        #expect(teacher.waitFor("connection: lost tcp://", since: before, timeout: 20), "\(teacher.plainTail)")
        teacher.send("stage remove zoe\n")
        #expect(teacher.waitFor("not sent [unavailable]: lost tcp://", since: before, timeout: 5), "\(teacher.plainTail)")
        #expect(teacher.waitFor("send it again once 'status' says connected", since: before))
        let asked = teacher.mark
        teacher.send("status\n")
        #expect(teacher.waitFor("; trying tcp://", since: asked) || teacher.waitFor("every node failed", since: asked), "\(teacher.plainTail)")
        #expect(watch.waitFor("⚠ lost \(b.listen)", timeout: 40), "the live view never said which node it lost: \(watch.plainTail)")
        teacher.send("quit\n")
        #expect(teacher.waitForExit(timeout: 20) != nil)
    }
}
