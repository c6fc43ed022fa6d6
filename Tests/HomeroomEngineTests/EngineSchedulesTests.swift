import Testing
import HomeroomCore
@testable import HomeroomEngine

/// The node's timing decisions that moved into the engine: compaction, closed rooms'
/// key epochs, rate limits.
@Suite struct EngineSchedulesTests {
    @Test func aLongLogOrAStoreBehindIsCompactedAtOnceAndEveryGrownLogOnAPass() {
        var schedule = CompactionSchedule()
        schedule.appended(room: "quiet")
        schedule.appended(room: "long", count: CompactionSchedule.longLog)
        schedule.appended(room: "behind")
        #expect(schedule.due(everyRoom: false) { $0 == "behind" } == ["behind", "long"])
        #expect(schedule.due(everyRoom: true) { _ in false } == ["behind", "long", "quiet"])
        #expect(schedule.logEntries == CompactionSchedule.longLog + 2)
        // A snapshot copied before two more appends covers only what it saw.
        schedule.appended(room: "quiet", count: 2)
        schedule.stored(room: "quiet", covered: 1)
        #expect(schedule.entries["quiet"] == 2)
        schedule.stored(room: "quiet", covered: 2)
        #expect(schedule.entries["quiet"] == nil)
        schedule.forget(room: "long")
        #expect(schedule.due(everyRoom: true) { _ in false } == ["behind"])
    }

    @Test func aHandedOffRoomLeavesTheCompactionSchedule() {
        var engine = NodeEngine(replica: ReplicaID(9))
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        engine.compactions.appended(room: NodeEngineTests.room)
        #expect(engine.handOff(room: NodeEngineTests.room) != nil)
        #expect(engine.compactions.entries.isEmpty)
    }

