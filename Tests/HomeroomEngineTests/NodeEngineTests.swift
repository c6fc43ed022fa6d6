import Testing
import HomeroomCore
@testable import HomeroomEngine

/// The node's policy without a node: admission, numbering, the store-then-commit
/// pipeline, restarts, remote deltas and patches.
@Suite struct NodeEngineTests {
    static let room = "engine-room"
    static let now: UInt64 = 1_800_000_000_000

    static func join(_ user: UserID, _ role: Role, at engine: NodeEngine, counter: UInt64 = 1) -> Write {
        Write(author: user, authorRole: role, authorCounter: counter,
              operation: .joinSession(user: user, session: "\(user)#1", name: user, role: role, host: engine.replica, incarnation: 1))
    }

    /// Decides and commits (the store always takes it); fails the test when the write is answered.
    @discardableResult
    static func write(_ write: Write, at engine: inout NodeEngine, room: String = room, now: UInt64 = now) -> CommittedWrite? {
        guard case let .persist(stamped) = engine.decide(room: room, write, nowMillis: now) else { return nil }
        return engine.commit(stamped)
    }

    static func answer(_ write: Write, at engine: NodeEngine, room: String = room) -> WriteOutcome? {
        if case let .answer(outcome) = engine.decide(room: room, write, nowMillis: now) { return outcome }
        return nil
    }

