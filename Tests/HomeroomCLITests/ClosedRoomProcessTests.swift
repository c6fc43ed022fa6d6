import Foundation
import HomeroomCore
import HomeroomTestSupport
import Synchronization
import Testing
@testable import HomeroomNode

/// Closed rooms with real `homeroom node` processes run as docs/SECURITY.md says (token
/// key, cluster key, revoked file): a stranger subscribed to everything on both publish
/// sockets reads no class content; a banned or revoked user's keys open nothing
/// published after the removal, while the remaining members keep receiving.
@Suite(.serialized) struct ClosedRoomProcessTests {
    /// Two nodes with the keys `homeroom keys generate` makes, and a revoked file.
    final class SecuredCluster {
        let directory: String
        let revoked: String
        let first: NodeChild
        let second: NodeChild

        init(label: String) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            revoked = directory + "/revoked.txt"
            FileManager.default.createFile(atPath: revoked, contents: Data("# revoked users\n".utf8))
            let generated = try CLI.run(["keys", "generate", "--out", directory])
            guard generated.status == 0 else { throw NodeProcessError("keys generate: \(generated.stderr)") }
            let secure = ["--token-key", directory + "/token-signing.pub", "--cluster-key", directory + "/cluster.key", "--revoked", revoked,
                          "--http", "http://127.0.0.1:0"]
            first = try NodeChild(name: "\(label)-1", extra: secure)
            second = try NodeChild(name: "\(label)-2", seeds: [first.listen], extra: secure)
        }