    @Test func kicksBansAndExpiriesRotateAClosedRoomsKeys() {
        var engine = NodeEngine(replica: ReplicaID(4))
        engine.topicKeys = TopicKeyEpochs(seals: true)
        let room = NodeEngineTests.room
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        NodeEngineTests.write(NodeEngineTests.join("s", .student, at: engine), at: &engine)
        #expect(engine.topicKeys.epoch(of: room) == 0)
        #expect(engine.topicKeys.gave(room: room, expiringAt: 1_000) == 0)
        NodeEngineTests.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .kick(user: "s")), at: &engine)
        #expect(engine.topicKeys.epoch(of: room) == 1, "a kick committed here rotates the keys")
        #expect(engine.topicKeys.takeRotations() == 1)
        #expect(engine.topicKeys.takeRotations() == 0)
        // The expiry noted before the kick went with its epoch; a new one rotates when due.
        #expect(engine.topicKeys.rotateExpired(nowSeconds: 5_000) == 0)
        _ = engine.topicKeys.gave(room: room, expiringAt: 2_000)
        _ = engine.topicKeys.gave(room: room, expiringAt: 3_000)
        #expect(engine.topicKeys.rotateExpired(nowSeconds: 1_999) == 0)
        #expect(engine.topicKeys.rotateExpired(nowSeconds: 2_000) == 1)
        #expect(engine.topicKeys.epoch(of: room) == 2)
        #expect(engine.topicKeys.takeRotations() == 0, "expiry rotations are counted where they happen")
        // A node that does not seal keeps no epochs.
        var open = TopicKeyEpochs(seals: false)
        open.rotate(room: room)
        #expect(open.epoch(of: room) == 0)
    }

    /// A ban in the main room rotates the groups' keys too, and so does a move out of a
    /// group, a group's removal and the end of the groups; a group whose keys nobody was
    /// given does not rotate (issue 39: a banned student's group key opened the group's
    /// later messages).
    @Test func aBanOrAMoveInTheMainRoomRotatesItsGroupsKeys() {
        var engine = NodeEngine(replica: ReplicaID(4))
        engine.topicKeys = TopicKeyEpochs(seals: true)
        let room = NodeEngineTests.room
        let g1 = Breakout.roomID(of: "g1", in: room), g2 = Breakout.roomID(of: "g2", in: room)
        var counter: UInt64 = 10
        func teacher(_ operation: HomeroomCore.Operation) {
            counter += 1
            NodeEngineTests.write(Write(author: "t", authorRole: .teacher, authorCounter: counter, operation: operation), at: &engine)
        }
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        NodeEngineTests.write(NodeEngineTests.join("s", .student, at: engine), at: &engine)
        teacher(.setRoomType(.smallClassroom))
        teacher(.setBreakoutGroup(id: "g1", name: "One"))
        teacher(.setBreakoutGroup(id: "g2", name: "Two"))
        teacher(.assignBreakoutGroup(user: "s", group: "g1"))
        #expect(engine.topicKeys.epoch(of: g1) == 0 && engine.topicKeys.epoch(of: g2) == 0, "no keys given yet: nothing to rotate")
        _ = engine.topicKeys.gave(room: g1, expiringAt: 9_000)
        teacher(.assignBreakoutGroup(user: "s", group: "g2"))
        #expect(engine.topicKeys.epoch(of: g1) == 1, "a move out of g1 rotates g1's keys")
        #expect(engine.topicKeys.epoch(of: g2) == 0, "g2's keys were never given")
        _ = engine.topicKeys.gave(room: g1, expiringAt: 9_000)
        _ = engine.topicKeys.gave(room: g2, expiringAt: 9_000)
        teacher(.ban(user: "s"))
        #expect(engine.topicKeys.epoch(of: room) == 1, "the ban rotates the main room's keys")
        #expect(engine.topicKeys.epoch(of: g1) == 2 && engine.topicKeys.epoch(of: g2) == 1, "and every group's whose keys were given")
        _ = engine.topicKeys.gave(room: g2, expiringAt: 9_000)
        teacher(.setBreakoutGroup(id: "g2", name: nil))
        #expect(engine.topicKeys.epoch(of: g2) == 2, "a removed group's keys rotate")
        _ = engine.topicKeys.gave(room: g1, expiringAt: 9_000)
        teacher(.endBreakout)
        #expect(engine.topicKeys.epoch(of: g1) == 3, "ending the groups rotates their keys")
    }

    /// A room goes once nobody is in it and nothing was written for the retention; not
    /// while a session is live, nor a class while one of its groups' rooms is held here.
    @Test func aRoomIsIdleOnlyWhenEmptyAndUnwrittenForTheRetention() {
        var engine = NodeEngine(replica: ReplicaID(6))
        let room = NodeEngineTests.room, now = NodeEngineTests.now, hour: UInt64 = 3_600_000
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        #expect(engine.idleRooms(among: [room], nowMillis: now + 10 * hour, retentionMillis: hour).isEmpty, "t is still in the room")
        NodeEngineTests.write(Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .leaveSession(user: "t", session: "t#1")),
                              at: &engine, now: now + 1_000)
        #expect(engine.idleRooms(among: [room], nowMillis: now + 1_000 + hour - 1, retentionMillis: hour).isEmpty, "written less than the retention ago")
        #expect(engine.idleRooms(among: [room], nowMillis: now + 1_000 + hour, retentionMillis: hour) == [room])
        #expect(engine.idleRooms(among: [room], nowMillis: now + 10 * hour, retentionMillis: 0).isEmpty, "retention 0 keeps every room")
        // A group's room held here keeps its class.
        let group = Breakout.roomID(of: "g1", in: room)
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine, counter: 3), at: &engine, room: group, now: now + 2_000)
        #expect(engine.idleRooms(among: [room, group], nowMillis: now + 10 * hour, retentionMillis: hour).isEmpty)
        // The scan goes round every room, a slice at a time.
        let (slice, next) = engine.idleScanSlice(after: nil)
        #expect(slice == [room, group].sorted() && next == nil)
        #expect(engine.idleScanSlice(after: room).rooms == [group])
    }

    @Test func aRemoteBanRotatesTheKeysOfTheNodeThatAppliesIt() throws {
        var origin = NodeEngine(replica: ReplicaID(1))
        var deltas: [Delta] = []
        for write in [NodeEngineTests.join("t", .teacher, at: origin), NodeEngineTests.join("s", .student, at: origin),
                      Write(author: "t", authorRole: .teacher, authorCounter: 2, operation: .ban(user: "s"))] {
            deltas.append(try #require(NodeEngineTests.write(write, at: &origin)).delta)
        }
        var other = NodeEngine(replica: ReplicaID(2))
        other.topicKeys = TopicKeyEpochs(seals: true)
        _ = other.applyRemote(room: NodeEngineTests.room, Array(deltas.prefix(2)), origin: ReplicaID(1), nowMillis: NodeEngineTests.now)
        #expect(other.topicKeys.epoch(of: NodeEngineTests.room) == 0)
        _ = other.applyRemote(room: NodeEngineTests.room, [deltas[2]], origin: ReplicaID(1), nowMillis: NodeEngineTests.now)
        #expect(other.topicKeys.epoch(of: NodeEngineTests.room) == 1)
    }

    @Test func theEnginesRateLimitsComeFromItsPolicy() {
        var policy = EnginePolicy()
        policy.rates.writesPerSecond = 2
        var engine = NodeEngine(replica: ReplicaID(3), policy: policy)
        // A burst of two seconds' worth, then refused until the bucket refills.
        let now: UInt64 = 10_000
        let allowed = (0..<10).filter { _ in engine.limits.writes.allow("u", size: 10, nowMillis: now) }.count
        #expect(allowed == 4)
        let refilled = engine.limits.writes.allow("u", size: 10, nowMillis: now + 500)
        #expect(refilled)
        engine.limits.prune(nowMillis: now + 60_000)
        #expect(engine.limits.writes.count == 0)
    }
}

