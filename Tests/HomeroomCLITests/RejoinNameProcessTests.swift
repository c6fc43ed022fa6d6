import Foundation
import Testing
import HomeroomTestSupport

/// A rejoin that does not give --name keeps the name the user has (issue 42: it reset
/// "Cai Lun" to "cai"). Real node and CLI.
@Suite(.serialized) struct RejoinNameProcessTests {
    @Test func aRejoinWithoutANameKeepsIt() throws {
        let node = try NodeChild(name: "names")
        defer { node.stop() }
        let env = ["HOMEROOM_NODES": node.listen, "HOMEROOM_ROOM": "names-1"]
        // `presence set` joins (presence lives with a session): once named, once not.
        #expect(try CLI.run(["presence", "set", "mood", "ready", "--user", "cai", "--name", "Cai Lun"], environment: env).status == 0)
        #expect(try CLI.run(["presence", "set", "mood", "ok", "--user", "cai"], environment: env).status == 0)
        let roster = try CLI.run(["roster", "--json"], environment: env)
        #expect(roster.stdout.contains("\"user\":\"cai\",\"name\":\"Cai Lun\""), "\(roster.stdout)")
        // A new user with no name shows its id.
        #expect(try CLI.run(["presence", "set", "mood", "ok", "--user", "dee"], environment: env).status == 0)
        let again = try CLI.run(["roster", "--json"], environment: env)
        #expect(again.stdout.contains("\"user\":\"dee\",\"name\":\"dee\""), "\(again.stdout)")
    }

    /// A rename reads "Cai is now Student Cai" (it read "Student Cai is now Student Cai
    /// (student)": the event knew only the new name), and a write that changes nothing
    /// anyone sees is no event. A teacher's join at a terminal shows the feed.
    @Test func renameEventsShowTheOldAndTheNewName() throws {
        let node = try NodeChild(name: "renames")
        defer { node.stop() }
        let room = ["--room", "names-2", "--node", node.listen]
        #expect(try CLI.run(["hand", "up", "--user", "cai", "--name", "Cai"] + room).status == 0)
        #expect(try CLI.run(["hand", "up", "--user", "dee"] + room).status == 0)
        let teacher = try TerminalSession(["join", "--as", "teacher", "--user", "ada", "--name", "Ada"] + room)
        #expect(teacher.waitFor("names-2 ada (teacher)> "), "\(teacher.plainTail)")
        let mark = teacher.mark
        #expect(try CLI.run(["name", "Student Cai", "--user", "cai"] + room).status == 0)
        #expect(teacher.waitFor("Cai is now Student Cai", since: mark), "\(teacher.plainTail)")
        // dee's name was its id: naming it so changes nothing shown, then a real rename.
        #expect(try CLI.run(["name", "dee", "--user", "dee"] + room).status == 0)
        #expect(try CLI.run(["name", "Dee", "--user", "dee"] + room).status == 0)
        #expect(teacher.waitFor("dee is now Dee", since: mark), "\(teacher.plainTail)")
        let feed = teacher.shown
        #expect(!feed.contains("Student Cai is now Student Cai") && !feed.contains("dee is now dee"), "\(teacher.plainTail)")
        // The teacher's own rename names her, not a third person.
        teacher.send("name Ada L\n")
        #expect(teacher.waitFor("you are now called Ada L (were Ada)", since: mark), "\(teacher.plainTail)")
        teacher.send("quit\n")
        #expect(teacher.waitForExit() == 0)
    }
}
