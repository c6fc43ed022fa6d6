@preconcurrency import Glibc
import Foundation
import HomeroomCore
import HomeroomWire
import Testing
@testable import HomeroomNode

/// Token policy, replayed node messages, revocation while running, banned readers,
/// what a stranger's hello learns, and the store's file modes.
@Suite(.serialized) struct SecurityHardeningTests {
    func refusal(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch let error as ClientError { return error.code } catch { return "\(error)" }
    }

    @Test func tokensTooLongLivedExpiringBeforeIssueOrSpelledTwoWaysAreRefused() throws {
        let keys = SecurityTests.keys
        let verifier = TokenVerifier(publicKeys: [keys.publicKey], app: "homeroom-test")
        let now = Int64(WallClock.nowMillis() / 1000)
        func claims(issued: Int64, expires: Int64) -> TokenClaims {
            TokenClaims(app: "homeroom-test", room: "sec", user: "ann", role: .student, issuedAt: issued, expiresAt: expires)
        }
        let century = JoinToken.create(claims(issued: now, expires: now + 100 * 365 * 86_400), keys: keys)
        let backwards = JoinToken.create(claims(issued: now, expires: now - 10), keys: keys)
        let day = JoinToken.create(claims(issued: now, expires: now + 86_400), keys: keys)
        #expect(throws: TokenError.self) { try verifier.verify(century, room: "sec", nowSeconds: now) }
        do { _ = try verifier.verify(century, room: "sec", nowSeconds: now) } catch { #expect(error.code == "token-lifetime") }
        do { _ = try verifier.verify(backwards, room: "sec", nowSeconds: now) } catch { #expect(error.code == "token-lifetime") }
        #expect((try? verifier.verify(day, room: "sec", nowSeconds: now)) != nil, "a 24 h token is fine")
        // The signature's last character changed in its unused low bits decodes to the same
        // bytes: a second spelling of one token, refused.
        let last = day.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let index = alphabet.firstIndex(of: last)!
        let twin = String(day.dropLast()) + String(alphabet[index ^ 1])
        #expect(JoinToken.unbase64url(String(twin.split(separator: ".").last!)) == JoinToken.unbase64url(String(day.split(separator: ".").last!)),
                "the twin decodes to the same signature (else this test proves nothing)")
        do {
            _ = try verifier.verify(twin, room: "sec", nowSeconds: now)
            Issue.record("a second spelling of a token verified")
        } catch {
            #expect(error.code == "token-malformed")
        }
    }

    @Test func aReplayedSealedHeartbeatKeepsNoKilledNodeAlive() throws {
        let nodes = try SecurityTests.secureCluster(2, label: "replay")
        defer { for node in nodes { node.stop() } }
        #expect(eventually(10) { nodes.allSatisfy { $0.alivePeers.count == 1 } })
        // Record one of node 1's sealed heartbeats from its publish socket, as an outsider can.
        let sniffer = try Sniffer(nodes[1].publishAddress, topic: Topics.heartbeat)
        defer { sniffer.close() }
        #expect(eventually(5) { !sniffer.messages.isEmpty })
        let recorded = try #require(sniffer.messages.last)
        let victim = nodes[1].replica
        nodes[1].stop()
        // Replay it to node 0 every 50 ms from a PUB socket node 0 is made to subscribe to.
        let replayer = try SPPublisher()
        defer { replayer.close() }
        let replayAddress = try replayer.listen("tcp://127.0.0.1:0")
        _ = try nodes[0].subscriber.dial(replayAddress)
        var replays = 0
        let declaredDown = eventually(8) {
            try? replayer.send(recorded)
            replays += 1
            usleep(50_000)
            return !nodes[0].alivePeers.contains(victim)
        }
        #expect(declaredDown, "a replayed heartbeat kept a stopped node alive (\(replays) replays)")
        #expect((nodes[0].metrics.snapshot["cluster_rejected_total{reason=\"replay\"}"] ?? 0) > 0, "replays were not counted")
    }

    @Test func aRecordedHeartbeatOutsideTheTimeWindowIsRefusedByANodeThatNeverSawIt() throws {
        let nodes = try SecurityTests.secureCluster(1, label: "window")
        defer { for node in nodes { node.stop() } }
        let replayer = try SPPublisher()
        defer { replayer.close() }
        _ = try nodes[0].subscriber.dial(try replayer.listen("tcp://127.0.0.1:0"))
        let framing = ClusterFraming(key: SecurityTests.clusterKey)
        func heartbeat(_ name: String, sentAt: UInt64, sequence: UInt64) -> [UInt8] {
            let beat = WireMessage.Heartbeat(node: ReplicaID(name: name), incarnation: 1, address: "tcp://127.0.0.1:1",
                                             publishAddress: "tcp://127.0.0.1:2", sentAtMillis: sentAt)
            let envelope = WireEnvelope(roomID: "", sender: ReplicaID(name: name), sequence: sequence, clock: .zero, message: .heartbeat(beat))
            return Topics.heartbeat + framing.seal(WireCodec.encode(envelope))
        }
        let now = WallClock.nowMillis()
        // A recording from five minutes ago, never seen by this node: refused.
        var sequence: UInt64 = 0
        let refused = eventually(3) {
            sequence += 1
            try? replayer.send(heartbeat("ghost", sentAt: now - 300_000, sequence: sequence))
            usleep(50_000)
            return (nodes[0].metrics.snapshot["cluster_rejected_total{reason=\"replay\"}"] ?? 0) >= 3
        }
        #expect(refused, "old heartbeats were not counted as replays")
        #expect(!nodes[0].alivePeers.contains(ReplicaID(name: "ghost")), "an old recording made a node alive")
        // The same from a sender whose clock is current is believed (the test can tell).
        let believed = eventually(3) {
            sequence += 1
            try? replayer.send(heartbeat("fresh", sentAt: WallClock.nowMillis(), sequence: sequence))
            usleep(50_000)
            return nodes[0].alivePeers.contains(ReplicaID(name: "fresh"))
        }
        #expect(believed)
    }

    @Test func aUserAddedToTheRevokedFileLosesTheirSessionAndTheirTokenWhileTheNodeRuns() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("revoked-\(UInt32.random(in: 0...UInt32.max))").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("# nobody yet\n".utf8))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let nodes = try SecurityTests.secureCluster(1, label: "revfile") { config in config.revokedFile = path }
        defer { for node in nodes { node.stop() } }
        let teacher = SecurityTests.client("tina", .teacher, token: SecurityTests.token("tina", .teacher), node: nodes[0])
        let eve = SecurityTests.client("eve", .student, token: SecurityTests.token("eve", .student), node: nodes[0])
        defer { teacher.close(); eve.close() }
        try teacher.connect()
        try eve.connect()
        #expect(eventually(5) { teacher.replica.isOnline("eve") })
        try Data("# revoked\neve\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(eventually(5) { !teacher.replica.isOnline("eve") }, "eve's session outlived her revocation")
        let again = SecurityTests.client("eve", .student, token: SecurityTests.token("eve", .student), node: nodes[0])
        defer { again.close() }
        #expect(refusal { try again.connect() } == "token-revoked")
        #expect((nodes[0].metrics.snapshot["sessions_revoked_total"] ?? 0) >= 1)
    }

