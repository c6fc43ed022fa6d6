@preconcurrency import Glibc
import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Synchronization
import Testing
@testable import HomeroomNode

/// A client follows a `not-owner` redirect only to a member it has reason to trust,
/// never from TLS to clear (docs/SECURITY.md, "Redirects"): every dial carries the
/// join token. A fake node on loopback names an attacker's address; the attacker
/// records what reaches it.
@Suite(.serialized) struct RedirectTrustTests {
    static let token = "redirect-test-token"

    /// Something on loopback that counts what it is sent: an attacker or a real-looking
    /// owner. It answers every request `unavailable`.
    final class Listener: Sendable {
        let replier: SPReplier
        let address: String
        private let received = Mutex<Int>(0)
        var count: Int { received.withLock { $0 } }

        init(_ url: String) throws {
            replier = try SPReplier()
            address = try replier.listen(url)
            try replier.serve(workers: 1) { [weak self] _ in
                self?.received.withLock { $0 += 1 }
                let envelope = WireEnvelope(roomID: "", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                            message: .error(WireMessage.ErrorReply(code: "unavailable", message: "a test listener")))
                return WireCodec.encode(envelope)
            }
        }

        func close() { replier.close() }
    }

    /// A node that answers a client's hello (its own address, a publish address, the
    /// `peers` given), optionally accepts joins, and answers every other request
    /// `not-owner`, naming `owners`.
    final class FakeNode: Sendable {
        let replier: SPReplier
        let publisher: SPPublisher
        let address: String
        private let kinds = Mutex<[String]>([])
        var requests: [String] { kinds.withLock { $0 } }

        init(_ url: String, owners: [String], peers: [String] = [], acceptsJoins: Bool = false) throws {
            replier = try SPReplier()
            publisher = try SPPublisher()
            let address = try replier.listen(url)
            self.address = address
            let publishAddress = try publisher.listen(url)
            let node = ReplicaID(name: "fake")
            let ownerPeers = owners.map { WireMessage.Peer(node: ReplicaID(name: $0), address: $0, incarnation: 1, status: .alive) }
            let memberPeers = peers.map { WireMessage.Peer(node: ReplicaID(name: $0), address: $0, incarnation: 1, status: .alive) }
            try replier.serve(workers: 1) { [weak self] bytes in
                guard let request = try? WireCodec.decode(bytes, limits: .largeReplies) else { return [] }
                self?.kinds.withLock { $0.append(request.message.kind) }
                let reply: WireMessage
                switch request.message {
                case .heartbeat:
                    reply = .heartbeat(WireMessage.Heartbeat(node: node, incarnation: 1, address: address, peers: memberPeers, publishAddress: publishAddress))
                case let .joinRequest(join) where acceptsJoins:
                    reply = .joinResponse(WireMessage.JoinResponse(session: join.session, host: node, incarnation: 1,
                                                                   state: RoomState(roomID: request.roomID), isSnapshot: true))
                default:
                    reply = .error(WireMessage.ErrorReply(code: "not-owner", message: "ask them", owners: ownerPeers))
                }
                return WireCodec.encode(WireEnvelope(roomID: request.roomID, sender: node, sequence: 0, clock: .zero, message: reply))
            }
        }

        func close() {
            replier.close()
            publisher.close()
        }
    }

    static func client(_ node: FakeNode, logger: Logger) -> RoomClient {
        var options = RoomClient.Options()
        options.token = token
        options.requestTimeoutMillis = 500
        options.syncIntervalMillis = 50
        return RoomClient(room: "redirected", user: "ann", role: .student, name: "Ann", endpoints: [NodeEndpoint(node.address)],
                          options: options, logger: logger)
    }

    // MARK: - The policy

