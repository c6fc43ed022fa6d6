@preconcurrency import Glibc
import Synchronization
import Testing
import HomeroomContext
import HomeroomNode

/// The context layer's token expiry warning and renewal (Signaling's
/// `privilege-will-expire` and `renewToken`), against an in-process node that requires tokens.
@Suite(.serialized) struct TokenRenewalContextTests {
    @Test func aPoolIsWarnedBeforeItsTokenExpiresAndRenewsWithoutLeaving() throws {
        let keys = SigningKeys.generate()
        let (logger, _) = Logger.capturing(label: "ctx-renew", level: .warning)
        var nodeConfig = NodeConfig(name: "ctx-renew", listen: "inproc://ctx-renew-rep-\(UInt32.random(in: 0...UInt32.max))",
                                    publish: "inproc://ctx-renew-pub-\(UInt32.random(in: 0...UInt32.max))")
        nodeConfig.tokenVerifier = TokenVerifier(publicKeys: [keys.publicKey], app: "homeroom")
        let node = try ClusterNode(config: nodeConfig, logger: logger)
        defer { node.stop() }
        let now = Int64(WallClock.nowMillis() / 1000)
        func token(_ user: String, lifetime: Int64) -> String {
            JoinToken.create(TokenClaims(app: "homeroom", room: "ctx-renew", user: user, role: .student, issuedAt: now, expiresAt: now + lifetime), keys: keys)
        }
        var config = try ClassroomConfig(token: token("ada", lifetime: 120), nodes: [node.listenAddress])
        config.monitorIntervalMillis = 20
        config.tokenWarningSeconds = 115
        let pool = try ContextPool(config: config, logger: logger)
        defer { pool.close() }
        let warnings = Mutex<[Int64]>([])
        pool.addEventListener { event in
            if case let .tokenWillExpire(seconds) = event { warnings.withLock { $0.append(seconds) } }
        }
        try pool.room.join()
        #expect(pool.monitor.tokenExpiresAt == now + 120)
        // 120 s left, warned 115 s before: due within 5 s, once.
        #expect(eventually(10) { !warnings.withLock { $0.isEmpty } }, "never warned")
        #expect(warnings.withLock { $0.count == 1 && (0...115).contains($0[0]) }, "\(warnings.withLock { $0 })")

        do {
            try pool.monitor.renewToken(token("bob", lifetime: 600))
            Issue.record("bob's token renewed ada's session")
        } catch {
            #expect(error.code == "token-renewal-mismatch", "\(error)")
        }
        #expect(try pool.monitor.renewToken(token("ada", lifetime: 600)) == now + 600)
        #expect(pool.monitor.tokenExpiresAt == now + 600)
        #expect(pool.room.isJoined)
        // The new expiry is far off: no second warning yet.
        usleep(200_000)
        #expect(warnings.withLock { $0.count } == 1)
    }
}