    @Test func aBannedUserCannotSyncOrDigestAndAStrangersHelloLearnsNoRooms() throws {
        let nodes = try SecurityTests.secureCluster(2, label: "ban")
        defer { for node in nodes { node.stop() } }
        #expect(eventually(10) { nodes.allSatisfy { $0.alivePeers.count == 1 } })
        let teacher = SecurityTests.client("tina", .teacher, token: SecurityTests.token("tina", .teacher), node: nodes[0])
        let eve = SecurityTests.client("eve", .student, token: SecurityTests.token("eve", .student), node: nodes[0])
        defer { teacher.close(); eve.close() }
        try teacher.connect()
        try eve.connect()
        _ = try teacher.write(.ban(user: "eve"))
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(nodes[0].listenAddress)
        func ask(_ message: WireMessage, credential: String?) throws -> WireEnvelope {
            let envelope = WireEnvelope(roomID: "sec", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        credential: credential.map { Array($0.utf8) } ?? [], message: message)
            return try WireCodec.decode(try requester.request(WireCodec.encode(envelope), timeout: .seconds(5)), limits: .largeReplies)
        }
        let token = SecurityTests.token("eve", .student)
        #expect(eventually(5) { nodes[0].room("sec")?.users["eve"]?.isBanned == true })
        for message in [WireMessage.syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "eve", session: "")), .digest(VersionVector())] {
            guard case let .error(error) = try ask(message, credential: token).message else {
                Issue.record("a banned user's \(message.kind) was answered")
                continue
            }
            #expect(error.code == "banned")
        }
        let hello = WireMessage.heartbeat(WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: ""))
        guard case let .heartbeat(stranger) = try ask(hello, credential: nil).message,
              case let .heartbeat(member) = try ask(hello, credential: SecurityTests.token("tina", .teacher)).message else {
            Issue.record("a hello was not answered with a heartbeat")
            return
        }
        #expect(stranger.rooms.isEmpty && stranger.peers.isEmpty && !stranger.publishAddress.isEmpty,
                "a tokenless hello learned \(stranger.rooms.count) rooms and \(stranger.peers.count) peers")
        #expect(member.rooms.isEmpty && member.peers.count == 1, "a member learns the other node (for failover), never the rooms")
    }

    @Test func aSyncFloodIsRateLimitedByCountAndBytesWhileOthersAreServed() throws {
        let nodes = try SecurityTests.secureCluster(1, label: "syncflood") { config in
            config.syncsPerSecond = 20
            config.syncBytesPerSecond = 32 << 10
        }
        defer { for node in nodes { node.stop() } }
        let teacher = SecurityTests.client("tina", .teacher, token: SecurityTests.token("tina", .teacher), node: nodes[0])
        defer { teacher.close() }
        try teacher.connect()
        for i in 0..<40 { _ = try teacher.write(.setRoomProperty(key: "k\(i)", value: [UInt8](repeating: 0x78, count: 1_000), cause: "fill")) }
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(nodes[0].listenAddress)
        func sync(_ user: String) throws -> WireMessage {
            let envelope = WireEnvelope(roomID: "sec", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        credential: Array(SecurityTests.token(user, user == "tina" ? .teacher : .student).utf8),
                                        message: .syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: user, session: "")))
            return try WireCodec.decode(try requester.request(WireCodec.encode(envelope), timeout: .seconds(5)), limits: .largeReplies).message
        }
        var answered = 0, limited = 0
        for _ in 0..<200 {
            switch try sync("eve") {
            case .syncResponse: answered += 1
            case let .error(error) where error.code == "rate-limited": limited += 1
            case let other: Issue.record("unexpected reply \(other.kind)")
            }
        }
        #expect(limited > 100, "a flood of full pulls was answered \(answered) times")
        #expect(answered >= 2, "the first pulls must be answered")
        guard case .syncResponse = try sync("tina") else {
            Issue.record("another user's sync was refused during the flood")
            return
        }
    }

    @Test func aTokenlessHelloFloodIsLimitedPerConnectionWhileAnotherConnectionIsAnswered() throws {
        let nodes = try SecurityTests.secureCluster(1, label: "helloflood")
        defer { for node in nodes { node.stop() } }
        let flooder = try SPRequester(), neighbour = try SPRequester()
        defer { flooder.close(); neighbour.close() }
        try flooder.dial(nodes[0].listenAddress)
        try neighbour.dial(nodes[0].listenAddress)
        let hello = WireCodec.encode(WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                                  message: .heartbeat(WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: ""))))
        func ask(_ requester: SPRequester) throws -> WireMessage {
            try WireCodec.decode(try requester.request(hello, timeout: .seconds(5)), limits: .largeReplies).message
        }
        var answered = 0, limited = 0
        for _ in 0..<200 {
            switch try ask(flooder) {
            case .heartbeat: answered += 1
            case let .error(error) where error.code == "rate-limited": limited += 1
            case let other: Issue.record("unexpected reply \(other.kind)")
            }
        }
        #expect(limited > 100, "a flood of hellos on one connection was answered \(answered) times")
        #expect(answered >= 20, "the first hellos (the burst) must be answered: \(answered)")
        guard case .heartbeat = try ask(neighbour) else {
            Issue.record("another connection's hello was refused during the flood")
            return
        }
    }

    @Test func theStoreIsPrivateWhateverItsModesWere() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modes-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        mkdir(directory, 0o755)
        chmod(directory, 0o755)
        _ = FileManager.default.createFile(atPath: directory + "/homeroom.sqlite3", contents: nil)
        chmod(directory + "/homeroom.sqlite3", 0o644)
        let (logger, _) = Logger.capturing(label: "modes", level: .error)
        var config = NodeConfig(name: "modes", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: [])
        config.dataDirectory = directory
        let node = try ClusterNode(config: config, logger: logger)
        _ = node.join(room: "m", user: "tina", role: .teacher, session: "t-1", name: "Tina")
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
        }
        #expect(mode(directory) == 0o700)
        for file in ["/homeroom.sqlite3", "/homeroom.sqlite3-wal", "/homeroom.sqlite3-shm"] where access(directory + file, F_OK) == 0 {
            #expect(mode(directory + file) == 0o600, "\(file) is \(String(mode(directory + file), radix: 8))")
        }
        node.stop()
    }
}
