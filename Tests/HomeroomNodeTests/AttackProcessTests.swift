@preconcurrency import Glibc
import Foundation
import HomeroomCore
import HomeroomTestSupport
import HomeroomWire
import Testing
@testable import HomeroomNode

/// The attack suite against real `homeroom node` processes run as docs/SECURITY.md says
/// (keys from `homeroom keys generate`, token key, cluster key, data directory): bad
/// tokens, forged and replayed node messages, floods of every request kind beside a
/// victim client, malformed frames at both sockets, file modes. Every attack must be
/// refused with its code and the victim must keep being served. (Outsider subscriptions
/// and removed users' keys: ClosedRoomProcessTests; network readers: TLSProcessTests.)
@Suite(.serialized) struct AttackProcessTests {
    final class Fortress {
        let directory: String
        let nodes: [NodeProcess]
        let signing: SigningKeys
        let framing: ClusterFraming

        init(_ label: String, count: Int = 1, dataDirectory: String? = nil) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-attack-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            guard let binary = NodeProcess.binary else { throw NodeProcessError("no homeroom binary: run `swift build` first") }
            let keys = Process()
            keys.executableURL = binary
            keys.arguments = ["keys", "generate", "--out", directory]
            keys.standardOutput = FileHandle.nullDevice
            keys.standardError = FileHandle.nullDevice
            try keys.run()
            keys.waitUntilExit()
            guard keys.terminationStatus == 0 else { throw NodeProcessError("homeroom keys generate failed") }
            signing = try SigningKeys(secret: KeyFiles.read(directory + "/token-signing.key", secret: true))
            framing = ClusterFraming(key: try ClusterKey(secret: KeyFiles.read(directory + "/cluster.key", secret: true)))
            var started: [NodeProcess] = []
            for index in 0..<count {
                var extra = ["--token-key", directory + "/token-signing.pub", "--cluster-key", directory + "/cluster.key",
                             "--http", "http://127.0.0.1:0", "--syncs-per-second", "20", "--joins-per-second", "20"]
                if index == 0, let dataDirectory { extra += ["--data-dir", dataDirectory] }
                started.append(try NodeProcess(name: "\(label)-\(index)", seeds: started.first.map { [$0.listen] } ?? [], extra: extra))
            }
            nodes = started
        }

        func token(_ user: String, _ role: Role, room: String = "fort", app: String = "homeroom", issued: Int64? = nil,
                   lifetime: Int64 = 3_600, keys: SigningKeys? = nil) -> String {
            let now = issued ?? Int64(WallClock.nowMillis() / 1000)
            return JoinToken.create(TokenClaims(app: app, room: room, user: user, role: role, issuedAt: now, expiresAt: now + lifetime), keys: keys ?? signing)
        }

        func victim(_ node: Int = 0) throws -> RoomClient {
            var options = RoomClient.Options()
            options.token = token("tina", .teacher)
            options.requestTimeoutMillis = 3_000
            let (logger, _) = Logger.capturing(label: "victim", level: .error)
            let client = RoomClient(room: "fort", user: "tina", role: .teacher, name: "Tina", endpoints: [NodeEndpoint(nodes[node].listen)],
                                    options: options, logger: logger)
            try client.connect()
            return client
        }

