import Testing
import HomeroomCore
@testable import HomeroomEngine

/// The engine's session leases and reclaim, without a node: what a sync renews, what
/// runs out, what a refutation's copy and a reclaimed session inherit.
@Suite struct SessionLeaseEngineTests {
    static let room = NodeEngineTests.room
    static let now = NodeEngineTests.now
    static let timeout: UInt64 = 10_000

    /// An engine at incarnation 1 with `users` joined here (sessions "<user>#1").
    static func engine(_ users: [UserID], timeout: UInt64 = timeout) -> NodeEngine {
        var policy = EnginePolicy()
        policy.sessionTimeoutMillis = timeout
        var engine = NodeEngine(replica: ReplicaID(4), policy: policy)
        engine.liveIncarnation(1, sinceMillis: now)
        for user in users {
            NodeEngineTests.write(NodeEngineTests.join(user, .student, at: engine), at: &engine)
            engine.startLease(room: room, session: "\(user)#1", user: user, nowMillis: 0)
        }
        return engine
    }

    static func system(_ operation: Operation, at engine: inout NodeEngine, now: UInt64 = now + 100) {
        guard let stamped = engine.stampSystemWrite(room: room, Write(author: "node", authorRole: .system, authorCounter: 0, operation: operation),
                                                    nowMillis: now) else {
            Issue.record("the engine did not stamp \(operation)")
            return
        }
        _ = engine.commit(stamped)
    }

    /// The engine refutes a declaration of its incarnation as the shell does: moves on,
    /// writes the copies, and each copy takes its original's lease (or one from `leaseNow`).
    static func refute(_ engine: inout NodeEngine, leaseNow: UInt64) throws -> NodeEngine.Refutation {
        let declared = engine.refutation(nowMillis: now + 200)
        let refutation = try #require(declared)
        engine.liveIncarnation(refutation.next, sinceMillis: now + 200)
        for copy in refutation.copies {
            system(copy.operation, at: &engine, now: now + 300)
            engine.carryLease(room: copy.room, from: copy.original, to: copy.copy, user: copy.user, nowMillis: leaseNow)
        }
        return refutation
    }

    @Test func aSessionWhoseClientStopsSyncingEndsAndOnlyThatOne() {
        // amy syncs every 3 s, and each sync renews: her lease never runs out between them.
        var syncing = Self.engine(["amy"])
        var lapsedEarly: [String] = []
        for time in stride(from: UInt64(3_000), through: 30_000, by: 3_000) {
            syncing.renewLease(room: Self.room, session: "amy#1", user: "amy", nowMillis: time)
            lapsedEarly += syncing.expiredLeases(nowMillis: time + Self.timeout).map(\.session)
        }
        #expect(lapsedEarly.isEmpty)
        let afterLastSync = syncing.expiredLeases(nowMillis: 30_000 + Self.timeout + 1)
        #expect(afterLastSync.map(\.session) == ["amy#1"])

        // bob never syncs: his lease runs out at the timeout, and only his.
        var engine = Self.engine(["bob", "cid"])
        engine.renewLease(room: Self.room, session: "cid#1", user: "cid", nowMillis: 9_000)
        let tooEarly = engine.expiredLeases(nowMillis: Self.timeout)
        #expect(tooEarly.isEmpty, "not past the timeout yet")
        let expired = engine.expiredLeases(nowMillis: Self.timeout + 1)
        #expect(expired.map(\.session) == ["bob#1"])
        // Until the leave is applied (a leave the store failed to take) it is asked for
        // again, once the retry interval has passed (not on every pass).
        let tooSoon = engine.expiredLeases(nowMillis: Self.timeout + 2)
        #expect(tooSoon.isEmpty)
        let notWrittenYet = engine.expiredLeases(nowMillis: Self.timeout + 1 + engine.leaseRetryMillis)
        #expect(notWrittenYet.map(\.session) == ["bob#1"])
        Self.system(.leaveSession(user: "bob", session: "bob#1"), at: &engine)
        // A sync naming the ended session does not bring its lease back.
        engine.renewLease(room: Self.room, session: "bob#1", user: "bob", nowMillis: 17_000)
        #expect(engine.leasedSessions == 1)
        let later = engine.expiredLeases(nowMillis: 9_000 + Self.timeout + 1)
        #expect(later.map(\.session) == ["cid#1"], "bob's lease is gone with his session")
    }

