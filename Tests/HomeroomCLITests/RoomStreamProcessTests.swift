import Foundation
import HomeroomCore
import HomeroomEngine
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// Room streams against real `homeroom node` processes, bytes counted on the connection
/// as a student's phone would pay for them: a stream of room A carries room A's traffic
/// and nothing of rooms B..M, no heartbeats, nothing while the class is idle; in a closed
/// room, only room A's sealed bytes.
@Suite(.serialized) struct RoomStreamProcessTests {
    /// A raw WebSocket connection to a node's publish port, following one stream.
    final class StreamTap {
        let connection: RawConnection
        private(set) var bytes: [UInt8] = []
        private var parsed = 0
        private(set) var messages: [[UInt8]] = []

        init(publish: String, path: String) throws {
            let port = try #require(UInt16(publish.split(separator: ":").last ?? ""), "publish address \(publish)")
            connection = try #require(RawConnection(port: port))
            let key = SPWebSocket.newKey()
            connection.write(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: pub.sp.nanomsg.org\r\n\r\n".utf8))
            var answer: [UInt8] = []
            while !answer.suffix(4).elementsEqual([13, 10, 13, 10]) {
                let byte = connection.read(1)
                guard byte.count == 1 else { throw NodeProcessError("no answer to the upgrade: \(String(decoding: answer, as: UTF8.self))") }
                answer += byte
            }
            guard case .accepted = SPWebSocket.parseResponse(answer[...], key: key, subprotocol: "pub.sp.nanomsg.org") else {
                throw NodeProcessError("upgrade refused: \(String(decoding: answer, as: UTF8.self))")
            }
        }

        /// Reads what arrives for `seconds`, then parses the frames.
        func read(for seconds: Double) {
            let deadline = Date().addingTimeInterval(seconds)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Date() < deadline {
                var poll = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&poll, 1, 50) > 0 else { continue }
                let n = recv(connection.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if n <= 0 { break }
                bytes += buffer[0..<n]
            }
            while parsed < bytes.count, case .frame(let frame) = SPWebSocket.parseFrame(bytes[parsed...], fromClient: false, maxPayload: 1 << 26) {
                #expect(frame.fin && frame.opcode == .binary, "a frame the node should not send: \(frame.opcode)")
                parsed += frame.consumed
                messages.append(frame.payload)
            }
        }

        /// The topic of each message (up to the first 00, or the second for a private stream).
        var topics: [[UInt8]] {
            messages.map { message in
                guard let (_, payload) = Topics.split(message) else { return message }
                return Array(message[..<payload.startIndex])
            }
        }

        func close() { connection.close() }
    }

    static func client(_ room: String, _ user: String, _ role: Role, node: NodeChild, token: String? = nil) -> RoomClient {
        var options = RoomClient.Options()
        options.token = token
        options.requestTimeoutMillis = 3_000
        let (logger, _) = Logger.capturing(label: user, level: .error)
        return RoomClient(room: room, user: user, role: role, name: user.capitalized, endpoints: [NodeEndpoint(node.listen)],
                          options: options, logger: logger)
    }

