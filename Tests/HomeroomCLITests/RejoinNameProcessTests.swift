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
}