    @Test func theDecisionFollowsOnlyMembersAndNeverDowngrades() {
        let plain = "tcp://127.0.0.1:7100", plainPeer = "tcp://127.0.0.1:7200", plainStranger = "tcp://10.6.6.6:7100"
        let tls = "tls+tcp://node-a.example:7100", tlsPeer = "tls+tcp://node-b.example:7100", tlsStranger = "tls+tcp://evil.example:7100"
        let members = Set([plain, plainPeer, tls, tlsPeer, "wss://node-c.example:7100/sp"].map(RedirectPolicy.key))
        let configured = Set([tls, plain].map(RedirectPolicy.key))
        func verdict(_ owner: String, _ source: String) -> RedirectPolicy.Verdict {
            RedirectPolicy.verdict(owner: owner, namedBy: source, members: members, configured: configured)
        }
        // Secure to insecure: refused, even to a member or a configured node.
        #expect(verdict(plainPeer, tls) == .downgrade)
        #expect(verdict(plain, tls) == .downgrade)
        #expect(verdict(plainPeer, "wss://node-c.example:7100/sp") == .downgrade)
        #expect(verdict("ipc:///tmp/homeroom.sock", tls) == .downgrade)
        // Secure to secure: a member only.
        #expect(verdict(tlsPeer, tls) == .follow)
        #expect(verdict("wss://node-c.example:7100/sp", tls) == .follow)
        #expect(verdict(tlsStranger, tls) == .notMember)
        // Insecure to insecure (or up to secure): a member or a configured node only.
        #expect(verdict(plainPeer, plain) == .follow)
        #expect(verdict(plain, plainPeer) == .follow)
        #expect(verdict(tlsPeer, plain) == .follow)
        #expect(verdict(plainStranger, plain) == .notMember)
        #expect(verdict(tlsStranger, plain) == .notMember)
        // Nothing to dial.
        #expect(verdict("", plain) == .invalid)
        #expect(verdict("udp://127.0.0.1:7100", plain) == .invalid)
        #expect(!RedirectPolicy.accepts(owner: plainStranger, namedBy: plain, members: members, configured: configured))
        #expect(RedirectPolicy.accepts(owner: plainPeer, namedBy: plain, members: members, configured: configured))
        // Nobody vouched for anything: only the configured nodes.
        #expect(RedirectPolicy.verdict(owner: plainPeer, namedBy: plain, members: [], configured: configured) == .notMember)
        #expect(RedirectPolicy.verdict(owner: plain, namedBy: plainPeer, members: [], configured: configured) == .follow)
    }

    @Test func addressesCompareByCaseInsensitiveHostsOnly() {
        #expect(RedirectPolicy.key("tcp://Node-A.Example:7100") == RedirectPolicy.key("tcp://node-a.example:7100"))
        #expect(RedirectPolicy.key("wss://Node-A:7100/SP") == "wss://node-a:7100/SP")
        #expect(RedirectPolicy.key("inproc://Room") != RedirectPolicy.key("inproc://room"))
        #expect(RedirectPolicy.key("ipc:///tmp/A.sock") == "ipc:///tmp/A.sock")
        #expect(RedirectPolicy.key("tcp://127.0.0.1:7100") != RedirectPolicy.key("tcp://127.0.0.1:7101"))
    }

    // MARK: - With sockets

