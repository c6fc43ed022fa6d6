import Foundation
import HomeroomCore
import HomeroomEngine
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// `homeroom where-now` against a 3-node cluster with placement (one copy of each room)
/// and a cluster key (docs/PROTOCOL.md, "Where now"): the node asked owns neither of the
/// user's rooms and gathers them from its peers; askers without a token, or with one
/// that may not ask, are refused.
@Suite(.serialized) struct WhereNowProcessTests {
    @Test func whereNowFindsAUserInTwoRoomsOnOtherNodesAndRefusesStrangers() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-wn-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = try CLI.run(["keys", "generate", "--out", directory])
        try #require(generated.status == 0, "\(generated.stderr)")
        let secure = ["--token-key", directory + "/token-signing.pub", "--cluster-key", directory + "/cluster.key", "--replicas", "1"]
        let first = try NodeChild(name: "wn-a", extra: secure)
        let nodes = [first] + (try ["wn-b", "wn-c"].map { try NodeChild(name: $0, seeds: [first.listen], extra: secure) })
        defer { for node in nodes { node.stop() } }
        func token(_ user: String, _ role: String, room: String) throws -> String {
            let made = try CLI.run(["token", "create", "--key", directory + "/token-signing.key", "--room", room, "--user", user, "--role", role])
            guard made.status == 0 else { throw NodeProcessError("token create: \(made.stderr)") }
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let teacher = try token("tina", "teacher", room: "*")
        #expect(eventually(15) {
            nodes.allSatisfy { node in
                ((try? NodeProbe.hello(node.listen, token: teacher, timeoutMillis: 1_000))?.peers.filter { $0.status == .alive }.count ?? 0) == 2
            }
        }, "the three nodes did not meet")

        // Two rooms kept on two different nodes; the third node is asked.
        let placement = Placement(replicas: 1, members: nodes.map(\.name))
        let candidates = (0..<64).map { "wn-room-\($0)" }
        let firstRoom = candidates[0]
        let firstOwner = placement.owners(of: firstRoom)[0]
        let secondRoom = try #require(candidates.first { placement.owners(of: $0)[0] != firstOwner })
        let secondOwner = placement.owners(of: secondRoom)[0]
        let asked = try #require(nodes.first { $0.name != firstOwner && $0.name != secondOwner })

        let (logger, _) = Logger.capturing(label: "wn", level: .error)
        var clients: [RoomClient] = []
        defer { for client in clients { client.close() } }
        for room in [firstRoom, secondRoom] {
            var options = RoomClient.Options()
            options.token = try token("ada", "student", room: room)
            let client = RoomClient(room: room, user: "ada", role: .student, name: "Ada", endpoints: nodes.map { NodeEndpoint($0.listen) },
                                    options: options, logger: logger)
            try client.connect()
            clients.append(client)
        }

        let answer = try CLI.run(["where-now", "--user", "ada", "--node", asked.listen, "--token", teacher, "--json"])
        #expect(answer.status == 0, "\(answer.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer.stdout.utf8)) as? [String: Any], "\(answer.stdout)")
        #expect(json["rooms"] as? [String] == [firstRoom, secondRoom].sorted(), "\(answer.stdout)")
        #expect(json["truncated"] as? Bool == false && json["unanswered_nodes"] as? Int == 0, "\(answer.stdout)")
        // Ada may ask about herself with a token for every room; the text form names the rooms.
        let own = try CLI.run(["where-now", "--user", "ada", "--node", asked.listen, "--token", try token("ada", "student", room: "*")])
        #expect(own.status == 0 && own.stdout.contains("ada is in 2 rooms: \([firstRoom, secondRoom].sorted().joined(separator: ", "))"), "\(own.stdout) \(own.stderr)")

        // Refused: no credential (at the node, and the command asks for one), a student
        // about someone else, and a token for one room.
        #expect(throws: ClientError.refused(code: "token-missing", message: TokenError.missing.description)) {
            try NodeProbe.whereNow(asked.listen, user: "ada", token: nil, timeoutMillis: 3_000)
        }
        let bare = try CLI.run(["where-now", "--user", "ada", "--node", asked.listen])
        #expect(bare.status == 64 && bare.stderr.contains("--token"), "\(bare.stderr)")
        let nosy = try CLI.run(["where-now", "--user", "ada", "--node", asked.listen, "--token", try token("bob", "student", room: "*")])
        #expect(nosy.status == 1 && nosy.stderr.contains("[not-allowed]") && !nosy.stdout.contains(firstRoom), "\(nosy.stdout) \(nosy.stderr)")
        let narrow = try CLI.run(["where-now", "--user", "ada", "--node", asked.listen, "--token", try token("tina", "teacher", room: firstRoom)])
        #expect(narrow.status == 1 && narrow.stderr.contains("every room"), "\(narrow.stderr)")

        // Ada leaves one room: only the other is left.
        clients.removeLast().close()
        #expect(eventually(10) {
            (try? NodeProbe.whereNow(asked.listen, user: "ada", token: teacher, timeoutMillis: 3_000))?.rooms == [firstRoom]
        }, "ada's leave was never seen")
    }
}
