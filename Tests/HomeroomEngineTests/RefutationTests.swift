import Testing
import HomeroomCore
@testable import HomeroomEngine

/// Refutation's decisions, without a node: when this node's current incarnation is
/// declared down, which sessions it writes again under which incarnation; and which
/// copies end once their client's own session has.
@Suite struct RefutationTests {
    static let room = NodeEngineTests.room
    static let now = NodeEngineTests.now

    static func system(_ operation: HomeroomCore.Operation, at engine: inout NodeEngine) {
        guard let stamped = engine.stampSystemWrite(room: room, Write(author: "node:x", authorRole: .system, authorCounter: 0, operation: operation),
                                                    nowMillis: now) else { Issue.record("no stamp for \(operation)"); return }
        _ = engine.commit(stamped)
    }

    @Test func aDeclaredDownNodeCopiesItsLiveSessionsUnderANewIncarnation() throws {
        var engine = NodeEngine(replica: ReplicaID(name: "node-a"))
        engine.liveIncarnation(1, sinceMillis: Self.now)
        for (user, role) in [("t", Role.teacher), ("alice", .student), ("bob", .student)] {
            NodeEngineTests.write(NodeEngineTests.join(user, role, at: engine), at: &engine)
        }
        // Someone else's session (another host) and a kicked student: not this node's to copy.
        Self.system(.joinSession(user: "dora", session: "dora#1", name: "Dora", role: .student, host: ReplicaID(name: "node-b"), incarnation: 1), at: &engine)
        NodeEngineTests.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .kick(user: "bob")), at: &engine)
        let early = engine.refutation(nowMillis: Self.now)
        #expect(early == nil, "nobody declared this node down")

        Self.system(.replicaDown(replica: engine.replica, incarnation: 1), at: &engine)
        #expect(engine.rooms[Self.room]?.isOnline("alice") == false)
        let declared = engine.refutation(nowMillis: Self.now + 5)
        let refutation = try #require(declared)
        #expect(refutation.declared == 1)
        #expect(refutation.next == Self.now + 5, "at least now, so it also orders after a restart")
        #expect(refutation.copies.map(\.user) == ["alice", "t"])
        #expect(refutation.copies.map(\.copy) == ["alice#1~r\(Self.now + 5)", "t#1~r\(Self.now + 5)"])
        #expect(refutation.copies.allSatisfy { $0.original == SessionIDs.base($0.copy) })

        engine.liveIncarnation(refutation.next, sinceMillis: Self.now + 5)
        for copy in refutation.copies { Self.system(copy.operation, at: &engine) }
        let afterwards = engine.refutation(nowMillis: Self.now + 6)
        #expect(afterwards == nil, "refuted: the new incarnation is alive")
        #expect(engine.rooms[Self.room]?.isOnline("alice") == true)
        #expect(engine.rooms[Self.room]?.isOnline("bob") == false)
        let none = engine.orphanedCopies()
        #expect(none.isEmpty)

        // Alice leaves (her client names its own session): the copy must end too.
        NodeEngineTests.write(Write(author: "alice", authorRole: .student, authorCounter: 3, operation: .leaveSession(user: "alice", session: "alice#1")), at: &engine)
        let orphans = engine.orphanedCopies()
        #expect(orphans.map(\.session) == ["alice#1~r\(Self.now + 5)"])
        // Only changed rooms are looked at, but an orphan found stays found until it ends
        // (its leave may have failed): the room has not changed since.
        let again = engine.orphanedCopies()
        #expect(again.map(\.session) == orphans.map(\.session))
        for orphan in orphans { Self.system(.leaveSession(user: orphan.user, session: orphan.session), at: &engine) }
        let ended = engine.orphanedCopies()
        #expect(ended.isEmpty)
        #expect(engine.rooms[Self.room]?.isOnline("alice") == false)
        #expect(engine.rooms[Self.room]?.isOnline("t") == true)
    }

    @Test func theNextIncarnationIsAboveEveryOneMarkedDead() throws {
        var engine = NodeEngine(replica: ReplicaID(name: "node-a"))
        engine.liveIncarnation(5, sinceMillis: 0)
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        Self.system(.replicaDown(replica: engine.replica, incarnation: 9), at: &engine)
        let declared = engine.refutation(nowMillis: 3)
        let refutation = try #require(declared)
        #expect(refutation.next == 10)
    }
}