/// What to pull from whom (`PullSchedule`).
@Suite struct PullScheduleTests {
    static let a = ReplicaID(node: "a", generation: 1), b = ReplicaID(node: "b", generation: 1)

    @Test func onePeersBatchAtATimeAndWhatWentUnansweredComesBack() {
        var schedule = PullSchedule()
        let keys = ["r2", "r1", "r3"].map { PullSchedule.Key(peer: Self.a, room: $0) }
        for key in keys { schedule.want(key) }
        schedule.want(PullSchedule.Key(peer: Self.b, room: PullSchedule.Key.completeList))
        let first = schedule.startBatches { _ in true }
        #expect(first.map(\.peer) == [Self.a, Self.b].sorted())
        #expect(first.first { $0.peer == Self.a }?.keys.map(\.room) == ["r1", "r2", "r3"], "a batch goes in room order")
        #expect(schedule.pending.isEmpty && schedule.isPulling(Self.a) && schedule.isPulling(Self.b))
        // More wanted from a peer with a batch in flight waits for that batch.
        schedule.want(PullSchedule.Key(peer: Self.a, room: "r4"))
        #expect(schedule.startBatches { _ in true }.isEmpty)
        // The second pull got no answer: it and those after it are wanted again.
        schedule.finished(peer: Self.a, unanswered: Array(keys.sorted().dropFirst()))
        schedule.finished(peer: Self.b)
        let second = schedule.startBatches { _ in true }
        #expect(second.map(\.peer) == [Self.a])
        #expect(second.first?.keys.map(\.room) == ["r2", "r3", "r4"])
    }

    @Test func anUnreachablePeerLosesItsPullsButNotItsOpenGaps() {
        var schedule = PullSchedule()
        let gap = PullSchedule.Key(peer: Self.a, room: "quiet")
        schedule.wantUntilClosed(gap)
        schedule.want(PullSchedule.Key(peer: Self.a, room: "once"))
        #expect(schedule.startBatches { _ in false }.isEmpty)
        #expect(schedule.pending.isEmpty && !schedule.isPulling(Self.a))
        // Back: the open gap is asked again, the one-off pull is not (its digests ask again).
        schedule.requeueOpenGaps { _ in true }
        #expect(schedule.startBatches { _ in true }.first?.keys == [gap])
        schedule.finished(peer: Self.a)
        schedule.requeueOpenGaps { _ in false }
        #expect(schedule.openGaps.isEmpty && schedule.pending.isEmpty)
    }

    @Test func forgettingARoomDropsItsPullsAndGaps() {
        var schedule = PullSchedule()
        schedule.wantUntilClosed(PullSchedule.Key(peer: Self.a, room: "gone"))
        schedule.wantUntilClosed(PullSchedule.Key(peer: Self.b, room: "kept"))
        schedule.want(PullSchedule.Key(peer: Self.b, room: "gone"))
        schedule.forget { $0.room == "gone" }
        #expect(schedule.pending == [PullSchedule.Key(peer: Self.b, room: "kept")])
        #expect(schedule.openGaps == [PullSchedule.Key(peer: Self.b, room: "kept")])
    }
}

/// What heartbeats may claim of the rewards this node admitted (`checkpointMillis`).
@Suite struct RewardsInFlightTests {
    @Test func aRewardBeingStoredHoldsBackTheCheckpointTimeUntilItIsCommittedOrRefused() throws {
        var engine = NodeEngine(replica: ReplicaID(6))
        NodeEngineTests.write(NodeEngineTests.join("t", .teacher, at: engine), at: &engine)
        NodeEngineTests.write(NodeEngineTests.join("s", .student, at: engine), at: &engine)
        let now = NodeEngineTests.now
        #expect(engine.checkpointMillis(nowMillis: now + 50) == now + 50)
        let reward = Write(author: "t", authorRole: .teacher, authorCounter: 7, operation: .reward(user: "s", amount: 1, issuedAtMillis: now))
        guard case let .persist(stamped) = engine.decide(room: NodeEngineTests.room, reward, nowMillis: now + 10) else {
            Issue.record("the reward was answered"); return
        }
        engine.storing(stamped)
        // A heartbeat built while it is stored claims nothing from its decision on.
        #expect(engine.checkpointMillis(nowMillis: now + 50) == now + 9)
        engine.storeFailed(stamped)
        #expect(engine.checkpointMillis(nowMillis: now + 50) == now + 50)
        engine.storing(stamped)
        engine.commit(stamped)
        #expect(engine.checkpointMillis(nowMillis: now + 60) == now + 60)
        // Other writes being stored hold nothing back.
        let rename = Write(author: "t", authorRole: .teacher, authorCounter: 8, operation: .setRoomName("x"))
        guard case let .persist(other) = engine.decide(room: NodeEngineTests.room, rename, nowMillis: now + 70) else {
            Issue.record("the rename was answered"); return
        }
        engine.storing(other)
        #expect(engine.checkpointMillis(nowMillis: now + 80) == now + 80)
    }
}
