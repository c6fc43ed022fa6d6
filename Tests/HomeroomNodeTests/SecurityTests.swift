import Foundation
import Synchronization
import HomeroomCore
import HomeroomWire
import Testing
@testable import HomeroomNode

/// One test per attack, against in-process nodes on loopback.
@Suite(.serialized) struct SecurityTests {
    static let keys = SigningKeys.generate()
    static let clusterKey = ClusterKey.generate()

    static func token(_ user: String, _ role: Role, room: String = "sec", app: String = "homeroom-test",
                      issued: Int64 = Int64(WallClock.nowMillis() / 1000), lifetime: Int64 = 3600, keys: SigningKeys = SecurityTests.keys) -> String {
        JoinToken.create(TokenClaims(app: app, room: room, user: user, role: role, issuedAt: issued, expiresAt: issued + lifetime), keys: keys)
    }

    static func secureCluster(_ size: Int, label: String, configure: (inout NodeConfig) -> Void = { _ in }) throws -> [ClusterNode] {
        let (logger, _) = Logger.capturing(label: label, level: .error)
        var nodes: [ClusterNode] = []
        for index in 0..<size {
            var config = NodeConfig(name: "\(label)-\(index)", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0",
                                    seeds: nodes.first.map { [$0.listenAddress] } ?? [])
            config.heartbeatMillis = 50
            config.suspectMillis = 300
            config.downMillis = 1_000
            config.tokenVerifier = TokenVerifier(publicKeys: [keys.publicKey], app: "homeroom-test")
            config.clusterKey = clusterKey
            configure(&config)
            nodes.append(try ClusterNode(config: config, logger: logger))
        }
        return nodes
    }

    static func client(_ user: String, _ role: Role, token: String?, node: ClusterNode, room: String = "sec") -> RoomClient {
        var options = RoomClient.Options()
        options.token = token
        options.requestTimeoutMillis = 500
        options.syncIntervalMillis = 100
        let (logger, _) = Logger.capturing(label: user, level: .error)
        return RoomClient(room: room, user: user, role: role, name: user, endpoints: [NodeEndpoint(node.listenAddress)], options: options, logger: logger)
    }

    func refusal(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch let error as ClientError { return error.code } catch { return "\(error)" }
    }

    @Test func forgedExpiredFutureWrongRoomWrongAppAndMissingTokensAreRefused() throws {
        let nodes = try Self.secureCluster(1, label: "tok")
        defer { for node in nodes { node.stop() } }
        let forger = SigningKeys.generate()
        let now = Int64(WallClock.nowMillis() / 1000)
        let cases: [(String?, String)] = [
            (Self.token("ann", .student, keys: forger), "token-forged"),
            (Self.token("ann", .student, issued: now - 7200, lifetime: 60), "token-expired"),
            (Self.token("ann", .student, issued: now + 3600), "token-not-yet-valid"),
            (Self.token("ann", .student, room: "other"), "token-wrong-room"),
            (Self.token("ann", .student, app: "someone-else"), "token-wrong-app"),
            (nil, "token-missing"),
            ("hr1.garbage", "token-malformed"),
        ]
        for (token, code) in cases {
            let client = Self.client("ann", .student, token: token, node: nodes[0])
            defer { client.close() }
            #expect(refusal { try client.connect() } == code)
        }
        let good = Self.client("ann", .student, token: Self.token("ann", .student), node: nodes[0])
        defer { good.close() }
        try good.connect()
        #expect(good.connectionState == .connected)
    }