    @Test func aStreamOfRoomACarriesRoomAAndNothingElseWhileTheOtherRoomsTalk() throws {
        let node = try NodeChild(name: "streams")
        defer { node.stop() }
        // The control: an SP/TCP subscriber (a v1 client) on the same port gets everything.
        let firehose = try ClosedRoomProcessTests.Eavesdropper(addresses: [node.publish])
        defer { firehose.close() }
        let tap = try StreamTap(publish: node.publish, path: RoomStreams.path(room: "roomA", user: "ada"))
        defer { tap.close() }

        // Idle: no byte in 2 s, while the node heartbeats every 100 ms on SP/TCP.
        tap.read(for: 2)
        #expect(tap.bytes.isEmpty, "an idle stream got \(tap.bytes.count) bytes: \(tap.topics.map { String(decoding: $0, as: UTF8.self) })")
        #expect(firehose.messages.filter { $0.first == Topics.heartbeat[0] }.count >= 5, "the control saw no heartbeats")

        // Twelve other classes talk; room A says one thing, and bob whispers ada.
        let others = (0..<12).map { Self.client("room\(Character(UnicodeScalar(UInt8(66 + $0))))", "t\($0)", .teacher, node: node) }
        let ada = Self.client("roomA", "ada", .teacher, node: node), bob = Self.client("roomA", "bob", .student, node: node)
        defer { for client in others + [ada, bob] { client.close() } }
        for client in others + [ada, bob] { try client.connect() }
        let marker = "roomA-\(UInt32.random(in: 0...UInt32.max))", whisper = "psst-\(UInt32.random(in: 0...UInt32.max))"
        for (index, teacher) in others.enumerated() {
            for round in 0..<5 { _ = try teacher.send(Array("other-\(index)-\(round)".utf8)) }
        }
        _ = try ada.send(Array(marker.utf8))
        _ = try bob.sendPeer(to: "ada", Array(whisper.utf8))
        tap.read(for: 3)

        let mine: Set<[UInt8]> = [Topics.clientRoom("roomA"), Topics.clientUser("roomA", "ada")]
        let foreign = tap.topics.filter { !mine.contains($0) }
        #expect(foreign.isEmpty, "room A's stream carried \(foreign.count) foreign messages: \(Set(foreign.map { String(decoding: $0, as: UTF8.self) }))")
        #expect(tap.messages.contains { ClosedRoomProcessTests.contains($0, marker) }, "room A's own message never came")
        #expect(tap.messages.contains { ClosedRoomProcessTests.contains($0, whisper) }, "ada's peer message never came")
        // The other rooms did talk: the v1 subscriber saw their messages and node traffic.
        let seen = firehose.messages
        #expect((0..<12).allSatisfy { index in seen.contains { ClosedRoomProcessTests.contains($0, "other-\(index)-4") } })
        #expect(seen.contains { $0.first == Topics.nodeDeltas[0] })
        // Every stream byte is a frame of room A's: what the tap paid is what room A sent.
        let roomBytes = seen.filter { message in Topics.split(message).map { mine.contains(Array(message[..<$0.payload.startIndex])) } ?? false }
            .reduce(0) { $0 + $1.count }
        #expect(tap.bytes.count <= roomBytes + 14 * tap.messages.count, "stream \(tap.bytes.count) bytes, room A's own \(roomBytes)")
    }

    @Test func aClosedRoomsStreamCarriesOnlyItsOwnSealedBytes() throws {
        let cluster = try ClosedRoomProcessTests.SecuredCluster(label: "stream-sealed")
        defer { cluster.stop() }
        let tap = try StreamTap(publish: cluster.first.publish, path: RoomStreams.path(room: "bio-1"))
        defer { tap.close() }
        let tina = try cluster.client("tina", .teacher, room: "bio-1", through: cluster.first)
        let tom = try cluster.client("tom", .teacher, room: "art-2", through: cluster.first)
        defer { tom.close(); tina.close() }
        try tina.connect()
        try tom.connect()
        let secret = "okapi-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tina.send(Array(secret.utf8))
        for round in 0..<10 { _ = try tom.send(Array("art-\(round)".utf8)) }
        tap.read(for: 3)
        #expect(!tap.messages.isEmpty, "the stream of bio-1 carried nothing")
        #expect(tap.topics.allSatisfy { $0 == Topics.clientRoom("bio-1") }, "foreign topics: \(Set(tap.topics.map { String(decoding: $0, as: UTF8.self) }))")
        for message in tap.messages {
            let payload = try #require(Topics.split(message)).payload
            #expect(payload.prefix(4).elementsEqual(Array("HRE1".utf8)), "not sealed: \(Array(payload.prefix(8)))")
            #expect(!ClosedRoomProcessTests.contains(message, secret))
        }
    }

    /// What the four nodes of `placedCluster` received and applied from each other.
    struct ClusterReceipt {
        var applied = 0.0, ignored = 0.0, deltaBytes = 0.0
    }

