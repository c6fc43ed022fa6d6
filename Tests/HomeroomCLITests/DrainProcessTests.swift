import Foundation
import Testing
import HomeroomCore
import HomeroomNode
import HomeroomTestSupport

/// `homeroom node drain` against real `homeroom node` processes with placement
/// (`--replicas 2`): clients given one node that keeps none of their rooms reach the
/// owners; the drained node hands every room to the others and stops by itself; every
/// acknowledged write is on both remaining nodes.
@Suite(.serialized) struct DrainProcessTests {
    static let placement = ["--replicas", "2", "--http", "http://127.0.0.1:0", "--handoff-settle-ms", "500"]

    static func meshed(_ nodes: [NodeProcess]) -> Bool {
        eventually(15) {
            nodes.allSatisfy { node in
                ((try? NodeProbe.hello(node.listen, token: nil, timeoutMillis: 1_000))?.peers.filter { $0.status == .alive }.count ?? 0) == nodes.count - 1
            }
        }
    }

    @Test func aDrainedNodeHandsEveryRoomToTheOthersAndStops() throws {
        let first = try NodeProcess(name: "drain-a", extra: Self.placement)
        let nodes = [first] + (try ["drain-b", "drain-c"].map { try NodeProcess(name: $0, seeds: [first.listen], extra: Self.placement) })
        defer { for node in nodes { node.stop() } }
        #expect(Self.meshed(nodes), "the three nodes did not meet")
        let (logger, _) = Logger.capturing(label: "drain-test", level: .warning)
        var dots: [String: Dot] = [:]
        for index in 0..<6 {
            let room = "drained-\(index)"
            // One endpoint only: when it keeps none of the room, its not-owner reply is the way in.
            let client = RoomClient(room: room, user: "teacher", role: .teacher, name: "Teacher",
                                    endpoints: [NodeEndpoint(nodes[index % 3].listen)], logger: logger)
            try client.connect()
            dots[room] = try client.write(.setRoomProperty(key: "topic", value: Array(room.utf8), cause: "drain test"))
            client.close()
        }
        let drained = nodes[1]
        let result = try CLI.run(["node", "drain", "--http", drained.http, "--wait-s", "60"])
        #expect(result.status == 0, "drain failed: \(result.stdout) \(result.stderr)\n\(drained.log)")
        #expect(result.stdout.contains("drained and stopped"))
        #expect(eventually(5) { !drained.process.isRunning }, "the drained node is still running")
        // Both remaining nodes own every room now, and hold every acknowledged write.
        for node in [nodes[0], nodes[2]] {
            for (room, dot) in dots.sorted(by: { $0.key < $1.key }) {
                var options = RoomClient.Options()
                options.joins = false
                let reader = RoomClient(room: room, user: "auditor", role: .observer, name: "Auditor",
                                        endpoints: [NodeEndpoint(node.listen)], options: options, logger: logger)
                defer { reader.close() }
                try reader.connect()
                #expect(eventually(10) { reader.seen.contains(dot) }, "\(node.name) lacks the acknowledged write in \(room)")
            }
        }
    }
}
