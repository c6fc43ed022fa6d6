import HomeroomTestSupport
import Foundation
import HomeroomCore
import HomeroomWire
import Testing
@testable import HomeroomNode
import HomeroomEngine

/// Lifetime against real node processes: joins that cannot pile up, sessions whose
/// client never synced, and a node rebuilt from its peers.
@Suite(.serialized) struct LifetimeNodeTests {
    static func temporaryDirectory(_ label: String) -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
    }

    /// A bare client: one REQ socket to a node, raw envelopes.
    final class RawClient {
        let requester: SPRequester
        init(_ address: String) throws {
            requester = try SPRequester(limits: SPLimitsConfig(maxMessageBytes: 64 << 20))
            try requester.dial(address)
        }
        deinit { requester.close() }

        func send(room: String, _ message: WireMessage) throws -> WireEnvelope {
            let envelope = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero, message: message)
            let reply = try requester.request(WireCodec.encode(envelope), timeout: .seconds(5))
            return try WireCodec.decode(reply, limits: WireLimits(maxMessageBytes: 64 << 20, maxDecodedBytes: 1 << 30))
        }

        func join(room: String, user: UserID, session: SessionID, role: Role = .student) throws -> WireEnvelope {
            try send(room: room, .joinRequest(WireMessage.JoinRequest(user: user, role: role, session: session, name: user)))
        }
    }

    static func client(_ user: String, _ role: Role, _ nodes: [NodeProcess], room: String) -> RoomClient {
        var options = RoomClient.Options()
        options.syncIntervalMillis = 100
        options.requestTimeoutMillis = 1_000
        let (logger, _) = Logger.capturing(label: "lifetime", level: .warning)
        return RoomClient(room: room, user: user, role: role, name: user, endpoints: nodes.map { NodeEndpoint($0.listen) },
                          options: options, logger: logger)
    }

    @Test func seventyJoinsByOneUserLeaveTheRoomJoinable() throws {
        let node = try NodeProcess(name: "join-flood")
        defer { node.stop() }
        let raw = try RawClient(node.listen)
        var accepted = 0
        var refusals: [String: Int] = [:]
        for index in 0..<70 {
            let reply = try raw.join(room: "flood", user: "mallory", session: "m-\(index)")
            switch reply.message {
            case .joinResponse: accepted += 1
            case let .error(error): refusals[error.code, default: 0] += 1
            default: Issue.record("a join was answered with \(reply.message.kind)")
            }
        }
        #expect(accepted <= RoomState.maxOpenSessionsPerUser, "\(accepted) joins accepted, refusals \(refusals)")
        #expect(Set(refusals.keys).isSubset(of: ["rate-limited", "too-many-sessions"]) && !refusals.isEmpty, "refusals: \(refusals)")
        // Anyone else still joins, and what they get decodes within the default limits.
        let alice = try raw.join(room: "flood", user: "alice", session: "a-1")
        guard case let .joinResponse(response) = alice.message else {
            Issue.record("alice could not join: \(alice.message)")
            return
        }
        #expect((response.state.users["mallory"]?.sessions.count ?? 0) <= RoomState.maxOpenSessionsPerUser)
        let again = WireCodec.encodePatch(response.state)
        #expect((try? WireCodec.decodePatch(again)) != nil, "the room's snapshot does not decode within the default limits")
    }

    @Test func aJoinWhoseClientNeverSyncsEndsByItsLease() throws {
        let node = try NodeProcess(name: "lost-reply", extra: ["--session-timeout-ms", "1000", "--http", "http://127.0.0.1:0"])
        defer { node.stop() }
        let watcher = Self.client("watcher", .observer, [node], room: "lost")
        defer { watcher.close() }
        try watcher.connect()
        // The join is accepted, but its client never syncs: as when the reply was lost.
        let raw = try RawClient(node.listen)
        guard case .joinResponse = try raw.join(room: "lost", user: "ghost", session: "g-1").message else {
            Issue.record("the join was refused")
            return
        }
        #expect(eventually(5) { watcher.replica.isOnline("ghost") }, "the join never showed")
        #expect(eventually(8) { !watcher.replica.isOnline("ghost") }, "a session whose client never synced stayed open")
        #expect((node.metric("homeroom_sessions_expired_total") ?? 0) >= 1)
    }

    /// A node whose store is lost (moved aside) comes back empty under its old name and
    /// rebuilds from its peer. Its next acknowledged writes must exist everywhere.
    @Test func aNodeRebuiltFromItsPeersLosesNoAcknowledgedWrite() throws {
        let first = Self.temporaryDirectory("rebuild-a"), second = Self.temporaryDirectory("rebuild-b")
        defer { for path in [first, second, first + ".aside"] { try? FileManager.default.removeItem(atPath: path) } }
        let peer = try NodeProcess(name: "rb-b", extra: ["--data-dir", second])
        var rebuilt = try NodeProcess(name: "rb-a", seeds: [peer.listen], extra: ["--data-dir", first])
        defer { rebuilt.stop(); peer.stop() }
        let bob = Self.client("bob", .student, [peer], room: "rebuild")
        defer { bob.close() }
        try bob.connect()

        func rewardThroughFirst(_ count: Int) throws {
            let teacher = Self.client("teacher", .teacher, [rebuilt], room: "rebuild")
            defer { teacher.close() }
            try teacher.connect()
            #expect(eventually(10) { teacher.replica.users["bob"]?.isKnown == true }, "the teacher's node never heard of bob")
            for _ in 0..<count { _ = try teacher.write(.reward(user: "bob", amount: 1)) }
        }
        try rewardThroughFirst(5)
        #expect(eventually(10) { bob.replica.users["bob"]?.rewardTotal == 5 })

        rebuilt.stop()
        try FileManager.default.moveItem(atPath: first, toPath: first + ".aside")
        rebuilt = try NodeProcess(name: "rb-a", seeds: [peer.listen], extra: ["--data-dir", first])
        try rewardThroughFirst(5)   // acknowledged by the rebuilt node
        #expect(eventually(10) { bob.replica.users["bob"]?.rewardTotal == 10 },
                "acknowledged writes of the rebuilt node are missing at its peer: \(bob.replica.users["bob"]?.rewardTotal ?? -1) of 10")
    }

    /// The rebuilt node's new store retires the old one's replica id; that old store,
    /// started again (a backup put back), must not serve: its writes would be dropped.
    @Test func anOldStoreStartedAgainAfterItWasRetiredStepsAside() throws {
        let first = Self.temporaryDirectory("retired-a"), second = Self.temporaryDirectory("retired-b")
        defer { for path in [first, second, first + ".old"] { try? FileManager.default.removeItem(atPath: path) } }
        let window = ["--reward-window-ms", "1000", "--max-clock-drift-ms", "1000", "--http", "http://127.0.0.1:0"]
        let peer = try NodeProcess(name: "rt-b", extra: ["--data-dir", second] + window)
        var node = try NodeProcess(name: "rt-a", seeds: [peer.listen], extra: ["--data-dir", first] + window)
        defer { node.stop(); peer.stop() }
        let bob = Self.client("bob", .student, [peer], room: "old-store")
        defer { bob.close() }
        try bob.connect()
        do {
            let teacher = Self.client("teacher", .teacher, [node], room: "old-store")
            defer { teacher.close() }
            try teacher.connect()
            #expect(eventually(10) { teacher.replica.users["bob"]?.isKnown == true }, "the teacher's node never heard of bob")
            for _ in 0..<3 { _ = try teacher.write(.reward(user: "bob", amount: 1)) }
        }
        #expect(eventually(10) { bob.replica.users["bob"]?.rewardTotal == 3 })

        node.stop()
        try FileManager.default.moveItem(atPath: first, toPath: first + ".old")
        node = try NodeProcess(name: "rt-a", seeds: [peer.listen], extra: ["--data-dir", first] + window)
        #expect(eventually(30) { (node.metric("homeroom_replica_retirements_total") ?? 0) >= 1 }, "the new store never retired the old one")
        node.stop()

        try FileManager.default.removeItem(atPath: first)
        try FileManager.default.moveItem(atPath: first + ".old", toPath: first)
        node = try NodeProcess(name: "rt-a", seeds: [peer.listen], extra: ["--data-dir", first] + window)
        // Writes from the moment it listens: it takes none before it has heard the peer,
        // whose heartbeat names the newer store, so it acknowledges nothing that every
        // replica would drop.
        let raw = try RawClient(node.listen)
        var acknowledged = 0, refusals: [String: Int] = [:]
        for attempt in 0..<20 {
            let write = Write(author: OperatorIdentity.user, authorRole: .teacher, authorCounter: UInt64(1_000 + attempt),
                              operation: .reward(user: "bob", amount: 1, issuedAtMillis: WallClock.nowMillis()))
            let reply = try raw.send(room: "old-store", .writeRequest(WireMessage.WriteRequest(requestID: UInt64(attempt + 1), write: write)))
            switch reply.message {
            case let .writeAck(ack) where ack.status == .accepted: acknowledged += 1
            case let .writeAck(ack): refusals[ack.errorCode, default: 0] += 1
            case let .error(error): refusals[error.code, default: 0] += 1
            default: Issue.record("a write was answered with \(reply.message.kind)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(acknowledged == 0, "the old store acknowledged \(acknowledged) writes that every replica drops; refusals \(refusals)")
        #expect(refusals["unavailable"] == 20, "refusals: \(refusals)")
        #expect(eventually(10) { node.get("/healthz")?.status == 503 }, "the retired store still serves: \(node.get("/healthz")?.body ?? "no answer")")
        #expect(node.log.contains("superseded"))
        #expect(bob.replica.users["bob"]?.rewardTotal == 3)
        #expect(peer.get("/healthz")?.status == 200)
    }

    /// A node restarted on its own store, with its peer down, waits the down period for
    /// a peer before it takes writes, then takes them (it cannot wait for ever: the
    /// whole cluster may be restarting). With the peer up it takes them at once.
    @Test func aNodeRestartedOnItsStoreTakesWritesOnceItHearsAPeerOrTheDownPeriodPasses() throws {
        let first = Self.temporaryDirectory("await-a"), second = Self.temporaryDirectory("await-b")
        defer { for path in [first, second] { try? FileManager.default.removeItem(atPath: path) } }
        let http = ["--http", "http://127.0.0.1:0"]
        let peer = try NodeProcess(name: "aw-b", suspectMillis: 1_000, downMillis: 3_000, extra: ["--data-dir", second] + http)
        var node = try NodeProcess(name: "aw-a", seeds: [peer.listen], suspectMillis: 1_000, downMillis: 3_000, extra: ["--data-dir", first] + http)
        defer { node.stop(); peer.stop() }
        func reward(_ raw: RawClient, _ counter: UInt64) throws -> String {
            let write = Write(author: OperatorIdentity.user, authorRole: .teacher, authorCounter: counter,
                              operation: .reward(user: "@none", amount: 1, issuedAtMillis: WallClock.nowMillis()))
            let reply = try raw.send(room: "await", .writeRequest(WireMessage.WriteRequest(requestID: counter, write: write)))
            if case let .writeAck(ack) = reply.message { return ack.status == .accepted ? "accepted" : ack.errorCode }
            if case let .error(error) = reply.message { return error.code }
            return "\(reply.message.kind)"
        }
        // A room on the store, so the restart has something to serve.
        #expect(try reward(RawClient(node.listen), 1) != "unavailable")

        // Peer up: the first hello's answer opens the door within a few heartbeats. With a
        // 30 s down period here, a door open within 15 s was opened by the peer, not by the
        // down period passing, however slowly a loaded machine starts the node.
        node.stop()
        node = try NodeProcess(name: "aw-a", seeds: [peer.listen], suspectMillis: 1_000, downMillis: 30_000, extra: ["--data-dir", first] + http)
        let started = Date()
        var raw = try RawClient(node.listen)
        var answer = ""
        var counter: UInt64 = 10
        while Date().timeIntervalSince(started) < 15 {
            answer = try reward(raw, counter)
            counter += 1
            if answer != "unavailable" { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        print("LifetimeNodeTests: writes taken \(String(format: "%.2f", Date().timeIntervalSince(started))) s after the restart, its peer up")
        #expect(answer != "unavailable", "still waiting for a peer that is up, \(Date().timeIntervalSince(started)) s after the restart")

        // Peer down: unavailable at first, writes taken after the down period.
        node.stop()
        peer.stop()
        node = try NodeProcess(name: "aw-a", seeds: [peer.listen], suspectMillis: 1_000, downMillis: 3_000, extra: ["--data-dir", first] + http)
        raw = try RawClient(node.listen)
        #expect(try reward(raw, 1_000) == "unavailable")
        var taken = false
        for counter in UInt64(1_001)..<1_100 where !taken {
            Thread.sleep(forTimeInterval: 0.1)
            taken = try reward(raw, counter) != "unavailable"
        }
        #expect(taken, "never took writes with its peer down")
        #expect((node.metric("homeroom_writes_awaiting_peers_total") ?? 0) >= 1)
    }
}

/// The rate limiters forget what has refilled: their tables stay as large as the
/// users active in the last burst, not every user ever seen.
@Suite struct RateLimiterLifetimeTests {
    @Test func bucketsOfIdleUsersArePruned() {
        var limiter = RateLimiter(messagesPerSecond: 20, bytesPerSecond: 1 << 20, burstSeconds: 3)
        for user in 0..<10_000 { _ = limiter.allow("user-\(user)", size: 0, nowMillis: UInt64(user)) }
        #expect(limiter.count == 10_000)
        limiter.prune(nowMillis: 10_000 + 3_000)
        #expect(limiter.count <= 3_000, "\(limiter.count) buckets after the prune")
        _ = limiter.allow("user-1", size: 0, nowMillis: 20_000)
        limiter.prune(nowMillis: 40_000)
        #expect(limiter.count == 0)
    }
}

/// A repair patch a node cannot decode is counted every time and logged once a
/// minute, never pulled again in a silent loop.
@Suite(.serialized) struct UndecodablePatchTests {
    @Test func anUndecodableRepairIsCountedAndLoggedOnce() throws {
        let (logger, capture) = Logger.capturing(label: "undecodable", level: .warning)
        func config(_ name: String, seeds: [String]) -> NodeConfig {
            var config = NodeConfig(name: name, listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: seeds)
            config.heartbeatMillis = 50
            config.suspectMillis = 300
            config.downMillis = 1_000
            config.requestTimeoutMillis = 500
            return config
        }
        let first = try ClusterNode(config: config("ud-a", seeds: []), logger: logger)
        defer { first.stop() }
        for user in 0..<5 { first.join(room: "ud", user: "u\(user)", role: .student, session: "s\(user)", name: "U") }
        // The second node joins later, so it needs a repair, and it cannot read one with more than four users.
        var strict = config("ud-b", seeds: [first.listenAddress])
        strict.replyLimits.maxUsersPerPatch = 4
        strict.maxUsersPerRoom = 2
        let second = try ClusterNode(config: strict, logger: logger)
        defer { second.stop() }
        #expect(eventually(10) { (second.metrics["sync_decode_failures_total"] ?? 0) >= 3 }, "the failed repairs were not counted")
        let logged = capture.all.filter { $0.contains("repair patch does not decode") }
        #expect(logged.count == 1, "logged \(logged.count) times: \(logged)")
        #expect(logged.first?.contains("ud") == true)
    }
}

/// One bad room never takes a node down: a store with a room that does not load
/// starts, serves the other rooms, and says which room it keeps out of service.
@Suite(.serialized) struct QuarantineTests {
    @Test func aRoomThatDoesNotLoadIsQuarantinedAndTheOthersServed() throws {
        let data = LifetimeNodeTests.temporaryDirectory("quarantine")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let extra = ["--data-dir", data, "--http", "http://127.0.0.1:0"]
        var node = try NodeProcess(name: "quarantine", extra: extra)
        defer { node.stop() }
        for room in ["good", "bad"] {
            let teacher = LifetimeNodeTests.client("teacher", .teacher, [node], room: room)
            try teacher.connect()
            _ = try teacher.write(.setRoomName("room \(room)"))
            teacher.close()
        }
        node.stop()
        // Damage what the store holds for one room: its snapshot and its log entries.
        let database = try SQLiteDatabase(path: data + "/homeroom.sqlite3")
        for sql in ["UPDATE rooms SET snapshot = x'0aff' WHERE room = 'bad'", "UPDATE log SET bytes = x'0aff' WHERE room = 'bad'"] {
            try database.execute(sql, "damage the bad room")
        }

        node = try NodeProcess(name: "quarantine", extra: extra)
        let health = node.get("/healthz")?.body ?? ""
        #expect(health.contains("\"quarantined\":[{\"room\":\"bad\""), "healthz: \(health)")
        #expect(node.metric("homeroom_rooms_quarantined") == 1)
        #expect(node.log.contains("room quarantined"))
        let good = LifetimeNodeTests.client("watcher", .observer, [node], room: "good")
        defer { good.close() }
        try good.connect()
        #expect(good.replica.name.value == "room good", "the healthy room was not served")
        let raw = try LifetimeNodeTests.RawClient(node.listen)
        let refused = try raw.join(room: "bad", user: "watcher", session: "w-1", role: .observer)
        guard case let .error(error) = refused.message else {
            Issue.record("the quarantined room was served: \(refused.message)")
            return
        }
        #expect(error.code == "unavailable" && error.message.contains("quarantined"), "\(error)")
    }

    @Test func aQuarantinedRoomIsRecoveredFromAPeer() throws {
        let data = LifetimeNodeTests.temporaryDirectory("recover")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let peer = try NodeProcess(name: "recover-peer")
        defer { peer.stop() }
        let extra = ["--data-dir", data, "--http", "http://127.0.0.1:0"]
        var node = try NodeProcess(name: "recover", seeds: [peer.listen], extra: extra)
        defer { node.stop() }
        let teacher = LifetimeNodeTests.client("teacher", .teacher, [node], room: "broken")
        try teacher.connect()
        _ = try teacher.write(.setRoomName("room broken"))
        _ = try teacher.write(.reward(user: "teacher", amount: 5))
        teacher.close()
        let watcher = LifetimeNodeTests.client("watcher", .observer, [peer], room: "broken")
        defer { watcher.close() }
        try watcher.connect()
        #expect(eventually(10) { watcher.replica.users["teacher"]?.rewardTotal == 5 }, "the peer never got the room")
        node.stop()
        let database = try SQLiteDatabase(path: data + "/homeroom.sqlite3")
        for sql in ["UPDATE rooms SET snapshot = x'0aff' WHERE room = 'broken'", "UPDATE log SET bytes = x'0aff' WHERE room = 'broken'"] {
            try database.execute(sql, "damage the room")
        }

        node = try NodeProcess(name: "recover", seeds: [peer.listen], extra: extra)
        #expect(eventually(10) { node.metric("homeroom_rooms_recovered_total") == 1 }, "not recovered; log: \(node.log)")
        #expect(node.log.contains("room quarantined") && node.log.contains("recovered from a peer"))
        #expect(node.get("/healthz")?.body.contains("\"quarantined\":[]") == true)
        // Served again, with what the peer held, and writable: its writes reach the peer.
        let back = LifetimeNodeTests.client("teacher", .teacher, [node], room: "broken")
        defer { back.close() }
        try back.connect()
        #expect(back.replica.name.value == "room broken")
        _ = try back.write(.reward(user: "teacher", amount: 1))
        #expect(eventually(10) { watcher.replica.users["teacher"]?.rewardTotal == 6 }, "a write after the recovery did not reach the peer")
    }
}

/// Author counters: unique per client instance, and a DUPLICATE for a write this
/// client never sent is an error, not a success.
@Suite(.serialized) struct AuthorCounterTests {
    @Test func twoInstancesStartedInTheSameMillisecondNeverShareACounter() {
        let now = WallClock.nowMillis()
        let first = AuthorCounter.initial(nowMillis: now), second = AuthorCounter.initial(nowMillis: now)
        #expect(AuthorCounter.tag(of: first) != AuthorCounter.tag(of: second))
        // Their counters never meet, however many writes each makes.
        let a = Set((1...1_000).map { first + UInt64($0) * AuthorCounter.stride })
        let b = Set((1...1_000).map { second + UInt64($0) * AuthorCounter.stride })
        #expect(a.isDisjoint(with: b))
        #expect(first < UInt64(1) << 63, "counters stay below 2^63")
    }

    @Test func aDuplicateForAWriteThisClientNeverSentIsAnError() throws {
        let cluster = try TestCluster(size: 1, label: "dup-counter")
        let teacher = cluster.client("teacher", .teacher, node: 0, room: "dup")
        defer { teacher.close() }
        try teacher.connect()
        _ = try teacher.write(.reward(user: "teacher", amount: 1))
        // Another client of the teacher takes the counter this one will use next.
        let next = teacher.state.withLock { $0.writeCounter } + AuthorCounter.stride
        let other = cluster.nodes[0].submit(room: "dup", Write(author: "teacher", authorRole: .teacher, authorCounter: next,
                                                               operation: .reward(user: "teacher", amount: 1)))
        #expect(other.status == .accepted)
        do {
            _ = try teacher.write(.reward(user: "teacher", amount: 1))
            Issue.record("a DUPLICATE for a write this client never sent was taken as done")
        } catch {
            guard case let .refused(code, _) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(code == "duplicate-counter")
        }
    }
}

/// A node that restarts without a store gets a new replica id each time; the newest
/// retires the older ones, so a room keeps nothing per store a node ever had.
@Suite(.serialized) struct ReplicaRetirementTests {
    @Test func restartsWithoutAStoreLeaveNothingBehindAndLoseNoReward() throws {
        let tune: (inout NodeConfig) -> Void = { $0.rewardWindowMillis = 1_000; $0.maxClockDriftMillis = 1_000 }
        let cluster = try TestCluster(size: 3, label: "retire") { _, config in tune(&config) }
        #expect(cluster.meshed())
        let bob = cluster.client("bob", .student, node: 0, room: "semester")
        defer { bob.close() }
        try bob.connect()
        var acknowledged: Int64 = 0
        var earlier: [ReplicaID] = []
        for _ in 0..<4 {
            let node = cluster.nodes[2]
            let teacher = cluster.client("tina", .teacher, node: 2, room: "semester")
            try teacher.connect()
            #expect(eventually(10) { teacher.replica.users["bob"]?.isKnown == true }, "the teacher's node never heard of bob")
            for _ in 0..<3 {
                _ = try teacher.write(.reward(user: "bob", amount: 1))
                acknowledged += 1
            }
            #expect(eventually(10) { cluster.nodes.allSatisfy { $0.room("semester")?.users["bob"]?.rewardTotal == acknowledged } })
            teacher.close()
            earlier.append(node.replica)
            node.stop()
            cluster.nodes.remove(at: 2)
            try cluster.add(name: node.name, configure: tune)
        }
        let newest = cluster.nodes[2].replica
        #expect(earlier.allSatisfy { newest.supersedes($0) })
        // What the old stores wrote last stands (tina's name and role, from her joins through
        // them) and keeps their version-vector entries: her last join is through the newest.
        let last = cluster.client("tina", .teacher, node: 2, room: "semester")
        defer { last.close() }
        try last.connect()
        let live = Set(cluster.nodes.map(\.replica))
        func leftovers(_ room: RoomState) -> [String] {
            var found: [String] = []
            for origin in room.seen.origins.keys where !live.contains(origin.nodeForm) { found.append("seen \(origin)") }
            for replica in room.deadIncarnations.keys where !live.contains(replica) { found.append("dead mark \(replica)") }
            for (user, record) in room.users {
                for session in record.sessions where !live.contains(session.host) { found.append("\(user) session on \(session.host)") }
                for origin in record.rewardFloors.keys where !live.contains(origin) { found.append("\(user) reward floor of \(origin)") }
                for origin in record.sessionFloors.keys where !live.contains(origin) { found.append("\(user) session floor of \(origin)") }
            }
            return found
        }
        let clean = eventually(40) {
            cluster.nodes.allSatisfy { node in node.room("semester").map { leftovers($0).isEmpty } ?? false }
        }
        #expect(clean, "state of retired stores is left: \(cluster.nodes.map { $0.room("semester").map(leftovers) ?? ["no room"] }); the retirement: \(cluster.nodes[2].retirementPlans())")
        #expect(cluster.nodes.allSatisfy { $0.room("semester")?.users["bob"]?.rewardTotal == acknowledged },
                "reward totals after the retirements: \(cluster.nodes.map { $0.room("semester")?.users["bob"]?.rewardTotal ?? -1 }) of \(acknowledged)")
        #expect(eventually(10) { bob.replica.users["bob"]?.rewardTotal == acknowledged })
        #expect((cluster.nodes[2].metrics["replica_retirements_total"] ?? 0) >= 1)
        #expect(cluster.converged(room: "semester"))
    }
}

/// Two node names whose replica ids share one name hash: each node reports it, and
/// neither retires the other's store as if it were an older one of its own name.
@Suite(.serialized) struct ReplicaNameCollisionTests {
    static func collidingNames() -> (String, String) {
        var seen: [UInt32: String] = [:]
        for index in 0..<200_000 {
            let name = "collide-\(index)"
            let hash = ReplicaID.nameHash(of: name)
            if let other = seen[hash] { return (other, name) }
            seen[hash] = name
        }
        fatalError("no two of 200,000 names share a 24-bit hash")
    }

    @Test func collidingNamesAreReportedAndRetireNothing() throws {
        let (first, second) = Self.collidingNames()
        #expect(ReplicaID.nameHash(of: first) == ReplicaID.nameHash(of: second) && first != second)
        let cluster = try TestCluster(size: 0, label: "collide")
        try cluster.add(name: first)
        try cluster.add(name: second)
        #expect(cluster.meshed())
        let teacher = cluster.client("tina", .teacher, node: 0, room: "collide")
        try teacher.connect()
        _ = try teacher.write(.reward(user: "tina", amount: 1))
        teacher.close()
        #expect(eventually(10) { cluster.nodes.allSatisfy { ($0.metrics["replica_name_collisions_total"] ?? 0) == 1 } },
                "collisions reported: \(cluster.nodes.map { $0.metrics["replica_name_collisions_total"] ?? 0 })")
        // The first name restarts without a store: its old id is a predecessor, and the
        // second node's live id, made later, looks like one too by its hash.
        let old = cluster.nodes[0]
        old.stop()
        cluster.nodes.remove(at: 0)
        try cluster.add(name: first)
        let renewed = cluster.nodes[1]
        #expect(renewed.replica.supersedes(cluster.nodes[0].replica), "the second node's id should look older by its hash")
        #expect(eventually(10) {
            renewed.retirementPlans().values.contains { plan in
                if case let .waiting(why) = plan { return why.contains("name hash") } else { return false }
            }
        }, "plans: \(renewed.retirementPlans())")
        Thread.sleep(forTimeInterval: 1.5)
        #expect((renewed.metrics["replica_retirements_total"] ?? 0) == 0)
        #expect(cluster.nodes.allSatisfy { node in node.room("collide").map { !$0.isRetired(cluster.nodes[0].replica) } ?? false })
        #expect(cluster.nodes[0].metrics["wedged_total"] ?? 0 == 0)
    }
}