    /// A fake node the client was configured with names an attacker as the room's owner,
    /// on the join (`acceptsJoins` false) or on every sync and write once joined (true):
    /// the attacker never hears from the client, and the refusal is logged.
    @Test(arguments: [false, true])
    func aFakeNodesRedirectNeverReachesAnOutsider(acceptsJoins: Bool) throws {
        let attacker = try Listener("tcp://127.0.0.1:0")
        defer { attacker.close() }
        let fake = try FakeNode("tcp://127.0.0.1:0", owners: [attacker.address], acceptsJoins: acceptsJoins)
        defer { fake.close() }
        let (logger, log) = Logger.capturing(label: "redirect", level: .notice)
        let client = Self.client(fake, logger: logger)
        defer { client.close() }
        if acceptsJoins {
            try client.connect()
            #expect(throws: ClientError.self) { try client.write(.setHand(user: "ann", raised: true)) }
            // The sync loop is answered not-owner too, and moves each time.
            #expect(eventually(5) { fake.requests.filter { $0 == "sync_request" }.count >= 3 }, "\(fake.requests)")
        } else {
            for _ in 0..<3 {
                #expect(throws: ClientError.self) { try client.connect() }
            }
        }
        #expect(fake.requests.count > 0, "the client never asked the fake node: this test proves nothing")
        #expect(attacker.count == 0, "the client followed a stranger's redirect (and sent it the token)")
        #expect(log.all.contains { $0.contains("not following a redirect") && $0.contains(attacker.address) && $0.contains("not a configured node") },
                "\(log.all)")
    }

    /// What still works: a real cluster (tokens, placement) reached through one configured
    /// node. That node's hello answer, asked with a valid token, lists its peers, and its
    /// `not-owner` reply names owners among them: followed, with nothing refused. (A guard
    /// for the member list; the old client passed it too.)
    @Test func aRealClustersRedirectIsFollowedFromOneConfiguredNode() throws {
        let nodes = try SecurityTests.secureCluster(4, label: "trusted") { $0.replicas = 2 }
        defer { for node in nodes { node.stop() } }
        #expect(eventually(15) { nodes.allSatisfy { $0.alivePeers.count == 3 } }, "the four nodes did not meet")
        let placement = Placement(replicas: 2, members: nodes.map(\.name))
        let room = try #require((0..<64).map { "trusted-\($0)" }.first { !placement.owners(of: $0).contains(nodes[0].name) })
        var options = RoomClient.Options()
        options.token = SecurityTests.token("ann", .teacher, room: room)
        options.requestTimeoutMillis = 500
        let (logger, log) = Logger.capturing(label: "redirect-real", level: .notice)
        let client = RoomClient(room: room, user: "ann", role: .teacher, name: "Ann", endpoints: [NodeEndpoint(nodes[0].listenAddress)],
                                options: options, logger: logger)
        defer { client.close() }
        try client.connect()
        try client.write(.setRoomProperty(key: "topic", value: Array("placed".utf8), cause: "redirect test"))
        let attached = nodes.first { $0.replica == client.attachedNode }?.name ?? "?"
        #expect(placement.owners(of: room).contains(attached), "attached to \(attached), not an owner of \(room)")
        #expect(!log.all.contains { $0.contains("not following a redirect") }, "\(log.all)")
    }

    /// A node dialed over TLS names two owners it also lists as peers: one on TLS (followed)
    /// and one in clear (never dialed: the token would cross the network unencrypted).
    @Test func aTLSNodesRedirectToCleartextIsNotFollowed() throws {
        _ = try TLSTransportTests.directory()
        let attacker = try Listener("tcp://127.0.0.1:0")
        defer { attacker.close() }
        let secureOwner = try Listener("tls+tcp://127.0.0.1:0")
        defer { secureOwner.close() }
        let owners = [attacker.address, secureOwner.address]
        let fake = try FakeNode("tls+tcp://127.0.0.1:0", owners: owners, peers: owners)
        defer { fake.close() }
        let (logger, log) = Logger.capturing(label: "redirect-tls", level: .notice)
        let client = Self.client(fake, logger: logger)
        defer { client.close() }
        for _ in 0..<2 {
            #expect(throws: ClientError.self) { try client.connect() }
        }
        #expect(fake.requests.contains("join_request"), "the client never joined through the fake node: \(fake.requests)")
        #expect(secureOwner.count > 0, "the TLS owner, a member, was not followed")
        #expect(attacker.count == 0, "the client followed a TLS node's redirect to tcp:// (the token in clear)")
        #expect(log.all.contains { $0.contains("not following a redirect") && $0.contains(attacker.address) && $0.contains("in clear") },
                "\(log.all)")
    }
}