    @Test func noLeasesWithoutATimeout() {
        var engine = Self.engine(["amy"], timeout: 0)
        #expect(engine.leasedSessions == 0)
        let noneWithoutTimeout = engine.expiredLeases(nowMillis: .max)
        #expect(noneWithoutTimeout.isEmpty)
    }

    @Test func aLeaseOfASessionAlreadyOverGoesWithoutALeave() {
        var engine = Self.engine(["amy"])
        Self.system(.leaveSession(user: "amy", session: "amy#1"), at: &engine)
        let nothingDue = engine.expiredLeases(nowMillis: Self.timeout + 1)
        #expect(nothingDue.isEmpty)
        #expect(engine.leasedSessions == 0)
        #expect(!engine.holdsLeases(in: Self.room))
    }

    @Test func aClientNamingNoSessionRenewsEveryLeaseOfItsUser() {
        var engine = Self.engine(["amy", "bob"])
        engine.renewLease(room: Self.room, session: "", user: "amy", nowMillis: 9_000)
        let unrenewed = engine.expiredLeases(nowMillis: Self.timeout + 1)
        #expect(unrenewed.map(\.user) == ["bob"])
    }

    @Test func aSyncGivesALeaseBackOnlyToALiveSessionOfThisIncarnationHostedHere() {
        // The shell's leases are memory: rebuilt over the same rooms and incarnation, none.
        let before = Self.engine(["amy"])
        var engine = NodeEngine(replica: before.replica, rooms: before.rooms, policy: before.policy)
        engine.liveIncarnation(1, sinceMillis: Self.now)
        #expect(engine.leasedSessions == 0)
        // A session another node hosts, or one that does not exist, gets none.
        engine.renewLease(room: Self.room, session: "nobody#1", user: "amy", nowMillis: 20_000)
        #expect(engine.leasedSessions == 0)
        // Its own live session (as after a lease lost with a restart of the shell's memory) does.
        engine.renewLease(room: Self.room, session: "amy#1", user: "amy", nowMillis: 20_000)
        #expect(engine.leasedSessions == 1)
    }

    @Test func aRefutationsCopyOfAVanishedClientLapsesLikeIt() throws {
        var engine = Self.engine(["amy", "bob"])
        // Declared down while alive: the copies take over the leases.
        Self.system(.replicaDown(replica: engine.replica, incarnation: 1), at: &engine)
        let refutation = try Self.refute(&engine, leaseNow: 5_000)
        #expect(refutation.copies.count == 2)
        // amy's client keeps naming its original session: the sync renews the copy's lease.
        let renewedThroughOriginal = engine.reclaim(room: Self.room, session: "amy#1", user: "amy", nowMillis: 8_000)
        #expect(renewedThroughOriginal == nil)
        let expired = engine.expiredLeases(nowMillis: Self.timeout + 1)
        #expect(expired.map(\.user) == ["bob"], "bob's copy lapses; amy's was renewed through her original")
        #expect(expired.first?.session == SessionIDs.copy(of: "bob#1", incarnation: refutation.next))
    }