    /// A class's token opens its breakout groups' rooms (`sec:g1`), and no other room.
    @Test func aClassTokenOpensItsGroupRoomsOnly() throws {
        let nodes = try Self.secureCluster(1, label: "tok-groups")
        defer { for node in nodes { node.stop() } }
        let token = Self.token("ann", .student)
        // No group meets yet: the class token opens no group's room (it would make one).
        for (room, code) in [("sec:g1", "group-not-live"), ("sec:g1:g2", "token-wrong-room"), ("secx:g1", "token-wrong-room"), ("sec:Bad", "token-wrong-room"),
                             ("other:g1", "token-wrong-room")] as [(String, String?)] {
            let client = Self.client("ann", .student, token: token, node: nodes[0], room: room)
            defer { client.close() }
            #expect(refusal { try client.connect() } == code, "\(room)")
        }
        // Once the class has live groups, a student's token opens only its own group's room.
        let teacher = Self.client("tia", .teacher, token: Self.token("tia", .teacher), node: nodes[0])
        let student = Self.client("ann", .student, token: token, node: nodes[0])
        defer { teacher.close(); student.close() }
        try teacher.connect()
        try student.connect()
        for operation: HomeroomCore.Operation in [.setBreakoutGroup(id: "g1", name: "One"), .setBreakoutGroup(id: "g2", name: "Two"),
                                     .assignBreakoutGroup(user: "ann", group: "g1")] {
            _ = try teacher.write(operation)
        }
        for (room, code) in [("sec:g1", nil), ("sec:g2", "not-in-group")] as [(String, String?)] {
            let client = Self.client("ann", .student, token: token, node: nodes[0], room: room)
            defer { client.close() }
            #expect(refusal { try client.connect() } == code, "\(room)")
        }
        let visit = Self.client("tia", .teacher, token: Self.token("tia", .teacher), node: nodes[0], room: "sec:g2")
        defer { visit.close() }
        try visit.connect()
        // A group id the teacher never made, and every group once they end: refused to
        // student and teacher alike; a token issued for the group's room itself opens it.
        _ = try teacher.write(.endBreakout)
        for (user, role, room) in [("ann", Role.student, "sec:zz9"), ("ann", .student, "sec:g1"), ("tia", .teacher, "sec:g2")] {
            let client = Self.client(user, role, token: Self.token(user, role), node: nodes[0], room: room)
            defer { client.close() }
            #expect(refusal { try client.connect() } == "group-not-live", "\(user) in \(room)")
        }
        let granted = Self.client("ann", .student, token: Self.token("ann", .student, room: "sec:g1"), node: nodes[0], room: "sec:g1")
        defer { granted.close() }
        #expect(refusal { try granted.connect() } == nil, "a token for the group's room itself")
    }

    @Test func aStudentCannotClaimAnotherIdentityOrRole() throws {
        let nodes = try Self.secureCluster(1, label: "id")
        defer { for node in nodes { node.stop() } }
        // A student's token used to join as the teacher.
        let impostor = Self.client("teacher", .teacher, token: Self.token("mallory", .student), node: nodes[0])
        defer { impostor.close() }
        #expect(refusal { try impostor.connect() } == "token-identity-mismatch")
        // Role escalation by a forged delta: mallory (student) writes "bob on stage" and "reward me".
        let teacher = Self.client("tina", .teacher, token: Self.token("tina", .teacher), node: nodes[0])
        let mallory = Self.client("mallory", .student, token: Self.token("mallory", .student), node: nodes[0])
        let bob = Self.client("bob", .student, token: Self.token("bob", .student), node: nodes[0])
        defer { teacher.close(); mallory.close(); bob.close() }
        try teacher.connect(); try mallory.connect(); try bob.connect()
        #expect(refusal { try mallory.write(.setStage(user: "bob", on: true)) } == "not-allowed")
        #expect(refusal { try mallory.write(.reward(user: "mallory", amount: 100)) } == "not-allowed")
        #expect(nodes[0].room("sec")?.users["mallory"]?.rewardTotal == 0)
        #expect(nodes[0].room("sec")?.isOnStage("bob") == false)
    }

    @Test func revokedUserIsRefused() throws {
        let nodes = try Self.secureCluster(1, label: "rev") { config in config.tokenVerifier?.revokedUsers = ["eve"] }
        defer { for node in nodes { node.stop() } }
        let eve = Self.client("eve", .student, token: Self.token("eve", .student), node: nodes[0])
        defer { eve.close() }
        #expect(refusal { try eve.connect() } == "token-revoked")
    }

