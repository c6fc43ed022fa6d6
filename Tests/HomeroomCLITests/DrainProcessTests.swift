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

    /// A node given an operator token (`--http-token-file`) drains and lists only for a
    /// request that carries it; `homeroom node drain` says what to give it.
    @Test func theOperatorTokenGuardsDrainAndTheListings() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-operator-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokenFile = directory + "/http.token"
        try Data("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n".utf8).write(to: URL(fileURLWithPath: tokenFile))
        chmod(tokenFile, 0o600)
        let node = try NodeProcess(name: "operator", extra: ["--http", "http://127.0.0.1:0", "--http-token-file", tokenFile])
        defer { node.stop() }
        let refused = try CLI.run(["node", "drain", "--http", node.http, "--wait-s", "5"])
        #expect(refused.status != 0 && refused.stderr.contains("401") && refused.stderr.contains("--http-token-file"), "\(refused.stderr)")
        #expect(node.get("/rooms")?.status == 401 && node.get("/cluster")?.status == 401 && node.get("/healthz")?.status == 200)
        // With the token the request is heard: a lone node has nowhere to hand its rooms (409), and keeps running.
        let heard = try CLI.run(["node", "drain", "--http", node.http, "--wait-s", "5", "--http-token-file", tokenFile])
        #expect(heard.status != 0 && heard.stderr.contains("409"), "\(heard.stderr)")
        #expect(node.process.isRunning)
        // A token file others can read, or one too short, is refused at start.
        let loose = directory + "/loose.token", short = directory + "/short.token"
        try Data("00112233445566778899aabbccddeeff\n".utf8).write(to: URL(fileURLWithPath: loose))
        chmod(loose, 0o644)
        try Data("0011223344\n".utf8).write(to: URL(fileURLWithPath: short))
        chmod(short, 0o600)
        for (file, says) in [(loose, "600"), (short, "16 bytes")] {
            let start = try CLI.run(["node", "--name", "bad", "--listen", "tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0", "--http-token-file", file])
            #expect(start.status != 0 && start.stderr.contains(says), "\(file): \(start.stderr)")
        }
    }
}