        func token(_ user: String, _ role: String, room: String) throws -> String {
            let made = try CLI.run(["token", "create", "--key", directory + "/token-signing.key", "--room", room, "--user", user, "--role", role])
            guard made.status == 0 else { throw NodeProcessError("token create: \(made.stderr)") }
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// A client with a token; a long sync interval, so what it receives comes from the
        /// sealed live stream (and the syncs that fetch new keys), not from periodic pulls.
        func client(_ user: String, _ role: Role, room: String, through node: NodeChild) throws -> RoomClient {
            var options = RoomClient.Options()
            options.token = try token(user, role == .teacher ? "teacher" : "student", room: room)
            options.syncIntervalMillis = 30_000
            options.requestTimeoutMillis = 2_000
            let (logger, _) = Logger.capturing(label: user, level: .error)
            return RoomClient(room: room, user: user, role: role, name: user.capitalized, endpoints: [NodeEndpoint(node.listen)],
                              options: options, logger: logger)
        }

        func stop() {
            second.stop()
            first.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Everything a raw SP subscriber gets from a publish address (subscribed to every topic).
    final class Eavesdropper: @unchecked Sendable {
        final class Received: Sendable {
            let messages = Mutex<[[UInt8]]>([])
        }
        private let box = Received()
        private var subscribers: [SPSubscriber] = []

        init(topics: [[UInt8]] = [[]], addresses: [String]) throws {
            for address in addresses {
                let subscriber = try SPSubscriber { [box] message in box.messages.withLock { $0.append(message) } }
                for topic in topics { subscriber.subscribe(topic) }
                try subscriber.dial(address)
                subscribers.append(subscriber)
            }
        }

        var messages: [[UInt8]] { box.messages.withLock { $0 } }
        func clear() { box.messages.withLock { $0.removeAll() } }
        func close() { for subscriber in subscribers { subscriber.close() } }
    }

    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let bytes = Array(needle.utf8)
        guard haystack.count >= bytes.count else { return false }
        for start in 0...(haystack.count - bytes.count) where haystack[start..<(start + bytes.count)].elementsEqual(bytes) { return true }
        return false
    }

    static func text(_ client: RoomClient) -> [String] { client.history.map { String(decoding: $0.payload, as: UTF8.self) } }

    @Test func aStrangerOnBothPublishSocketsReadsNoClassContentAndNodesSpeakOnlyCiphertext() throws {
        let cluster = try SecuredCluster(label: "closed-eaves")
        defer { cluster.stop() }
        let stranger = try Eavesdropper(addresses: [cluster.first.publish, cluster.second.publish])
        defer { stranger.close() }
        let room = "chem-9"
        let tina = try cluster.client("tina", .teacher, room: room, through: cluster.first)
        let bob = try cluster.client("bob", .student, room: room, through: cluster.second)
        defer { bob.close(); tina.close() }
        try tina.connect()
        try bob.connect()

        let chat = "platypus-\(UInt32.random(in: 0...UInt32.max))", whisper = "wombat-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tina.send(Array(chat.utf8))
        _ = try bob.sendPeer(to: "tina", Array(whisper.utf8))
        _ = try bob.write(.setHand(user: "bob", raised: true))
        // The members read it all, across the two nodes, from the sealed stream.
        #expect(Self.waitUntil(10) { Self.text(bob).contains(chat) && Self.text(tina).contains(whisper) },
                "bob has \(Self.text(bob)), tina has \(Self.text(tina))")
        #expect(Self.waitUntil(10) { tina.roster.raisedHands == ["bob"] }, "tina never saw bob's hand")

        // The stranger got traffic of every kind (heartbeats come every 100 ms), and none of it in clear.
        #expect(Self.waitUntil(5) { stranger.messages.contains { $0.first == Topics.heartbeat[0] } }, "no heartbeat seen")
        let messages = stranger.messages
        var kinds: [UInt8: Int] = [:]
        for message in messages {
            guard let (kind, payload) = Topics.split(message) else { continue }
            kinds[kind, default: 0] += 1
            #expect(!Self.contains(message, chat) && !Self.contains(message, whisper), "a secret in clear on topic kind \(kind)")
            let magic = kind == 0 || kind == Topics.privateKind ? "HRE1" : "HRX1"
            #expect(payload.prefix(4).elementsEqual(Array(magic.utf8)), "topic kind \(kind) not sealed: \(Array(payload.prefix(8)))")
        }
        #expect(kinds[0, default: 0] > 0 && kinds[Topics.privateKind, default: 0] > 0, "no client traffic seen: \(kinds)")
        #expect(kinds[1, default: 0] > 0 && kinds[2, default: 0] > 0, "no node traffic seen: \(kinds)")
        // Nor can it open a room message with a key of its own making.
        let guess = TopicKeyring().roomKey(room, epoch: 0)
        let roomMessages = messages.compactMap { message -> (ArraySlice<UInt8>, ArraySlice<UInt8>)? in
            guard let (kind, payload) = Topics.split(message), kind == 0 else { return nil }
            return (message[..<payload.startIndex], payload)
        }
        #expect(roomMessages.allSatisfy { TopicSeal.open($0.1, topic: $0.0, keys: [guess]) == .unknownKey })
    }

