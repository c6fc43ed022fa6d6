import Foundation
import HomeroomCore
import HomeroomWire
import Testing
@testable import HomeroomNode

/// Token expiry warnings and renewal (Signaling's `privilege-will-expire` and
/// `renewToken`; docs/PROTOCOL.md, "Token renewal"), against in-process nodes.
@Suite(.serialized) struct TokenRenewalTests {
    @Test func theWarningComesOncePerExpiryAtItsLead() {
        var warning = TokenExpiryWarning(leadSeconds: 30)
        #expect(warning.due(expiresAt: nil, nowSeconds: 1_000) == nil)
        #expect(warning.due(expiresAt: 1_100, nowSeconds: 1_000) == nil, "70 s before: too early")
        #expect(warning.due(expiresAt: 1_100, nowSeconds: 1_070) == 30)
        #expect(warning.due(expiresAt: 1_100, nowSeconds: 1_071) == nil, "told once")
        #expect(warning.due(expiresAt: 1_100, nowSeconds: 1_200) == nil)
        // A renewed token (a new expiry) is warned about again; one already past says 0.
        #expect(warning.due(expiresAt: 1_300, nowSeconds: 1_280) == 20)
        var late = TokenExpiryWarning()
        #expect(late.due(expiresAt: 1_000, nowSeconds: 1_010) == 0)
        #expect(TokenExpiryWarning().leadSeconds == 30)
    }

    @Test func aRenewalMustNameTheSessionsUserAndRole() {
        var room = RoomState(roomID: "r")
        var record = UserRecord()
        record.role = Register(.student, stamp: .origin)
        record.sessions = [SessionRecord(id: "ada-1", host: ReplicaID(1), incarnation: 1, started: Stamp(clock: HybridTimestamp(millis: 5, logical: 0, replica: ReplicaID(1)), sequence: 1))]
        room.users["ada"] = record
        func claims(_ user: String, _ role: Role) -> TokenClaims {
            TokenClaims(app: "a", room: "r", user: user, role: role, issuedAt: 0, expiresAt: 77)
        }
        #expect(TokenRenewal.check(claims("ada", .student), session: "ada-1", in: room) == .success(77))
        #expect(TokenRenewal.check(claims("bob", .student), session: "ada-1", in: room).refusalCode == "token-renewal-mismatch")
        #expect(TokenRenewal.check(claims("ada", .teacher), session: "ada-1", in: room).refusalCode == "token-renewal-mismatch")
        #expect(TokenRenewal.check(claims("ada", .student), session: "ada-2", in: room).refusalCode == "not-joined")
        room.users["ada"]!.sessions[0].ended = Stamp(clock: HybridTimestamp(millis: 9, logical: 0, replica: ReplicaID(1)), sequence: 2)
        #expect(TokenRenewal.check(claims("ada", .student), session: "ada-1", in: room).refusalCode == "not-joined", "an ended session is not renewed")
    }

    /// Nodes with no clock leeway, so an expired token is refused at once.
    static func cluster(_ label: String) throws -> [ClusterNode] {
        try SecurityTests.secureCluster(1, label: label) { $0.tokenVerifier?.leewaySeconds = 0 }
    }

    @Test func aRenewedClientKeepsItsSessionAndWritesPastTheFirstTokensExpiry() throws {
        let nodes = try Self.cluster("renew")
        defer { for node in nodes { node.stop() } }
        let now = Int64(WallClock.nowMillis() / 1000)
        let first = SecurityTests.token("ada", .student, issued: now, lifetime: 3)
        let ada = SecurityTests.client("ada", .student, token: first, node: nodes[0])
        // The control: the same short token, never renewed.
        let cal = SecurityTests.client("cal", .student, token: SecurityTests.token("cal", .student, issued: now, lifetime: 3), node: nodes[0])
        defer { ada.close(); cal.close() }
        try ada.connect()
        try cal.connect()
        #expect(ada.tokenExpiresAt == now + 3)
        let session = ada.state.withLock { $0.session }

        // Tokens for another user, role or room, forged ones, and garbage change nothing.
        func refusal(_ token: String) -> String? {
            do { try ada.renewToken(token); return nil } catch { return error.code }
        }
        #expect(refusal(SecurityTests.token("bob", .student)) == "token-renewal-mismatch")
        #expect(refusal(SecurityTests.token("ada", .teacher)) == "token-renewal-mismatch")
        #expect(refusal(SecurityTests.token("ada", .student, room: "other")) == "token-wrong-room")
        #expect(refusal(SecurityTests.token("ada", .student, keys: SigningKeys.generate())) == "token-forged")
        #expect(refusal("hello") == "token-malformed")
        #expect(ada.tokenExpiresAt == now + 3)

        let second = SecurityTests.token("ada", .student, issued: now, lifetime: 3_600)
        #expect(try ada.renewToken(second) == now + 3_600)
        #expect(ada.tokenExpiresAt == now + 3_600)
        // Past the first token's expiry: cal's syncs are refused, ada goes on.
        let expiredAt = Date(timeIntervalSince1970: TimeInterval(now + 4))
        Thread.sleep(until: expiredAt.addingTimeInterval(0.5))
        #expect(eventually(10) { cal.finalRefusal == "token-expired" }, "the control was never refused: \(cal.finalRefusal ?? "nil")")
        _ = try ada.write(.setHand(user: "ada", raised: true))
        #expect(ada.finalRefusal == nil)
        #expect(ada.connectionState == .connected)
        #expect(ada.state.withLock { $0.session } == session, "the renewal rejoined")
        // The node holds one live session for ada, the same one.
        let held = nodes[0].snapshot(room: "sec", visibleTo: "ada").users["ada"]
        #expect(held?.sessions.filter { $0.ended == nil }.map(\.id) == [session])
        #expect(held?.hand.value == true)
    }

    @Test func aNodeWithoutTokensHasNothingToRenew() throws {
        let (logger, _) = Logger.capturing(label: "renew-open", level: .error)
        let node = try ClusterNode(config: NodeConfig(name: "renew-open", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0"), logger: logger)
        defer { node.stop() }
        let ada = SecurityTests.client("ada", .student, token: nil, node: node)
        defer { ada.close() }
        try ada.connect()
        do {
            try ada.renewToken(SecurityTests.token("ada", .student))
            Issue.record("an open node took a renewal")
        } catch {
            #expect(error.code == "not-allowed")
        }
    }
}

extension Result where Failure == TokenRenewal.Refusal {
    var refusalCode: String? {
        if case let .failure(refusal) = self { return refusal.code }
        return nil
    }
}
