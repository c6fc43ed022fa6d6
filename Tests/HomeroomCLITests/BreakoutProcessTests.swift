import Foundation
import HomeroomCore
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// Breakout groups against two `homeroom node` processes: the teacher's CLI spreads five
/// students over two groups, each student's client finds its group and talks in its
/// room, the broadcast reaches every group room, and the end brings everyone back.
@Suite(.serialized) struct BreakoutProcessTests {
    @Test func theCLIRunsABreakoutRoundAcrossTwoNodes() throws {
        let first = try NodeChild(name: "breakout-a")
        let second = try NodeChild(name: "breakout-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        func client(_ user: String, room: String, on node: NodeChild) throws -> RoomClient {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 200
            let (logger, _) = Logger.capturing(label: user, level: .error)
            let client = RoomClient(room: room, user: user, role: .student, name: user, endpoints: [NodeEndpoint(node.listen)], options: options, logger: logger)
            try client.connect()
            return client
        }
        let students = ["s1", "s2", "s3", "s4", "s5"]
        var clients: [String: RoomClient] = [:]
        defer { for client in clients.values { client.close() } }
        for (index, student) in students.enumerated() { clients[student] = try client(student, room: "class", on: index % 2 == 0 ? first : second) }
        func run(_ words: [String], on node: NodeChild = first) throws -> CLI.Result {
            let result = try CLI.run(words + ["--room", "class", "--node", node.listen])
            #expect(!result.timedOut, "\(words) timed out")
            return result
        }
        #expect(eventually(10) { clients.values.allSatisfy { client in students.allSatisfy { client.replica.isOnline($0) } } })
        #expect(try run(["group", "random", "2"]).status == 0)
        #expect(eventually(10) { clients.values.allSatisfy { $0.replica.breakoutGroup(of: $0.user) != nil } }, "a student never saw its group")
        let listing = try run(["group", "--json"], on: second)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(listing.stdout.utf8)) as? [String: Any], "\(listing.stdout)")
        let groups = object["groups"] as? [[String: Any]] ?? []
        let members = groups.flatMap { $0["members"] as? [String] ?? [] }
        #expect(groups.count == 2 && members.sorted() == students && groups.map { $0["room"] as? String } == ["class:g1", "class:g2"], "\(object)")
        // Two members of one group talk in its room; a student of the other group hears nothing of it.
        let replica = clients["s1"]!.replica
        let mine = replica.breakoutGroup(of: "s1")!
        let mate = try #require(students.first { $0 != "s1" && replica.breakoutGroup(of: $0) == mine })
        let other = try #require(students.first { replica.breakoutGroup(of: $0) != mine })
        let room = Breakout.roomID(of: mine, in: "class")
        let speaker = try client("s1", room: room, on: first)
        let listener = try client(mate, room: room, on: second)
        let outsider = try client(other, room: Breakout.roomID(of: replica.breakoutGroup(of: other)!, in: "class"), on: first)
        defer { speaker.close(); listener.close(); outsider.close() }
        _ = try speaker.send(type: "chat", Array("our notes".utf8))
        #expect(eventually(10) { listener.replica.messages.entries.values.contains { $0.payload == Array("our notes".utf8) } })
        #expect(try run(["group", "broadcast", "five", "minutes", "left"], on: second).status == 0)
        for client in [speaker, listener, outsider] {
            #expect(eventually(10) { client.replica.messages.entries.values.contains { $0.payload == Array("five minutes left".utf8) } }, "\(client.user)")
        }
        #expect(!outsider.replica.messages.entries.values.contains { $0.payload == Array("our notes".utf8) })
        #expect(!clients["s1"]!.replica.messages.entries.values.contains { $0.payload == Array("our notes".utf8) }, "group talk leaked into the main room")
        let roster = try run(["roster"])
        #expect(roster.stdout.contains("Breakout: g1 Group 1") && roster.stdout.contains("[\(mine)]"), "\(roster.stdout)")
        // A student goes only into its own group's room; a banned one into none.
        func joinCode(_ user: String, _ room: String) -> String? {
            do { let client = try client(user, room: room, on: second); client.close(); return nil } catch let error as ClientError {
                if case let .refused(code, _) = error { return code }
                return "\(error)"
            } catch { return "\(error)" }
        }
        #expect(joinCode(other, room) == "not-in-group")
        #expect(try run(["ban", mate]).status == 0)
        #expect(eventually(10) { speaker.replica.users[mate] == nil || clients["s1"]!.replica.users[mate]?.isBanned == true })
        #expect(eventually(10) { joinCode(mate, room) == "banned" }, "a banned student still went into its group's room")
        let refused = try run(["group", "end", "--user", "s1", "--as", "student"])
        #expect(refused.status == 1 && refused.stderr.contains("[not-allowed]"), "\(refused.stderr)")
        #expect(try run(["group", "end"], on: second).status == 0)
        #expect(eventually(10) { clients.values.allSatisfy { $0.user == mate || ($0.replica.breakout.isEmpty && $0.replica.breakoutGroup(of: $0.user) == nil) } })
    }
}