    @Test func aWriteTheStoreRefusedConsumesNoNumber() throws {
        var engine = NodeEngine(replica: ReplicaID(7))
        let first = engine.decide(room: Self.room, Self.join("t", .teacher, at: engine), nowMillis: Self.now)
        guard case let .persist(lost) = first else { Issue.record("the join was answered: \(first)"); return }
        #expect(lost.delta.sequence == 1)
        // The store failed: nothing is committed, and the next write gets the same number.
        let again = engine.decide(room: Self.room, Self.join("t", .teacher, at: engine), nowMillis: Self.now + 1)
        guard case let .persist(stamped) = again else { Issue.record("the retry was answered: \(again)"); return }
        #expect(stamped.delta.sequence == 1)
        #expect(engine.rooms[Self.room] == nil, "a refused write must leave no room behind")
        let committed = engine.commit(stamped)
        #expect(committed.outcome.status == .accepted)
        #expect(committed.outcome.dot == Dot(origin: ReplicaID(7), sequence: 1))
        let next = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .setRoomName("Maths")), at: &engine))
        #expect(next.delta.sequence == 2)
    }

    /// The shell stores a write outside its state lock, one write in flight per room: a
    /// write of another room may be stamped and committed meanwhile. The clock must not
    /// run back when the earlier-stamped write commits last, or a room's next write
    /// repeats a reading of this origin.
    @Test func aWriteCommittedAfterAnotherRoomsLaterWriteLeavesTheClockAhead() throws {
        var engine = NodeEngine(replica: ReplicaID(5))
        Self.write(Self.join("t", .teacher, at: engine), at: &engine, room: "a")
        Self.write(Self.join("t", .teacher, at: engine), at: &engine, room: "b")
        let rename = { (name: String, counter: UInt64) in
            Write(author: "t", authorRole: .teacher, authorCounter: counter, operation: .setRoomName(name))
        }
        guard case let .persist(inA) = engine.decide(room: "a", rename("Early", 2), nowMillis: Self.now + 100),
              case let .persist(inB) = engine.decide(room: "b", rename("Later", 2), nowMillis: Self.now + 200) else {
            Issue.record("a rename was answered"); return
        }
        let firstInB = engine.commit(inB)
        engine.commit(inA)
        let secondInB = try #require(Self.write(rename("Again", 3), at: &engine, room: "b", now: Self.now + 200))
        #expect(secondInB.delta.clock > firstInB.delta.clock, "room b's second write must read the clock later than its first")
        #expect(secondInB.delta.sequence == firstInB.delta.sequence + 1)
        let nextInA = try #require(Self.write(rename("Next", 3), at: &engine, room: "a", now: Self.now + 100))
        #expect(nextInA.delta.clock > firstInB.delta.clock)
    }

    @Test func aRestartNumbersAboveEverythingTheStoreHolds() throws {
        var engine = NodeEngine(replica: ReplicaID(3))
        Self.write(Self.join("t", .teacher, at: engine), at: &engine)
        Self.write(Self.join("s", .student, at: engine), at: &engine)
        Self.write(Write(author: "s", authorRole: .student, authorCounter: 2,
                         operation: .sendPeerMessage(to: "t", type: "note", payload: [1], previous: 0)), at: &engine)
        #expect(engine.roomSequences[Self.room] == 2)
        #expect(engine.privateSequences[Self.room] == 1)
        // Booted again on what the store holds.
        var restarted = NodeEngine(replica: ReplicaID(3), rooms: engine.rooms)
        let public_ = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 3, operation: .setRoomName("Art")), at: &restarted))
        #expect(public_.delta.dot == Dot(origin: ReplicaID(3), sequence: 3))
        let peer = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 4,
                                                 operation: .sendPeerMessage(to: "s", type: "note", payload: [2], previous: 0)), at: &restarted))
        #expect(peer.delta.dot == Dot(origin: ReplicaID(3).privateForm, sequence: 2))
    }

    @Test func clientWritesAreAdmittedAsTheNodeAdmitsThem() throws {
        var engine = NodeEngine(replica: ReplicaID(1), policy: EnginePolicy(maxRooms: 1, maxUsersPerRoom: 2))
        #expect(Self.answer(Write(author: "s", authorRole: .student, authorCounter: 1, operation: .setHand(user: "s", raised: true)), at: engine)?.code == "not-joined")
        #expect(Self.answer(Write(author: "x", authorRole: .system, authorCounter: 1, operation: .setRoomName("x")), at: engine)?.code == "not-allowed")
        Self.write(Self.join("t", .teacher, at: engine), at: &engine)
        Self.write(Self.join("s", .student, at: engine), at: &engine)
        #expect(Self.answer(Self.join("s", .teacher, at: engine), at: engine)?.code == "role-mismatch")
        #expect(Self.answer(Self.join("u", .student, at: engine), at: engine)?.code == "room-full")
        #expect(Self.answer(Self.join("t", .teacher, at: engine), at: engine, room: "another-room")?.code == "node-full")
        #expect(Self.answer(Write(author: "s", authorRole: .student, authorCounter: 3, operation: .setStage(user: "s", on: true)), at: engine)?.status == .rejected)
        // A retried reward is answered DUPLICATE with the first delta's dot, not counted again.
        let reward = Write(author: "t", authorRole: .teacher, authorCounter: 9, operation: .reward(user: "s", amount: 2, issuedAtMillis: Self.now))
        let first = try #require(Self.write(reward, at: &engine))
        let retry = try #require(Self.answer(reward, at: engine))
        #expect(retry.status == .duplicate)
        #expect(retry.dot == first.delta.dot)
        #expect(engine.rooms[Self.room]?.users["s"]?.rewardTotal == 2)
    }

    @Test func aRemoteDeltaWithAClockBeyondTheLimitIsNotRecorded() throws {
        var origin = NodeEngine(replica: ReplicaID(1))
        let far = try #require(Self.write(Self.join("t", .teacher, at: origin), at: &origin, now: Self.now + 3_600_000)).delta
        var near = NodeEngine(replica: ReplicaID(2), policy: EnginePolicy(maxClockDriftMillis: 60_000))
        let refused = near.applyRemote(room: Self.room, [far], origin: ReplicaID(1), nowMillis: Self.now)
        #expect(refused.rejectedClock == 1 && refused.fresh.isEmpty)
        #expect(near.rooms[Self.room]?.seen.contains(far.dot) != true, "a refused delta must not be marked seen, or anti-entropy never offers it again")
        var other = NodeEngine(replica: ReplicaID(3))
        Self.write(Self.join("a", .assistant, at: other), at: &other)
        let second = try #require(Self.write(Write(author: "a", authorRole: .assistant, authorCounter: 2, operation: .setRoomName("x")), at: &other)).delta
        let gap = near.applyRemote(room: Self.room, [second], origin: ReplicaID(3), nowMillis: Self.now)
        #expect(gap.fresh.count == 1 && gap.needsPull, "a delta after a hole asks for a pull")
    }

    /// The store missed a remote delta; a patch appended after it would claim it (its vector
    /// covers the dot) without holding it, and a restart would never pull it again.
    @Test func afterAMissedAppendNoPatchIsStoredUntilASnapshotIs() throws {
        var origin = NodeEngine(replica: ReplicaID(1))
        let join = try #require(Self.write(Self.join("t", .teacher, at: origin), at: &origin)).delta
        let name = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .setRoomName("Maths")), at: &origin)).delta
        var replica = NodeEngine(replica: ReplicaID(2))
        var durable = RoomState(roomID: Self.room)
        // The join arrives and is applied, but its append fails.
        #expect(replica.applyRemote(room: Self.room, [join], origin: ReplicaID(1), nowMillis: Self.now).fresh.count == 1)
        replica.storeMissed(room: Self.room)
        // The rest comes by a patch cut against what this replica holds in memory.
        let patch = origin.rooms[Self.room]!.missing(since: replica.rooms[Self.room]!.seen)
        #expect(replica.merge(room: Self.room, patch).changed)
        #expect(!replica.appendsPatches(room: Self.room))
        // Appended anyway, the store would hold the patch's vector over the missed join.
        var wrong = durable
        wrong.merge(patch)
        #expect(wrong.seen.contains(join.dot) && wrong.users["t"]?.isKnown != true, "the hazard this policy avoids")
        // Not appended: a restart on the store pulls the join again.
        var restarted = NodeEngine(replica: ReplicaID(2), rooms: [Self.room: durable])
        let repair = origin.rooms[Self.room]!.missing(since: restarted.rooms[Self.room]!.seen)
        _ = restarted.merge(room: Self.room, repair)
        #expect(restarted.rooms[Self.room] == origin.rooms[Self.room])
        #expect(restarted.rooms[Self.room]?.seen.contains(name.dot) == true)
        // A snapshot of the whole room stored: patches are appended again.
        durable = replica.rooms[Self.room]!
        replica.snapshotStored(room: Self.room)
        #expect(replica.appendsPatches(room: Self.room))
        #expect(durable == origin.rooms[Self.room])
    }

    /// A snapshot is taken under the lock and stored later: a miss in between is not in
    /// it, so storing it must leave the room behind (and clear only earlier misses).
    @Test func aSnapshotTakenBeforeAMissDoesNotCoverIt() {
        var engine = NodeEngine(replica: ReplicaID(2))
        engine.storeMissed(room: Self.room)
        let taken = engine.snapshotMark
        engine.storeMissed(room: Self.room)
        engine.storeMissed(room: "other")
        engine.snapshotStored(room: Self.room, takenAt: taken)
        #expect(!engine.appendsPatches(room: Self.room), "the second miss came after the snapshot was taken")
        let retaken = engine.snapshotMark
        engine.snapshotStored(room: Self.room, takenAt: retaken)
        #expect(engine.appendsPatches(room: Self.room))
        #expect(!engine.appendsPatches(room: "other"), "a snapshot of one room covers no other")
    }

    /// A patch merged while the room is behind is not appended, and is a miss of its own:
    /// a snapshot copied before that merge (its encode outside the lock) does not hold
    /// the patch, so storing it must leave the room behind.
    @Test func aPatchSkippedWhileBehindOutlivesASnapshotCopiedBeforeIt() {
        var engine = NodeEngine(replica: ReplicaID(2))
        engine.storeMissed(room: Self.room)
        let copied = engine.snapshotMark
        #expect(!engine.appendsPatches(room: Self.room), "behind: the patch is not appended")
        // Merged without being stored: a miss of its own, as the shell reports it.
        engine.storeMissed(room: Self.room)
        engine.snapshotStored(room: Self.room, takenAt: copied)
        #expect(!engine.appendsPatches(room: Self.room), "the stored snapshot lacks the skipped patch")
        engine.snapshotStored(room: Self.room, takenAt: engine.snapshotMark)
        #expect(engine.appendsPatches(room: Self.room))
        #expect(engine.appendsPatches(room: Self.room))
    }

    @Test func aPatchHoldingThisNodesOwnWritesAboveItsNumberingMovesTheNumberingUp() throws {
        var old = NodeEngine(replica: ReplicaID(5))
        Self.write(Self.join("t", .teacher, at: old), at: &old)
        Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .setRoomName("a")), at: &old)
        // This node's store was put back from before those writes; a peer still holds them.
        var restored = NodeEngine(replica: ReplicaID(5))
        let merged = restored.merge(room: Self.room, old.rooms[Self.room]!.snapshot())
        #expect(merged.ownSequenceBehind?.ours == 0)
        #expect(merged.ownSequenceBehind?.theirs == 2)
        let next = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 3, operation: .setRoomName("b")), at: &restored))
        #expect(next.delta.sequence == 3)
    }

    /// A peer's clock pushed this node's ahead of its wall clock; after a restart the next
    /// write still stamps above the last one (or LWW would keep the older write).
    @Test func aRestartNeverStampsBelowTheNodesEarlierWrites() throws {
        var ahead = NodeEngine(replica: ReplicaID(2))
        let fast = try #require(Self.write(Self.join("a", .assistant, at: ahead), at: &ahead, now: Self.now + 30_000)).delta
        var engine = NodeEngine(replica: ReplicaID(1))
        _ = engine.applyRemote(room: Self.room, [fast], origin: ReplicaID(2), nowMillis: Self.now)
        Self.write(Self.join("t", .teacher, at: engine), at: &engine)
        let before = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .setRoomName("before")), at: &engine)).delta
        #expect(before.clock.millis >= Self.now + 30_000, "the clock observed the peer's")
        var restarted = NodeEngine(replica: ReplicaID(1), rooms: engine.rooms)
        let after = try #require(Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 3, operation: .setRoomName("after")), at: &restarted)).delta
        #expect(before.stamp < after.stamp)
        #expect(restarted.rooms[Self.room]?.name.value == "after")
    }

    /// Every replica judges an answer to an invitation by its stamp. A node whose clock
    /// a peer pushed ahead of its wall clock would stamp an accept made in time (by the
    /// wall clock) after the deadline: it refuses it, rather than acknowledging a write
    /// that then does nothing anywhere.
    @Test func anAnswerThatWouldBeStampedPastItsInvitationIsRefusedNotAcknowledged() throws {
        var ahead = NodeEngine(replica: ReplicaID(2))
        let fast = try #require(Self.write(Self.join("a", .assistant, at: ahead), at: &ahead, room: "other", now: Self.now + 30_000)).delta
        var engine = NodeEngine(replica: ReplicaID(1))
        Self.write(Self.join("t", .teacher, at: engine), at: &engine)
        Self.write(Self.join("s", .student, at: engine), at: &engine)
        Self.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .inviteToStage(user: "s", seconds: 5)), at: &engine)
        let accept = Write(author: "s", authorRole: .student, authorCounter: 2, operation: .answerInvitation(accept: true))
        // In time, and nothing pushed the clock: taken.
        var calm = engine
        #expect(Self.write(accept, at: &calm, now: Self.now + 1_000)?.outcome.status == .accepted)
        #expect(calm.rooms[Self.room]?.isOnStage("s") == true)
        // A peer's delta moves the clock 30 s ahead: the same accept is refused, and says why.
        _ = engine.applyRemote(room: "other", [fast], origin: ReplicaID(2), nowMillis: Self.now)
        guard case let .answer(outcome) = engine.decide(room: Self.room, accept, nowMillis: Self.now + 1_000) else {
            Issue.record("an accept that every replica would find late was acknowledged"); return
        }
        #expect(outcome.code == "invitation-expired")
    }

    /// A client gone with its node never ends its session: once the node is back (a new
    /// incarnation) and the reclaim grace has passed, the node folds it.
    @Test func sessionsOfACrashedIncarnationFoldAfterTheReclaimGrace() throws {
        var policy = EnginePolicy()
        policy.reclaimGraceMillis = 1_000
        var engine = NodeEngine(replica: ReplicaID(4), policy: policy)
        engine.liveIncarnation(1, sinceMillis: Self.now)
        Self.write(Self.join("t", .teacher, at: engine), at: &engine)
        // The node crashes; the restart ends its previous incarnation's sessions.
        var restarted = NodeEngine(replica: ReplicaID(4), rooms: engine.rooms, policy: policy)
        restarted.liveIncarnation(2, sinceMillis: Self.now + 10)
        restarted.noteEveryUserForFolding()
        let down = try #require(restarted.stampSystemWrite(room: Self.room, Write(author: "node", authorRole: .system, authorCounter: 0,
                                                                                  operation: .replicaDown(replica: ReplicaID(4), incarnation: 1)),
                                                          nowMillis: Self.now + 20))
        _ = restarted.commit(down)
        #expect(restarted.dueSessionFolds(nowMillis: Self.now + 500, recheckLater: true).isEmpty, "within the grace a client may still reclaim it")
        let folds = restarted.dueSessionFolds(nowMillis: Self.now + 6_000, recheckLater: true)
        #expect(folds.count == 1)
        guard let fold = folds.first, let stamped = restarted.stampSystemWrite(room: Self.room, Write(author: "node", authorRole: .system, authorCounter: 0, operation: fold.operation), nowMillis: Self.now + 6_000) else { return }
        _ = restarted.commit(stamped)
        #expect(restarted.rooms[Self.room]?.users["t"]?.sessions.isEmpty == true)
    }
}