    /// Four nodes keeping each room on two (`--replicas 2`), 12 rooms of 5 acknowledged
    /// writes each, every write checked on both of its room's owners.
    static func placedCluster(label: String, extra: [String] = []) throws -> ClusterReceipt {
        let first = try NodeChild(name: "\(label)-a", extra: DrainProcessTests.placement + extra)
        let nodes = [first] + (try ["b", "c", "d"].map { try NodeChild(name: "\(label)-\($0)", seeds: [first.listen], extra: DrainProcessTests.placement + extra) })
        defer { for node in nodes { node.stop() } }
        #expect(DrainProcessTests.meshed(nodes), "the four nodes did not meet")
        let streams = extra.contains("off") ? 0.0 : 3.0
        // Each node follows the three others through their node streams (or none, with them off).
        #expect(eventually(10) { nodes.allSatisfy { ($0.metric("homeroom_subscribers{kind=\"stream\"}") ?? -1) >= streams } },
                "stream subscribers: \(nodes.map { $0.metric("homeroom_subscribers{kind=\"stream\"}") ?? -1 })")
        let (logger, _) = Logger.capturing(label: label, level: .warning)
        var dots: [String: [Dot]] = [:]
        for index in 0..<12 {
            let room = "placed-\(index)"
            let client = RoomClient(room: room, user: "teacher", role: .teacher, name: "Teacher",
                                    endpoints: nodes.map { NodeEndpoint($0.listen) }, logger: logger)
            defer { client.close() }
            try client.connect()
            for round in 0..<5 {
                dots[room, default: []].append(try client.write(.setRoomProperty(key: "k\(round)", value: Array(room.utf8), cause: "node streams")))
            }
        }
        func total(_ series: String) -> Double { nodes.reduce(0) { $0 + ($1.metric(series) ?? 0) } }
        // 60 writes: one live copy each to the other owner.
        #expect(eventually(10) { total("homeroom_deltas_in_total") >= 30 }, "the nodes applied \(total("homeroom_deltas_in_total")) peer deltas")
        // Every acknowledged write is on both owners of its room.
        let owners = Placement(replicas: 2, members: nodes.map(\.name))
        for (room, written) in dots.sorted(by: { $0.key < $1.key }) {
            for owner in owners.owners(of: room) {
                let node = try #require(nodes.first { $0.name == owner })
                var options = RoomClient.Options()
                options.joins = false
                let reader = RoomClient(room: room, user: "auditor", role: .observer, name: "Auditor",
                                        endpoints: [NodeEndpoint(node.listen)], options: options, logger: logger)
                defer { reader.close() }
                try reader.connect()
                #expect(eventually(10) { written.allSatisfy { reader.seen.contains($0) } }, "\(owner) lacks an acknowledged write in \(room)")
            }
        }
        return ClusterReceipt(applied: total("homeroom_deltas_in_total"), ignored: total("homeroom_deltas_ignored_total{reason=\"not-owner\"}"),
                              deltaBytes: total("homeroom_cluster_bytes_in_total{topic=\"deltas\"}"))
    }

    /// Node streams: each node receives the deltas of the rooms it owns and not the
    /// others'; with them off (`--node-streams off`, every delta to every node, as
    /// before), the same workload makes the non-owners ignore about twice what the owners
    /// apply, and the nodes receive about three times the delta bytes.
    @Test func aNodeReceivesTheDeltasOfTheRoomsItOwnsAndNotTheOthers() throws {
        let streamed = try Self.placedCluster(label: "ns")
        #expect(streamed.ignored * 10 <= streamed.applied, "with node streams: \(streamed)")
        let everything = try Self.placedCluster(label: "nsoff", extra: ["--node-streams", "off"])
        #expect(everything.ignored >= everything.applied, "with node streams off, the control: \(everything)")
        #expect(streamed.deltaBytes * 2 <= everything.deltaBytes, "delta bytes received: \(streamed.deltaBytes) with streams, \(everything.deltaBytes) without")
    }
}
