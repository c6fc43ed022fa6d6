import Foundation
import HomeroomCore
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// The stage carousel against two `homeroom node` processes: started from the CLI on one
/// node, the same students are on stage on both nodes' rosters, turn by turn.
@Suite(.serialized) struct CarouselProcessTests {
    @Test func aCarouselStartedOnOneNodeRotatesTheSameStudentsOnEveryNode() throws {
        let first = try NodeChild(name: "carousel-a")
        let second = try NodeChild(name: "carousel-b", seeds: [first.listen])
        defer { second.stop(); first.stop() }
        let students = ["s1", "s2", "s3", "s4", "s5"]
        var clients: [RoomClient] = []
        defer { for client in clients { client.close() } }
        for (index, student) in students.enumerated() {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 200
            let (logger, _) = Logger.capturing(label: student, level: .error)
            let node = index % 2 == 0 ? first : second
            let client = RoomClient(room: "carousel", user: student, role: .student, name: student, endpoints: [NodeEndpoint(node.listen)],
                                    options: options, logger: logger)
            try client.connect()
            clients.append(client)
        }
        func run(_ words: [String], on node: NodeChild = first) throws -> CLI.Result {
            let result = try CLI.run(words + ["--room", "carousel", "--node", node.listen])
            #expect(!result.timedOut, "\(words) timed out")
            return result
        }
        func json(_ result: CLI.Result) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout) \(result.stderr)")
        }
        #expect(try run(["room", "stage-limit", "2"]).status == 0)
        #expect(eventually(10) { clients.allSatisfy { client in students.allSatisfy { client.replica.isOnline($0) } } },
                "the students never saw each other online")
        let refused = try run(["carousel", "start", "--interval", "10", "--user", "s1", "--as", "student"])
        #expect(refused.status == 1 && refused.stderr.contains("[not-allowed]"), "\(refused.stderr)")
        let started = try json(try run(["carousel", "start", "--interval", "10", "--json"]))
        #expect(started["running"] as? Bool == true && started["interval_seconds"] as? Int == 10 && started["rotates"] as? Bool == true, "\(started)")
        // Both nodes' rosters show the same two students, whichever turn it is; a few
        // tries, because a turn may change between the two reads.
        var agreed = false
        for _ in 0..<10 where !agreed {
            let one = try json(try run(["roster", "--json"]))
            let other = try json(try run(["roster", "--json"], on: second))
            let stage = one["stage"] as? [String] ?? []
            agreed = stage.count == 2 && stage == (other["stage"] as? [String]) && Set(stage).isSubset(of: Set(students))
        }
        #expect(agreed, "the two nodes never showed one stage")
        let status = try json(try run(["carousel", "--json"], on: second))
        #expect(status["running"] as? Bool == true && (status["on_stage"] as? [String])?.count == 2, "\(status)")
        // The nodes' room listing (`homeroom rooms`, RoomDigest.stage) shows that turn too,
        // not the stage as written (nobody): a few tries, as above.
        var listed: [String]?, derived: [String]?
        for _ in 0..<10 where listed == nil || listed != derived {
            derived = try json(try run(["carousel", "--json"], on: second))["on_stage"] as? [String]
            let rooms = try JSONSerialization.jsonObject(with: Data(try CLI.run(["rooms", "--json", "--node", second.listen]).stdout.utf8)) as? [[String: Any]]
            listed = rooms?.first { $0["room"] as? String == "carousel" }?["stage"] as? [String]
            if listed != derived { usleep(200_000) }
        }
        #expect(listed != nil && listed == derived && listed?.count == 2, "listed \(listed ?? []), derived \(derived ?? [])")
        // Every client derives the same turn from its replica as the CLI did.
        let moment = WallClock.nowMillis()
        let turns = Set(clients.map { $0.replica.carouselTurn(atMillis: moment)?.onStage ?? [] })
        #expect(turns.count == 1 && turns.first?.count == 2, "\(turns)")
        #expect(try run(["carousel", "stop"], on: second).stdout == "the carousel is stopped\n")
        #expect(eventually(10) { clients.allSatisfy { $0.replica.carouselTurn(atMillis: WallClock.nowMillis()) == nil } })
        #expect((try json(try run(["roster", "--json"])))["stage"] as? [String] == [])
        let bad = try run(["carousel", "start", "--range", "sideways"])
        #expect(bad.status != 0 && bad.stderr.contains("--range is all or camera-on"), "\(bad.stderr)")
    }
}