    @Test func aClientAttachedAcrossARestartIsReclaimedOnceWithALease() throws {
        let before = Self.engine(["amy"])
        // The node restarts (a new incarnation, leases gone with its memory) and ends the old sessions.
        var engine = NodeEngine(replica: before.replica, rooms: before.rooms, policy: before.policy)
        engine.liveIncarnation(2, sinceMillis: Self.now + 50)
        Self.system(.replicaDown(replica: engine.replica, incarnation: 1), at: &engine)
        #expect(engine.leasedSessions == 0)
        #expect(engine.rooms[Self.room]?.isOnline("amy") == false)
        // amy's client syncs naming its session: reclaimed under incarnation 2, leased.
        let reclaimed = engine.reclaim(room: Self.room, session: "amy#1", user: "amy", nowMillis: 1_000)
        let copy = try #require(reclaimed)
        #expect(copy.copy == SessionIDs.copy(of: "amy#1", incarnation: 2))
        #expect(copy.original == "amy#1")
        Self.system(copy.operation, at: &engine)
        #expect(engine.rooms[Self.room]?.isOnline("amy") == true)
        #expect(engine.leasedSessions == 1)
        // The next syncs renew it through the original; nothing is written again.
        let renewedAgain = engine.reclaim(room: Self.room, session: "amy#1", user: "amy", nowMillis: 9_000)
        #expect(renewedAgain == nil)
        let stillLeased = engine.expiredLeases(nowMillis: 1_000 + Self.timeout + 1)
        #expect(stillLeased.isEmpty)
        // Once its lease ran out the copy ends, and the same copy is not reclaimed again: the client must join.
        let lapsed = engine.expiredLeases(nowMillis: 9_000 + Self.timeout + 1)
        #expect(lapsed.map(\.session) == [copy.copy])
        Self.system(.leaveSession(user: "amy", session: copy.copy), at: &engine, now: Self.now + 200)
        let notReclaimedAgain = engine.reclaim(room: Self.room, session: "amy#1", user: "amy", nowMillis: 30_000)
        #expect(notReclaimedAgain == nil)
        #expect(engine.rooms[Self.room]?.isOnline("amy") == false)
    }

    @Test func aBannedOrKickedClientIsNotReclaimed() throws {
        let before = Self.engine(["amy", "bob", "cid"])
        var engine = NodeEngine(replica: before.replica, rooms: before.rooms, policy: before.policy)
        engine.liveIncarnation(2, sinceMillis: Self.now + 50)
        Self.system(.replicaDown(replica: engine.replica, incarnation: 1), at: &engine)
        Self.system(.ban(user: "amy"), at: &engine, now: Self.now + 150)
        Self.system(.kick(user: "bob"), at: &engine, now: Self.now + 160)
        let bannedReclaim = engine.reclaim(room: Self.room, session: "amy#1", user: "amy", nowMillis: 1_000)
        #expect(bannedReclaim == nil)
        let kickedReclaim = engine.reclaim(room: Self.room, session: "bob#1", user: "bob", nowMillis: 1_000)
        #expect(kickedReclaim == nil)
        #expect(engine.leasedSessions == 0)
        // The same restart reclaims a client neither banned nor kicked (so the refusals above are theirs).
        let control = engine.reclaim(room: Self.room, session: "cid#1", user: "cid", nowMillis: 1_000)
        #expect(control?.user == "cid")
    }

    /// Declared down while its lease ran out: the lease stays until the refutation has
    /// copied the session, so the copy of a vanished client lapses too; a copy whose
    /// original held no lease gets one from the refutation on.
    @Test func aDeclarationDownKeepsTheLeaseForTheRefutationsCopy() throws {
        var engine = Self.engine(["amy"])
        engine.leases[Self.room] = nil
        NodeEngineTests.write(NodeEngineTests.join("bob", .student, at: engine), at: &engine)
        engine.startLease(room: Self.room, session: "bob#1", user: "bob", nowMillis: 0)
        Self.system(.replicaDown(replica: engine.replica, incarnation: 1), at: &engine)
        // bob's lease ran out while his session is only marked dead: it is asked to end, and kept.
        let due = engine.expiredLeases(nowMillis: Self.timeout + 1)
        #expect(due.map(\.session) == ["bob#1"])
        #expect(engine.holdsLeases(in: Self.room))
        let refutation = try Self.refute(&engine, leaseNow: 20_000)
        #expect(refutation.copies.map(\.user).sorted() == ["amy", "bob"])
        // bob's copy keeps his old lease (lapsed); amy's, whose original had none, runs from the refutation.
        let lapsed = engine.expiredLeases(nowMillis: 20_001)
        #expect(lapsed.map(\.user) == ["bob"])
        let later = engine.expiredLeases(nowMillis: 20_000 + Self.timeout + 1)
        #expect(Set(later.map(\.user)) == ["amy", "bob"])
    }
}