    @Test func aBannedOrRevokedUsersKeysOpenNothingPublishedAfterwardsWhileTheOthersReadOn() throws {
        let cluster = try SecuredCluster(label: "closed-ban")
        defer { cluster.stop() }
        let room = "hist-3"
        let tina = try cluster.client("tina", .teacher, room: room, through: cluster.first)
        let carol = try cluster.client("carol", .student, room: room, through: cluster.second)
        let bob = try cluster.client("bob", .student, room: room, through: cluster.second)
        let dan = try cluster.client("dan", .student, room: room, through: cluster.second)
        defer { for client in [dan, bob, carol, tina] { client.close() } }
        for client in [tina, carol, bob, dan] { try client.connect() }
        // A copy of the room topic from node 2, as bob or dan could keep recording it.
        let recorder = try Eavesdropper(topics: [Topics.clientRoom(room)], addresses: [cluster.second.publish])
        defer { recorder.close() }
        let before = "before-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tina.send(Array(before.utf8))
        #expect(Self.waitUntil(10) { [bob, dan, carol].allSatisfy { Self.text($0).contains(before) } })
        func keys(_ client: RoomClient) throws -> TopicKeyring.Key {
            let keys = try #require(client.state.withLock { $0.topicKeys }, "no topic keys")
            return TopicKeyring.Key(id: keys.roomKeyID, secret: keys.roomKey)
        }
        func opens(_ key: TopicKeyring.Key, _ text: String) -> Bool {
            recorder.messages.contains { message in
                guard let (_, payload) = Topics.split(message),
                      case let .opened(plain) = TopicSeal.open(payload, topic: message[..<payload.startIndex], keys: [key]) else { return false }
                return Self.contains(plain, text)
            }
        }
        let bobsKey = try keys(bob), dansKey = try keys(dan)
        // The recording with bob's key opens what was said while he was a member.
        #expect(Self.waitUntil(5) { opens(bobsKey, before) }, "bob's key never opened the room's messages")

        // The teacher (on node 1) bans bob; dan is revoked in the file both nodes read.
        _ = try tina.write(.ban(user: "bob"))
        try Data("dan\n".utf8).write(to: URL(fileURLWithPath: cluster.revoked))
        #expect(Self.waitUntil(10) { (cluster.second.metric("homeroom_sessions_revoked_total") ?? 0) >= 1 }, "dan's session did not end")
        #expect(Self.waitUntil(10) { carol.replica.users["bob"]?.isBanned == true }, "carol never saw bob's ban")
        recorder.clear()
        let after = "after-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tina.send(Array(after.utf8))
        // Carol, still a member, reads it through node 2's new keys.
        #expect(Self.waitUntil(10) { Self.text(carol).contains(after) }, "carol has \(Self.text(carol))")
        #expect(Self.waitUntil(5) { opens(try! keys(carol), after) }, "the recording never carried the message")
        #expect(!opens(bobsKey, after), "bob's old key opened a message sent after his ban")
        #expect(!opens(dansKey, after), "dan's old key opened a message sent after his revocation")
        #expect(!Self.text(bob).contains(after) && !Self.text(dan).contains(after))
        #expect((cluster.second.metric("homeroom_topic_key_rotations_total") ?? 0) >= 2)
        // The removed users' clients learn it (the sync their new-key message asks for is
        // refused) and stop for good: no retries, no revival.
        #expect(Self.waitUntil(10) { bob.finalRefusal == "banned" }, "bob's client: \(String(describing: bob.finalRefusal))")
        #expect(Self.waitUntil(10) { dan.finalRefusal == "token-revoked" }, "dan's client: \(String(describing: dan.finalRefusal))")
        #expect(bob.connectionState == .aborted && dan.connectionState == .aborted)
        #expect(carol.finalRefusal == nil && carol.connectionState == .connected)
    }