    @Test func authenticatedThreeNodeClusterConvergesAndRefusesAnOutsider() throws {
        let nodes = try Self.secureCluster(3, label: "auth")
        defer { for node in nodes { node.stop() } }
        #expect(eventually(10) { nodes.allSatisfy { $0.alivePeers.count == 2 } }, "sealed nodes did not mesh")
        let teacher = Self.client("tina", .teacher, token: Self.token("tina", .teacher), node: nodes[0])
        let sam = Self.client("sam", .student, token: Self.token("sam", .student), node: nodes[2])
        defer { teacher.close(); sam.close() }
        try teacher.connect(); try sam.connect()
        #expect(eventually(5) { teacher.replica.users["sam"]?.isKnown == true })
        #expect(eventually(5) { nodes[0].room("sec")?.users["sam"]?.isKnown == true })
        try teacher.write(.reward(user: "sam", amount: 3))
        #expect(eventually(5) { nodes.allSatisfy { $0.room("sec")?.users["sam"]?.rewardTotal == 3 } })

        // A node without the cluster key cannot join, and nobody applies its deltas.
        let (logger, _) = Logger.capturing(label: "outsider", level: .error)
        var outsiderConfig = NodeConfig(name: "outsider", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: [nodes[0].listenAddress])
        outsiderConfig.heartbeatMillis = 50
        outsiderConfig.suspectMillis = 300
        outsiderConfig.downMillis = 1_000
        let outsider = try ClusterNode(config: outsiderConfig, logger: logger)
        defer { outsider.stop() }
        // Its hello reached the seed and was refused (the wait ends there, not at a fixed time)...
        #expect(eventually(10) { nodes[0].metrics.snapshot.keys.contains { $0.hasPrefix("requests_rejected_total{reason=\"cluster-auth-required\"") } },
                "the outsider's hello was never refused")
        // ...and a few of its heartbeat periods later it still has no peer, nor is it anyone's.
        usleep(300_000)
        #expect(outsider.alivePeers.isEmpty)
        #expect(nodes.allSatisfy { $0.alivePeers.count == 2 })
    }

    @Test func replayedWritesHaveNoEffectBeyondTheMergeRules() throws {
        let nodes = try Self.secureCluster(1, label: "replay")
        defer { for node in nodes { node.stop() } }
        let teacher = Self.client("tina", .teacher, token: Self.token("tina", .teacher), node: nodes[0])
        let sam = Self.client("sam", .student, token: Self.token("sam", .student), node: nodes[0])
        defer { teacher.close(); sam.close() }
        try teacher.connect(); try sam.connect()
        // Capture one write request's bytes and send them again and again.
        let write = WireMessage.WriteRequest(requestID: 7, write: Write(author: "tina", authorRole: .teacher, authorCounter: 424242,
                                                                         operation: .reward(user: "sam", amount: 5, issuedAtMillis: WallClock.nowMillis())))
        let bytes = WireCodec.encode(WireEnvelope(roomID: "sec", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                                  credential: Array(Self.token("tina", .teacher).utf8), message: .writeRequest(write)))
        for _ in 0..<5 { _ = nodes[0].handleRequest(bytes) }
        #expect(nodes[0].room("sec")?.users["sam"]?.rewardTotal == 5)
    }

    @Test func oversizedMessagesGetATypedErrorAndTheNodeLives() throws {
        let nodes = try Self.secureCluster(1, label: "big")
        defer { for node in nodes { node.stop() } }
        let reply = nodes[0].handleRequest([UInt8](repeating: 0x0A, count: 5 << 20))
        let decoded = try WireCodec.decode(reply)
        guard case let .error(error) = decoded.message else { Issue.record("no error reply"); return }
        #expect(error.code == "oversized")
        let garbage = nodes[0].handleRequest([0xFF, 0xFF, 0xFF, 0x01, 0x02])
        guard case .error = try WireCodec.decode(garbage).message else { Issue.record("garbage accepted"); return }
        let sam = Self.client("sam", .student, token: Self.token("sam", .student), node: nodes[0])
        defer { sam.close() }
        try sam.connect()
        #expect(sam.connectionState == .connected)
    }

    @Test func aFloodingPeerIsRateLimitedWhileOthersKeepTheirLatency() throws {
        let nodes = try Self.secureCluster(1, label: "flood")
        defer { for node in nodes { node.stop() } }
        let flooder = Self.client("fred", .student, token: Self.token("fred", .student), node: nodes[0])
        let calm = Self.client("cora", .student, token: Self.token("cora", .student), node: nodes[0])
        defer { flooder.close(); calm.close() }
        try flooder.connect(); try calm.connect()
        let limited = Counter()
        let done = Flag()
        let thread = Thread {
            for index in 0..<2_000 where !done.isSet {
                do { try flooder.write(.setHand(user: "fred", raised: index % 2 == 0)) } catch { limited.add(1) }
            }
        }
        thread.start()
        var latencies: [Double] = []
        let clock = ContinuousClock()
        for index in 0..<30 {
            let start = clock.now
            try calm.write(.setDevice(user: "cora", device: .camera, on: index % 2 == 0))
            let elapsed = clock.now - start
            latencies.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
            usleep(20_000)
        }
        done.set()
        latencies.sort()
        #expect(limited.value > 0, "the flooder was never rate-limited")
        // Behaviour: every calm write was accepted (a limiter shared with the flooder would
        // throw above). Speed is the benchmark's (homeroom-bench security: the victim's
        // latency under each flood against its quiet one); here only a bound far above a
        // loaded machine (a few ms idle), for a calm peer held up by the flood for good.
        print("SecurityTests: the calm peer's p50 \(Int(latencies[latencies.count / 2])) us, p90 \(Int(latencies[latencies.count * 9 / 10])) us under a flood")
        #expect(latencies[latencies.count * 9 / 10] < 1_000_000, "the calm peer's p90 write latency was \(latencies[latencies.count * 9 / 10]) us")
        #expect(nodes[0].metrics.snapshot.keys.contains { $0.contains("rate-limited") })
    }
}

final class Counter: Sendable {
    private let count = Mutex(0)
    func add(_ amount: Int) { count.withLock { $0 += amount } }
    var value: Int { count.withLock { $0 } }
}

final class Flag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}