        func stop() {
            for node in nodes.reversed() { node.stop() }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// One request on its own REQ connection (or on `requester`), decoded.
    static func ask(_ address: String, _ message: WireMessage, room: String = "fort", credential: String? = nil,
                    sender: ReplicaID = ReplicaID(0), sequence: UInt64 = 0, seal: ClusterFraming? = nil,
                    on requester: SPRequester? = nil) throws -> WireMessage {
        let own = requester == nil ? try SPRequester() : nil
        defer { own?.close() }
        let socket = requester ?? own!
        if own != nil { try socket.dial(address) }
        let encoded = WireCodec.encode(WireEnvelope(roomID: room, sender: sender, sequence: sequence, clock: .zero,
                                                    credential: credential.map { Array($0.utf8) } ?? [], message: message))
        let reply = try socket.request(seal.map { $0.seal(encoded) } ?? encoded, timeout: .seconds(5))
        return try WireCodec.decode(reply, limits: .largeReplies).message
    }

    static func code(_ message: WireMessage) -> String {
        switch message {
        case let .error(error): return error.code
        case let .writeAck(ack): return ack.errorCode.isEmpty ? "\(ack.status)" : ack.errorCode
        default: return message.kind
        }
    }

    static func join(_ user: String, _ role: Role, session: String = "s1") -> WireMessage {
        .joinRequest(WireMessage.JoinRequest(user: user, role: role, session: session, name: user))
    }

    /// The victim's write is acknowledged, and its node still answers a hello.
    static func victimIsServed(_ victim: RoomClient, _ note: String) {
        do {
            _ = try victim.write(.setRoomProperty(key: "alive", value: Array(note.utf8), cause: "check"))
        } catch {
            Issue.record("the victim's write after \(note) failed: \(error)")
        }
    }

    @Test func everyBadTokenIsRefusedWithItsCodeAndTheVictimIsServed() throws {
        let fortress = try Fortress("tokens")
        defer { fortress.stop() }
        let victim = try fortress.victim()
        defer { victim.close() }
        let address = fortress.nodes[0].listen
        let now = Int64(WallClock.nowMillis() / 1000)
        let good = fortress.token("ann", .student)
        var flipped = Array(good.utf8)
        flipped[flipped.count - 1] = flipped.last == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let cases: [(String?, String, String)] = [
            (fortress.token("ann", .student, keys: SigningKeys.generate()), "token-forged", "signed by another key"),
            (String(decoding: flipped, as: UTF8.self), "token-forged|token-malformed", "last signature character changed"),
            (fortress.token("ann", .student, issued: now - 7_200, lifetime: 60), "token-expired", "expired"),
            (fortress.token("ann", .student, issued: now + 3_600), "token-not-yet-valid", "issued in the future"),
            (fortress.token("ann", .student, room: "other"), "token-wrong-room", "another room"),
            (fortress.token("ann", .student, app: "elsewhere"), "token-wrong-app", "another application"),
            (fortress.token("ann", .student, lifetime: 100 * 365 * 86_400), "token-lifetime", "a 100-year lifetime"),
            (fortress.token("ann", .student, issued: now, lifetime: -10), "token-lifetime", "expiry before issue"),
            // Times at the ends of Int64, signed with the real key (an issuer's bug): refused
            // before any arithmetic, and the node lives (it trapped on `exp - iat`).
            (fortress.token("ann", .student, issued: Int64.min, lifetime: 3_600), "token-lifetime", "iat of -2^63"),
            (fortress.token("ann", .student, issued: now, lifetime: Int64.max - now), "token-lifetime", "exp of 2^63-1"),
            (fortress.token("ann", .student, issued: -100, lifetime: 200), "token-lifetime", "iat before 1970"),
            (nil, "token-missing", "no token"),
            ("hr1.garbage", "token-malformed", "garbage"),
        ]
        for (token, expected, what) in cases {
            let refused = Self.code(try Self.ask(address, Self.join("ann", .student), credential: token))
            #expect(expected.split(separator: "|").contains(Substring(refused)), "\(what): \(refused), expected \(expected)")
        }
        // A valid student token used as the teacher, and a student's write of stage.
        #expect(Self.code(try Self.ask(address, Self.join("tina", .teacher), credential: good)) == "token-identity-mismatch")
        let escalation = WireMessage.writeRequest(WireMessage.WriteRequest(requestID: 1, write: Write(author: "ann", authorRole: .teacher, authorCounter: 1,
                                                                                                          operation: .setStage(user: "ann", on: true))))
        #expect(Self.code(try Self.ask(address, escalation, credential: good)) == "token-identity-mismatch")
        Self.victimIsServed(victim, "bad tokens")
    }

    /// A student's class token made a room per `<class>:<id>` join (200 in 0.3 s, so
    /// `--max-rooms` filled in seconds and the next class got `node-full`). Now it opens a
    /// group's room only while the teacher has that group live.
    @Test func aClassTokenCannotMakeRoomsAtWill() throws {
        let fortress = try Fortress("rooms")
        defer { fortress.stop() }
        let victim = try fortress.victim()
        defer { victim.close() }
        let address = fortress.nodes[0].listen
        let token = fortress.token("ann", .student)
        let before = fortress.nodes[0].metric("homeroom_rooms") ?? -1
        var codes: [String: Int] = [:]
        for index in 0..<200 {
            let code = Self.code(try Self.ask(address, Self.join("ann", .student, session: "s\(index)"), room: "fort:x\(index)", credential: token))
            codes[code, default: 0] += 1
        }
        #expect(codes == ["group-not-live": 200], "\(codes)")
        #expect(before >= 1 && fortress.nodes[0].metric("homeroom_rooms") == before, "rooms: \(before) before, \(String(describing: fortress.nodes[0].metric("homeroom_rooms"))) after")
        Self.victimIsServed(victim, "room creation")
    }

    @Test func forgedAndReplayedNodeMessagesAreRefusedAndCounted() throws {
        let fortress = try Fortress("nodes", count: 2)
        defer { fortress.stop() }
        let (first, second) = (fortress.nodes[0], fortress.nodes[1])
        #expect(ClosedWaiting.until(15) { (first.metric("homeroom_peers{status=\"alive\"}") ?? 0) >= 1 }, "the two nodes never met")
        let hello = WireMessage.heartbeat(WireMessage.Heartbeat(node: ReplicaID(name: "mallory"), incarnation: 1, address: "tcp://127.0.0.1:1"))
        // A node hello without the cluster key's seal, and one sealed with another key.
        #expect(Self.code(try Self.ask(first.listen, hello, room: "", sender: ReplicaID(name: "mallory"), sequence: 1)) == "cluster-auth-required")
        let stranger = ClusterFraming(key: try ClusterKey(secret: [UInt8](repeating: 7, count: 32)))
        let forged = Self.code(try Self.ask(first.listen, hello, room: "", sender: ReplicaID(name: "mallory"), sequence: 1, seal: stranger))
        #expect(forged != "heartbeat", "a hello sealed with another key was answered as a node's")

        // A sealed heartbeat recorded from the second node's publish socket, replayed to the first as a hello.
        let recorded = Recorder()
        let sniffer = try SPSubscriber { recorded.add($0) }
        defer { sniffer.close() }
        sniffer.subscribe(Topics.heartbeat)
        try sniffer.dial(second.publish)
        #expect(ClosedWaiting.until(5) { !recorded.all.isEmpty }, "no heartbeat recorded")
        let copy = try #require(recorded.all.first)
        // Three newer heartbeats of the second node recorded: the first node, subscribed to
        // the same socket, has heard this one (and fresher ones) by now.
        #expect(ClosedWaiting.until(10) { recorded.all.count >= 4 }, "the second node published no newer heartbeats")
        let replayer = try SPRequester()
        defer { replayer.close() }
        try replayer.dial(first.listen)
        let replies = try (0..<5).map { _ in try WireCodec.decode(replayer.request(Array(copy.dropFirst(Topics.heartbeat.count)), timeout: .seconds(5)), limits: .largeReplies).message }
        #expect(replies.allSatisfy { Self.code($0) == "stale" }, "replayed heartbeats answered: \(replies.map(Self.code))")
        #expect((first.metric("homeroom_cluster_rejected_total{reason=\"replay\"}") ?? 0) >= 5, "replays were not counted")
    }

    @Test func aWhisperReachesNobodyElseByAnyRoute() throws {
        let fortress = try Fortress("whispers")
        defer { fortress.stop() }
        let node = fortress.nodes[0]
        let tina = try fortress.victim()
        defer { tina.close() }
        let mallory = fortress.token("mallory", .student), bob = fortress.token("bob", .student)
        guard case let .joinResponse(joined) = try Self.ask(node.listen, Self.join("mallory", .student, session: "m1"), credential: mallory),
              let keys = joined.keys else {
            Issue.record("mallory could not join")
            return
        }
        guard case .joinResponse = try Self.ask(node.listen, Self.join("bob", .student, session: "b1"), credential: bob) else {
            Issue.record("bob could not join")
            return
        }
        // Mallory records bob's private topic and the room topic from the publish socket.
        let recorded = Recorder()
        let sniffer = try SPSubscriber { recorded.add($0) }
        defer { sniffer.close() }
        sniffer.subscribe(Topics.clientUser("fort", "bob"))
        sniffer.subscribe(Topics.clientRoom("fort"))
        try sniffer.dial(node.publish)
        let secret = "whisper-\(UInt32.random(in: 0...UInt32.max))"
        let bobsTopic = Topics.clientUser("fort", "bob")
        // The recorder's subscription takes a moment to reach the node: whisper (the same
        // secret) until one is recorded on bob's topic.
        #expect(ClosedWaiting.until(15) {
            _ = try? tina.sendPeer(to: "bob", Array(secret.utf8))
            return ClosedWaiting.until(0.5) { recorded.all.contains { $0.starts(with: bobsTopic) } }
        }, "nothing recorded on bob's private topic")
        let mine = [TopicKeyring.Key(id: keys.roomKeyID, secret: keys.roomKey), TopicKeyring.Key(id: keys.userKeyID, secret: keys.userKey)]
        for message in recorded.all {
            #expect(!ByteSearch.contains(message, secret), "a whisper in clear on the publish socket")
            guard let (_, payload) = Topics.split(message), case let .opened(plain) = TopicSeal.open(payload, topic: message[..<payload.startIndex], keys: mine) else { continue }
            #expect(!ByteSearch.contains(plain, secret), "mallory's keys opened bob's whisper")
        }
        // Her own sync and digest carry none of it; a sync naming bob is refused.
        let sync = WireEnvelope(roomID: "fort", sender: ReplicaID(0), sequence: 0, clock: .zero, credential: Array(mallory.utf8),
                                message: .syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "mallory", session: "m1")))
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(node.listen)
        let reply = try requester.request(WireCodec.encode(sync), timeout: .seconds(5))
        #expect(!ByteSearch.contains(reply, secret), "mallory's sync carried bob's whisper")
        let asBob = WireMessage.syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "bob", session: "m1"))
        #expect(Self.code(try Self.ask(node.listen, asBob, credential: mallory)) == "token-identity-mismatch")
        // Bob's own sync does carry it: the check above can fail.
        let bobsSync = WireEnvelope(roomID: "fort", sender: ReplicaID(0), sequence: 0, clock: .zero, credential: Array(bob.utf8),
                                    message: .syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "bob", session: "b1")))
        #expect(ByteSearch.contains(try requester.request(WireCodec.encode(bobsSync), timeout: .seconds(5)), secret), "bob's own sync lacks his whisper")
    }

    @Test func floodsOfEveryRequestKindAreRateLimitedWhileTheVictimIsServed() throws {
        let fortress = try Fortress("floods")
        defer { fortress.stop() }
        let victim = try fortress.victim()
        defer { victim.close() }
        let address = fortress.nodes[0].listen
        let mallory = fortress.token("mallory", .student)
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(address)
        let write = { (counter: UInt64) in
            WireMessage.writeRequest(WireMessage.WriteRequest(requestID: counter, write: Write(author: "mallory", authorRole: .student, authorCounter: counter,
                                                                                               operation: .setHand(user: "mallory", raised: counter % 2 == 0))))
        }
        _ = try Self.ask(address, Self.join("mallory", .student, session: "m0"), credential: mallory, on: requester)
        let kinds: [(String, (Int) -> WireMessage, String?)] = [
            ("hello", { _ in .heartbeat(WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: "")) }, nil),
            ("join", { i in Self.join("mallory", .student, session: "m\(i + 1)") }, mallory),
            ("sync", { _ in .syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "mallory", session: "m0")) }, mallory),
            ("digest", { _ in .digest(VersionVector()) }, mallory),
            ("write", { i in write(UInt64(i + 1) + 1_000_000) }, mallory),
        ]
        for (kind, message, credential) in kinds {
            var limited = 0
            for i in 0..<300 where Self.code(try Self.ask(address, message(i), credential: credential, on: requester)) == "rate-limited" { limited += 1 }
            #expect(limited > 100, "a \(kind) flood of 300 was limited only \(limited) times")
            Self.victimIsServed(victim, "a \(kind) flood")
        }
    }

    /// Issue 39: lock names are never freed, so one student acquiring and releasing 32
    /// names in a tenth of a second shut the room out of new locks for its life, and the
    /// teacher's `exam` lock was refused `limit-reached`. Now each student adds a few
    /// names, the students together leave the last ones to moderators, and the teacher
    /// (the victim) still gets `exam`.
    @Test func studentsChurningLockNamesLeaveTheTeacherItsExamLock() throws {
        let fortress = try Fortress("locks")
        defer { fortress.stop() }
        let victim = try fortress.victim()
        defer { victim.close() }
        let address = fortress.nodes[0].listen
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(address)
        var counter: UInt64 = 0
        func write(_ user: String, _ token: String, _ operation: HomeroomCore.Operation) throws -> String {
            counter += 1
            let request = WireMessage.writeRequest(WireMessage.WriteRequest(requestID: counter, write: Write(author: user, authorRole: .student,
                                                                                                              authorCounter: counter, operation: operation)))
            return Self.code(try Self.ask(address, request, credential: token, on: requester))
        }
        var made: [String: Int] = [:]
        var refusals: [String] = []
        for index in 0..<8 {
            let user = "mallory\(index)"
            let token = fortress.token(user, .student)
            #expect(Self.code(try Self.ask(address, Self.join(user, .student), credential: token, on: requester)) == "join_response")
            // Each tries to take every name there is, as fast as the node answers.
            for name in 0...Locks.maxPerRoom {
                let lock = "\(user)-\(name)"
                let acquired = try write(user, token, .acquireLock(name: lock, ttlSeconds: 10))
                guard acquired == "accepted" else { refusals.append(acquired); break }
                #expect(try write(user, token, .releaseLock(name: lock, revoke: false)) == "accepted")
                made[user, default: 0] += 1
            }
        }
        #expect(made["mallory0"] == Locks.maxNamesPerUser && made.values.reduce(0, +) == Locks.maxPerRoom - Locks.reservedForModerators, "\(made)")
        #expect(refusals == Array(repeating: "limit-reached", count: 8), "\(refusals)")
        let exam = try victim.acquireLock("exam", ttlSeconds: 60)
        #expect(exam.fence > 0)
        Self.victimIsServed(victim, "lock names churned")
    }

    @Test func malformedFramesAtBothSocketsCostNothingAndTheStoreIsPrivate() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-attack-store-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        // A data directory and store left world-readable by someone else.
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        FileManager.default.createFile(atPath: data + "/homeroom.sqlite3", contents: nil, attributes: [.posixPermissions: 0o644])
        let fortress = try Fortress("frames", dataDirectory: data)
        defer { fortress.stop() }
        let node = fortress.nodes[0]
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
        }
        #expect(mode(data) == 0o700 && mode(data + "/homeroom.sqlite3") == 0o600, "modes \(String(mode(data), radix: 8)) / \(String(mode(data + "/homeroom.sqlite3"), radix: 8))")
        let victim = try fortress.victim()
        defer { victim.close() }
        let baseline = node.descriptors
        let ports = [node.listen, node.publish].compactMap { UInt16($0.split(separator: ":").last ?? "") }
        #expect(ports.count == 2)
        let req = RawConnection.header(0x30), sub = RawConnection.header(0x21)
        let attacks: [(String, [UInt8])] = [
            ("garbage", Array("GET /metrics HTTP/1.1\r\n\r\n".utf8)),
            ("a wrong SP header", RawConnection.header(0x50)),
            ("a 10 GiB length", req + [0, 0, 0, 2, 0x80, 0, 0, 0]),
            ("a truncated frame", req + RawConnection.frame(Array(repeating: 0xAB, count: 64)).dropLast(10)),
            ("a frame that is not an envelope", req + RawConnection.frame(RawConnection.requestID(1) + [0xFF, 0xFF, 0xFF, 0x01])),
            ("a subscriber that talks", sub + RawConnection.frame(Array("hello?".utf8))),
        ]
        for port in ports {
            for (what, bytes) in attacks {
                for _ in 0..<5 {
                    guard let raw = RawConnection(port: port) else { Issue.record("cannot connect to \(port) for \(what)"); continue }
                    raw.write(bytes)
                    raw.close()
                }
            }
        }
        Self.victimIsServed(victim, "malformed frames")
        #expect(ClosedWaiting.until(10) { node.descriptors <= baseline + 2 }, "descriptors: \(baseline) before, \(node.descriptors) after")
        #expect(node.process.isRunning)
    }
}

/// What a subscriber received.
final class Recorder: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [[UInt8]] = []
    func add(_ message: [UInt8]) { lock.lock(); messages.append(message); lock.unlock() }
    var all: [[UInt8]] { lock.lock(); defer { lock.unlock() }; return messages }
}

enum ClosedWaiting {
    static func until(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(50_000)
        }
        return condition()
    }
}

enum ByteSearch {
    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let bytes = Array(needle.utf8)
        guard !bytes.isEmpty, haystack.count >= bytes.count else { return false }
        for start in 0...(haystack.count - bytes.count) where haystack[start] == bytes[0] && haystack[start..<(start + bytes.count)].elementsEqual(bytes) {
            return true
        }
        return false
    }
}
