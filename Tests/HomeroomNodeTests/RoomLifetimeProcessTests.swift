import Foundation
import HomeroomCore
import HomeroomTestSupport
import HomeroomWire
import Testing
@testable import HomeroomNode

/// Rooms are not for ever (issue 39): a room left empty and idle for `--room-retention`
/// goes, with its store rows, while a room someone is in stays; opening rooms is rate
/// limited per user and per node. Real `homeroom node` processes.
@Suite(.serialized) struct RoomLifetimeProcessTests {
    static func client(_ user: String, room: String, node: NodeProcess) -> RoomClient {
        var options = RoomClient.Options()
        options.requestTimeoutMillis = 3_000
        let (logger, _) = Logger.capturing(label: user, level: .error)
        return RoomClient(room: room, user: user, role: .teacher, name: user.capitalized, endpoints: [NodeEndpoint(node.listen)],
                          options: options, logger: logger)
    }

    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }

    @Test func anEmptyIdleRoomGoesWithItsRowsAndARoomInUseStays() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-idle-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let flags = ["--data-dir", directory, "--room-retention", "1", "--http", "http://127.0.0.1:0"]
        var node = try NodeProcess(name: "idle", extra: flags)
        defer { node.stop() }
        // An abandoned room: one write, then everyone leaves.
        let ann = Self.client("ann", room: "old-class", node: node)
        try ann.connect()
        _ = try ann.write(.setRoomProperty(key: "topic", value: Array("fractions".utf8), cause: "test"))
        ann.close()
        // A room in use: bob stays.
        let bob = Self.client("bob", room: "live-class", node: node)
        defer { bob.close() }
        try bob.connect()
        #expect(node.metric("homeroom_rooms") == 2)
        #expect(Self.waitUntil(30) { node.metric("homeroom_rooms_removed_idle_total") ?? 0 >= 1 }, "the idle room was never removed")
        #expect(node.metric("homeroom_rooms") == 1, "the room bob is in went too")
        _ = try bob.write(.setRoomProperty(key: "still", value: [1], cause: "test"))
        // Its rows went too: a restart on the same store holds only bob's room.
        bob.close()
        node.stop()
        node = try NodeProcess(name: "idle", extra: flags)
        #expect(node.metric("homeroom_rooms") == 1, "after a restart: \(String(describing: node.metric("homeroom_rooms"))) rooms")
        // The room's id opens a fresh room, whose writes are acknowledged and kept.
        let carl = Self.client("carl", room: "old-class", node: node)
        defer { carl.close() }
        try carl.connect()
        #expect(carl.replica.properties["topic"] == nil, "the removed room's property came back")
        _ = try carl.write(.setRoomProperty(key: "topic", value: Array("decimals".utf8), cause: "test"))
        #expect(carl.replica.users["ann"] == nil && carl.replica.users["carl"] != nil)
    }

    @Test func openingRoomsIsRateLimitedPerUserAndPerNode() throws {
        let node = try NodeProcess(name: "creations", extra: ["--room-creations-per-second", "2", "--http", "http://127.0.0.1:0"])
        defer { node.stop() }
        func join(_ user: String, _ room: String) throws -> String {
            AttackProcessTests.code(try AttackProcessTests.ask(node.listen, AttackProcessTests.join(user, .teacher), room: room))
        }
        // One user: a burst of 10 (1 a second after), then rate-limited.
        var codes: [String: Int] = [:]
        for index in 0..<25 { codes[try join("zed", "zed-\(index)"), default: 0] += 1 }
        #expect(codes["join_response"] ?? 0 >= 10 && codes["join_response"] ?? 0 <= 12 && codes["rate-limited"] ?? 0 >= 13, "\(codes)")
        // Many users: the node's own budget (2 a second, a burst of 20) stops them together.
        codes = [:]
        for index in 0..<40 { codes[try join("u\(index)", "many-\(index)"), default: 0] += 1 }
        #expect(codes["join_response"] ?? 0 <= 12 && codes["rate-limited"] ?? 0 >= 28, "\(codes)")
        #expect((node.metric("homeroom_rooms") ?? 0) <= 26, "rooms: \(String(describing: node.metric("homeroom_rooms")))")
        // Joining a room that exists costs no creation.
        #expect(try join("zed", "zed-0") == "join_response")
    }
}