    /// Keys follow group membership (issue 39): a student banned in the main room, and
    /// one moved to another group, keep keys of their old group's room that open nothing
    /// it says afterwards, while a member still in the group reads on.
    @Test func aBanOrAMoveInTheMainRoomLeavesTheOldGroupKeyOpeningNothingNew() throws {
        let cluster = try SecuredCluster(label: "closed-groups")
        defer { cluster.stop() }
        let room = "grp-7", group = Breakout.roomID(of: "g1", in: "grp-7")
        func groupClient(_ user: String, _ role: Role) throws -> RoomClient {
            var options = RoomClient.Options()
            options.token = try cluster.token(user, role == .teacher ? "teacher" : "student", room: room)
            options.syncIntervalMillis = 30_000
            options.requestTimeoutMillis = 2_000
            let (logger, _) = Logger.capturing(label: user, level: .error)
            return RoomClient(room: group, user: user, role: role, name: user.capitalized, endpoints: [NodeEndpoint(cluster.second.listen)],
                              options: options, logger: logger)
        }
        let tina = try cluster.client("tina", .teacher, room: room, through: cluster.first)
        // The students join the class first: only a member is assigned a group.
        let inClass = try ["bob", "dan", "erin"].map { try cluster.client($0, .student, room: room, through: cluster.first) }
        defer { for client in inClass + [tina] { client.close() } }
        for client in [tina] + inClass { try client.connect() }
        for operation: HomeroomCore.Operation in [.setRoomType(.smallClassroom), .setBreakoutGroup(id: "g1", name: "One"),
                                                  .setBreakoutGroup(id: "g2", name: "Two"), .assignBreakoutGroup(user: "bob", group: "g1"),
                                                  .assignBreakoutGroup(user: "dan", group: "g1"), .assignBreakoutGroup(user: "erin", group: "g1")] {
            _ = try tina.write(operation)
        }
        let tinaInGroup = try groupClient("tina", .teacher)
        let bob = try groupClient("bob", .student), dan = try groupClient("dan", .student), erin = try groupClient("erin", .student)
        defer { for client in [erin, dan, bob, tinaInGroup] { client.close() } }
        // The assignments reach node 2 before the students come to their group's room.
        for client in [tinaInGroup, bob, dan, erin] {
            #expect(Self.waitUntil(10) { (try? client.connect()) != nil }, "\(client.user) could not join the group's room")
        }
        let recorder = try Eavesdropper(topics: [Topics.clientRoom(group)], addresses: [cluster.second.publish])
        defer { recorder.close() }
        func key(_ client: RoomClient) throws -> TopicKeyring.Key {
            let keys = try #require(client.state.withLock { $0.topicKeys }, "no topic keys")
            return TopicKeyring.Key(id: keys.roomKeyID, secret: keys.roomKey)
        }
        func opens(_ key: TopicKeyring.Key, _ text: String) -> Bool {
            recorder.messages.contains { message in
                guard let (_, payload) = Topics.split(message),
                      case let .opened(plain) = TopicSeal.open(payload, topic: message[..<payload.startIndex], keys: [key]) else { return false }
                return Self.contains(plain, text)
            }
        }
        let bobsKey = try key(bob), dansKey = try key(dan)
        // The recorder's subscription takes a moment to reach the node: send until it records one.
        #expect(Self.waitUntil(15) {
            let before = "before-\(UInt32.random(in: 0...UInt32.max))"
            _ = try? tinaInGroup.send(Array(before.utf8))
            return Self.waitUntil(1) { opens(bobsKey, before) && opens(dansKey, before) }
        }, "the members' keys never opened the group's messages")
        let rotationsBefore = cluster.second.metric("homeroom_topic_key_rotations_total") ?? 0
        // In the main room, on node 1: bob is banned, dan moves to g2.
        _ = try tina.write(.ban(user: "bob"))
        _ = try tina.write(.assignBreakoutGroup(user: "dan", group: "g2"))
        #expect(Self.waitUntil(10) { (cluster.second.metric("homeroom_topic_key_rotations_total") ?? 0) >= rotationsBefore + 2 },
                "node 2 did not rotate the group's keys on the ban and the move")
        recorder.clear()
        let after = "after-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tinaInGroup.send(Array(after.utf8))
        #expect(Self.waitUntil(10) { Self.text(erin).contains(after) }, "erin, still in g1, never read it: \(Self.text(erin))")
        #expect(Self.waitUntil(5) { opens(try! key(erin), after) }, "the recording never carried the message")
        #expect(!opens(bobsKey, after), "bob's group key opened a message sent after his ban")
        #expect(!opens(dansKey, after), "dan's g1 key opened a message sent after he moved to g2")
        #expect(!Self.text(bob).contains(after) && !Self.text(dan).contains(after))
    }

    @Test func anExpiredTokensKeysOpenNothingPublishedAfterItIsRefused() throws {
        let cluster = try SecuredCluster(label: "closed-expiry")
        defer { cluster.stop() }
        let room = "geo-5"
        let made = try CLI.run(["token", "create", "--key", cluster.directory + "/token-signing.key", "--room", room, "--user", "ed",
                                "--role", "student", "--ttl", "2"])
        #expect(made.status == 0)
        var options = RoomClient.Options()
        options.token = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        options.syncIntervalMillis = 30_000
        let (logger, _) = Logger.capturing(label: "ed", level: .error)
        let ed = RoomClient(room: room, user: "ed", role: .student, name: "Ed", endpoints: [NodeEndpoint(cluster.first.listen)], options: options, logger: logger)
        let tina = try cluster.client("tina", .teacher, room: room, through: cluster.first)
        let carol = try cluster.client("carol", .student, room: room, through: cluster.first)
        defer { for client in [ed, carol, tina] { client.close() } }
        for client in [tina, carol, ed] { try client.connect() }
        let recorder = try Eavesdropper(topics: [Topics.clientRoom(room)], addresses: [cluster.first.publish])
        defer { recorder.close() }
        func key(_ client: RoomClient) throws -> TopicKeyring.Key {
            let keys = try #require(client.state.withLock { $0.topicKeys }, "no topic keys")
            return TopicKeyring.Key(id: keys.roomKeyID, secret: keys.roomKey)
        }
        func opens(_ key: TopicKeyring.Key, _ text: String) -> Bool {
            recorder.messages.contains { message in
                guard let (_, payload) = Topics.split(message),
                      case let .opened(plain) = TopicSeal.open(payload, topic: message[..<payload.startIndex], keys: [key]) else { return false }
                return Self.contains(plain, text)
            }
        }
        let edsKey = try key(ed)
        // The recorder's subscription takes a moment to reach the node: send until it records one.
        #expect(Self.waitUntil(15) {
            let before = "before-\(UInt32.random(in: 0...UInt32.max))"
            _ = try? tina.send(Array(before.utf8))
            return Self.waitUntil(1) { opens(edsKey, before) }
        }, "ed's key never opened the room's messages")
        // The token is refused 30 s (the clock leeway) after it expires; then the keys rotate.
        #expect(Self.waitUntil(60) { (cluster.first.metric("homeroom_topic_key_expiry_rotations_total") ?? 0) >= 1 }, "the keys never rotated")
        recorder.clear()
        let after = "after-\(UInt32.random(in: 0...UInt32.max))"
        _ = try tina.send(Array(after.utf8))
        #expect(Self.waitUntil(10) { Self.text(carol).contains(after) }, "carol (a valid token) never read it: \(Self.text(carol))")
        #expect(Self.waitUntil(5) { opens(try! key(carol), after) }, "the recording never carried the message")
        #expect(!opens(edsKey, after), "the expired token's key opened a message sent after it was refused")
        #expect(!Self.text(ed).contains(after))
        // One rotation per expiry, not one a second: carol's syncs do not bring it back.
        sleep(3)
        #expect((cluster.first.metric("homeroom_topic_key_expiry_rotations_total") ?? 0) == 1)
    }

    @Test func aStudentBannedInAClosedRoomSeesItAndTheirJoinEnds() throws {
        let cluster = try SecuredCluster(label: "closed-cli-ban")
        defer { cluster.stop() }
        let student = try TerminalSession(["join", "--token", try cluster.token("bob", "student", room: "geo-4"), "--node", cluster.second.listen])
        #expect(student.waitFor("geo-4 bob (student)> "), "\(student.shown)")
        student.send("hand up\n")
        #expect(student.waitFor("ok: your hand is up"), "\(student.shown)")
        // The teacher bans bob through the other node.
        let ban = try CLI.run(["ban", "bob", "--token", try cluster.token("tina", "teacher", room: "geo-4"), "--node", cluster.first.listen])
        #expect(ban.status == 0, "\(ban.stderr)")
        // Bob's client cannot open what follows (new keys), its sync is refused, and the session ends.
        #expect(student.waitFor("banned", timeout: 15), "\(student.shown.suffix(400))")
        #expect(student.waitForExit(timeout: 15) == 1)
        #expect(student.shown.contains("Error: you were removed from room geo-4"), "\(student.shown.suffix(400))")
    }
}
