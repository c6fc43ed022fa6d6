import Testing
@testable import HomeroomCore

/// Messages, history bounds, chat moderation, presence state and property revisions
/// in the pure Core (docs/MESSAGING.md). Cluster behaviour is in HomeroomNodeTests.
@Suite struct MessagingTests {
    static func chat(_ text: String, previous: UInt64 = 0) -> Operation {
        .sendMessage(type: "chat", payload: Array(text.utf8), previous: previous)
    }

    static func added(_ changes: [MessagingChange]) -> [MessageKey] {
        changes.compactMap { if case let .messageAdded(message) = $0 { return message.key } else { return nil } }
    }

    // MARK: - Messages

    @Test func aMessageRetriedThroughAnotherNodeIsStoredAndReportedOnce() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["s"], origin: &one)
        var b = a
        let first = one.delta("s", .student, Self.chat("hello"))
        var retry = two.sequencer
        let again = retry.stamp(Write(author: "s", authorRole: .student, authorCounter: first.authorCounter, operation: first.operation),
                                nowMillis: two.now + 5)
        var changesA: [MessagingChange] = []
        _ = a.apply(first, messaging: &changesA)
        _ = a.apply(again, messaging: &changesA)
        var changesB: [MessagingChange] = []
        _ = b.apply(again, messaging: &changesB)
        _ = b.apply(first, messaging: &changesB)
        #expect(a == b)
        #expect(a.messages.count == 1)
        #expect(Self.added(changesA) == [MessageKey(sender: "s", counter: first.authorCounter)])
        #expect(Self.added(changesB).count == 1)
        // The later copy decides its place in the history.
        #expect(a.messages[MessageKey(sender: "s", counter: first.authorCounter)]?.stamp == max(first.stamp, again.stamp))
        // The same delta again is a duplicate and reports nothing.
        var none: [MessagingChange] = []
        #expect(a.apply(first, messaging: &none) == .duplicate)
        #expect(none.isEmpty)
    }

    @Test func theHistoryKeepsTheNewestAndTheFloorRefusesLateOldMessages() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setHistoryLimit(3)))
        var old = Origin(2)
        old.now = 10  // a node whose message is very old, arriving late
        let late = old.delta("s", .student, Self.chat("late"))
        var changes: [MessagingChange] = []
        for index in 0..<5 { _ = room.apply(one.delta("s", .student, Self.chat("m\(index)")), messaging: &changes) }
        #expect(room.messages.count == 3)
        #expect(room.history(for: nil).map { String(decoding: $0.payload, as: UTF8.self) } == ["m2", "m3", "m4"])
        let removed = changes.flatMap { if case let .messagesRemoved(keys, _) = $0 { return keys } else { return [] } }
        #expect(removed.count == 2)
        // The floor is the newest message that left; an older one arriving now is refused.
        var more: [MessagingChange] = []
        _ = room.apply(late, messaging: &more)
        #expect(room.messages.count == 3 && more.isEmpty)
        #expect(room.seen.contains(late.dot))
    }

    @Test func replicasWithDifferentSubsetsAndFloorsConverge() {
        // Several origins, a small limit, deltas and patches in many orders: always one result.
        for seed in UInt64(1)...300 {
            var rng = SplitMix64(seed: seed)
            var origins = [Origin(1), Origin(2), Origin(3)]
            var base = classroom(students: ["s1", "s2"], origin: &origins[0])
            _ = base.apply(origins[0].delta("t", .teacher, .setHistoryLimit(UInt32.random(in: 2...6, using: &rng))))
            var deltas: [Delta] = []
            for _ in 0..<20 {
                let index = Int.random(in: 0..<3, using: &rng)
                let author = ["s1", "s2", "t"].randomElement(using: &rng)!
                let role: Role = author == "t" ? .teacher : .student
                origins[index].now += UInt64.random(in: 0...5, using: &rng)
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: deltas.append(origins[index].delta("t", .teacher, .trimHistory(beforeMillis: origins[index].now - 5)))
                case 1: deltas.append(origins[index].delta(author, role, .sendPeerMessage(to: "s1", type: "w", payload: [1], previous: 0)))
                default: deltas.append(origins[index].delta(author, role, Self.chat("x")))
                }
            }
            var replicas = (0..<3).map { _ in base }
            for (index, delta) in deltas.shuffled(using: &rng).enumerated() {
                _ = replicas[index % 3].apply(delta)
                if Bool.random(using: &rng) {
                    let from = Int.random(in: 0..<3, using: &rng), to = Int.random(in: 0..<3, using: &rng)
                    if from != to { replicas[to].merge(replicas[from].missing(since: replicas[to].seen)) }
                }
            }
            for _ in 0..<2 {
                for from in 0..<3 { for to in 0..<3 where from != to { replicas[to].merge(replicas[from].missing(since: replicas[to].seen)) } }
            }
            #expect(replicas[0] == replicas[1] && replicas[1] == replicas[2], "seed \(seed)")
            #expect(replicas[0].messages.count <= Int(replicas[0].effectiveHistoryLimit), "seed \(seed)")
        }
    }

    @Test func theByteBudgetKeepsTheNewestThatFitAndReplicasAgree() {
        // Large payloads: the count limit (10,000) never binds, the byte budget does.
        for seed in UInt64(1)...8 {
            var rng = SplitMix64(seed: seed)
            var origins = [Origin(1), Origin(2), Origin(3)]
            var base = classroom(students: ["s0", "s1", "s2"], origin: &origins[0])
            _ = base.apply(origins[0].delta("t", .teacher, .setHistoryLimit(MessageLog.maxLimit)))
            var deltas: [Delta] = []
            for _ in 0..<500 {
                let index = Int.random(in: 0..<3, using: &rng)
                origins[index].now += UInt64.random(in: 0...3, using: &rng)
                let size = Int.random(in: 8_000...Messaging.maxPayloadBytes, using: &rng)
                // One sender per origin: the same (sender, counter) from two origins would be one message.
                deltas.append(origins[index].delta("s\(index)", .student,
                                                   .sendMessage(type: "blob", payload: Array(repeating: 7, count: size), previous: 0)))
            }
            var replicas = (0..<3).map { _ in base }
            for (index, delta) in deltas.shuffled(using: &rng).enumerated() {
                _ = replicas[index % 3].apply(delta)
                if Int.random(in: 0..<8, using: &rng) == 0 {
                    let from = Int.random(in: 0..<3, using: &rng), to = Int.random(in: 0..<3, using: &rng)
                    if from != to { replicas[to].merge(replicas[from].missing(since: replicas[to].seen)) }
                }
            }
            for _ in 0..<2 {
                for from in 0..<3 { for to in 0..<3 where from != to { replicas[to].merge(replicas[from].missing(since: replicas[to].seen)) } }
            }
            #expect(replicas[0] == replicas[1] && replicas[1] == replicas[2], "seed \(seed)")
            let kept = replicas[0].messages
            #expect(kept.totalBytes <= MessageLog.maxBytes && kept.count < deltas.count, "seed \(seed)")
            // What is kept is the newest run that fits: one more (the newest that left) would not.
            let all = deltas.map { ($0.stamp, $0.operation) }.sorted { $0.0 > $1.0 }
            var bytes = 0, fitting = 0
            for (_, operation) in all {
                guard case let .sendMessage(type, payload, _) = operation else { continue }
                if bytes + payload.count + type.utf8.count > MessageLog.maxBytes { break }
                bytes += payload.count + type.utf8.count
                fitting += 1
            }
            #expect(kept.count == fitting && kept.totalBytes == bytes)
        }
    }

    @Test func aTrimMovesTheFloorToAMoment() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        _ = room.apply(one.delta("s", .student, Self.chat("old")))
        let cutoff = one.now + 1
        one.now += 100
        _ = room.apply(one.delta("s", .student, Self.chat("new")))
        var changes: [MessagingChange] = []
        _ = room.apply(one.delta("t", .teacher, .trimHistory(beforeMillis: cutoff)), messaging: &changes)
        #expect(room.history(for: nil).map { String(decoding: $0.payload, as: UTF8.self) } == ["new"])
        #expect(changes.contains { if case .messagesRemoved = $0 { return true } else { return false } })
        // Students may not trim.
        #expect(room.apply(one.delta("s", .student, .trimHistory(beforeMillis: one.now))) ==
                .rejected(.requiresModerator(operation: "trim-history", role: .student)))
    }

    @Test func peerMessagesAreVisibleOnlyToTheirTwoUsers() {
        var one = Origin(1)
        var room = classroom(students: ["a", "b", "c"], origin: &one)
        _ = room.apply(one.delta("a", .student, .sendPeerMessage(to: "b", type: "whisper", payload: [7], previous: 0)))
        _ = room.apply(one.delta("c", .student, Self.chat("everyone")))
        #expect(room.history(for: "a").count == 2)
        #expect(room.history(for: "b").count == 2)
        #expect(room.history(for: "c").count == 1)
        #expect(room.history(for: nil).count == 1)
        let forC = room.visible(to: "c")
        #expect(forC.messages.count == 1 && forC.seen == room.seen)
        // A client that got the filtered view and then the room topic converges with the node's view of it.
        var client = RoomState(roomID: "r")
        client.merge(room.missing(since: .empty).visible(to: "c"))
        #expect(client == room.visible(to: "c"))
    }

    @Test func historyKeepsEachSendersOrderEvenWhenStampsDisagree() {
        var fast = Origin(1), slow = Origin(2)
        var room = classroom(students: ["s", "u"], origin: &fast)
        fast.now += 1_000
        let first = fast.delta("s", .student, Self.chat("one"))
        // The sender moved to a node whose clock is behind: its next message has an earlier stamp.
        slow.now = fast.now - 500
        slow.counter = first.authorCounter
        let second = slow.delta("s", .student, Self.chat("two", previous: first.authorCounter))
        let between = fast.delta("u", .student, Self.chat("u"), advance: 0)
        for delta in [second, between, first] { _ = room.apply(delta) }
        #expect(second.stamp < first.stamp)
        let texts = room.history(for: nil).map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(texts.firstIndex(of: "one")! < texts.firstIndex(of: "two")!)
    }

    // MARK: - Inbox

    @Test func theInboxDeliversInSendersOrderOnceAndReleasesAfterTheHold() {
        func message(_ counter: UInt64, previous: UInt64, at clock: UInt64) -> Message {
            Message(key: MessageKey(sender: "s", counter: counter), recipient: nil, type: "chat", payload: [], previous: previous,
                    stamp: Stamp(clock: HybridTimestamp(packed: clock, replica: ReplicaID(1)), sequence: clock))
        }
        var inbox = MessageInbox(holdMillis: 100)
        let m1 = message(1, previous: 0, at: 10), m2 = message(2, previous: 1, at: 20), m3 = message(3, previous: 2, at: 30)
        // m2 and m3 arrive first (m1 was lost and is repaired later): held.
        #expect(inbox.offer([m3, m2], nowMillis: 0, present: { _ in false }).isEmpty)
        let released = inbox.offer([m1], nowMillis: 10, present: { _ in true })
        #expect(released.map(\.message.key.counter) == [1, 2, 3])
        #expect(released.allSatisfy { !$0.late && !$0.gap })
        // Offered again: never delivered twice.
        #expect(inbox.offer([m1, m2], nowMillis: 20, present: { _ in true }).isEmpty)
        // A predecessor that never comes holds for holdMillis only.
        let m5 = message(5, previous: 4, at: 50)
        #expect(inbox.offer([m5], nowMillis: 30, present: { _ in false }).isEmpty)
        #expect(inbox.tick(nowMillis: 100).isEmpty)
        let gap = inbox.tick(nowMillis: 130)
        #expect(gap.map(\.message.key.counter) == [5] && gap[0].gap)
        // If it comes after all, it is delivered, marked late.
        let late = inbox.offer([message(4, previous: 3, at: 40)], nowMillis: 140, present: { _ in true })
        #expect(late.count == 1 && late[0].late)
    }

    @Test func presenceEventsAreGatheredIntoIntervalsInLargeRooms() {
        var batcher = PresenceBatcher(threshold: 3, intervalMillis: 1_000)
        #expect(batcher.offer([.joined("a")], onlineCount: 2, nowMillis: 0) == [.joined("a")])
        #expect(batcher.offer([.joined("b"), .left("c")], onlineCount: 10, nowMillis: 100).isEmpty)
        #expect(batcher.offer([.left("b"), .stateChanged("d", ["k": [1]])], onlineCount: 10, nowMillis: 500).isEmpty)
        let out = batcher.tick(nowMillis: 1_000)
        guard case let .interval(interval)? = out.first else {
            Issue.record("no interval event: \(out)")
            return
        }
        #expect(interval.joined.isEmpty && interval.left == ["b", "c"] && interval.states["d"] == ["k": [1]])
        #expect(batcher.tick(nowMillis: 1_500).isEmpty)
    }

    // MARK: - Moderation

    @Test func mutedUsersAreRefusedAtTheOriginAndModeratorsStillSpeak() {
        var one = Origin(1)
        var room = classroom(students: ["s", "u"], origin: &one)
        _ = room.apply(join("a", .assistant, via: &one))
        var changes: [MessagingChange] = []
        _ = room.apply(one.delta("t", .teacher, .setChatMuted(user: "s", muted: true)), messaging: &changes)
        #expect(changes == [.chatMuteUpdated(user: "s", muted: true)])
        let now = one.now
        #expect(room.admit(Write(author: "s", authorRole: .student, authorCounter: 9, operation: Self.chat("hi")), nowMillis: now) == .chatMuted("s"))
        #expect(room.admit(Write(author: "u", authorRole: .student, authorCounter: 9, operation: Self.chat("hi")), nowMillis: now) == nil)
        // A muted student may still write to the teacher, not to another student.
        #expect(room.admit(Write(author: "s", authorRole: .student, authorCounter: 9,
                                 operation: .sendPeerMessage(to: "t", type: "w", payload: [], previous: 0)), nowMillis: now) == nil)
        #expect(room.admit(Write(author: "s", authorRole: .student, authorCounter: 9,
                                 operation: .sendPeerMessage(to: "u", type: "w", payload: [], previous: 0)), nowMillis: now)?.code == "muted")
        _ = room.apply(one.delta("t", .teacher, .setChatMuted(user: nil, muted: true)))
        #expect(room.admit(Write(author: "u", authorRole: .student, authorCounter: 9, operation: Self.chat("hi")), nowMillis: now) == .chatMuted(nil))
        #expect(room.admit(Write(author: "a", authorRole: .assistant, authorCounter: 9, operation: Self.chat("hi")), nowMillis: now) == nil)
        // Only moderators mute; observers send nothing.
        #expect(Authority.check(author: "u", role: .student, operation: .setChatMuted(user: "s", muted: false))?.code == "requires-moderator")
        #expect(Authority.check(author: "o", role: .observer, operation: Self.chat("hi"))?.code == "observer-read-only")
        #expect(Authority.check(author: "u", role: .student, operation: .sendMessage(type: "", payload: [], previous: 0))?.code == "invalid-value")
    }

    // MARK: - Presence

    @Test func presenceStateShowsWhileItsSessionIsOpen() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        var changes: [MessagingChange] = []
        _ = room.apply(one.delta("s", .student, .setPresenceState(user: "s", session: "s-1", items: [PresenceItem(key: "mood", value: [1])])),
                       messaging: &changes)
        #expect(room.presenceState(of: "s") == ["mood": [1]])
        #expect(changes == [.presenceStateUpdated("s", keys: ["mood"])])
        #expect(room.presenceSnapshot().first { $0.user == "s" }?.state == ["mood": [1]])
        // A second session joins, the first leaves: the state written by the first is gone.
        _ = room.apply(join("s", .student, session: "s-2", via: &one))
        changes.removeAll()
        _ = room.apply(one.delta("s", .student, .leaveSession(user: "s", session: "s-1")), messaging: &changes)
        #expect(room.presenceState(of: "s").isEmpty)
        #expect(room.isOnline("s"))
        #expect(changes == [.presenceStateUpdated("s", keys: ["mood"])])
        // Admission: only through an open session, at most 32 keys shown.
        let dead = Write(author: "s", authorRole: .student, authorCounter: 50,
                         operation: .setPresenceState(user: "s", session: "s-1", items: [PresenceItem(key: "k", value: [1])]))
        #expect(room.admit(dead, nowMillis: one.now)?.code == "invalid")
        let many = (0..<33).map { PresenceItem(key: "k\($0)", value: [1]) }
        #expect(Authority.check(author: "s", role: .student, operation: .setPresenceState(user: "s", session: "s-2", items: many))?.code == "invalid-value")
        for batch in stride(from: 0, to: 32, by: 8) {
            _ = room.apply(one.delta("s", .student, .setPresenceState(user: "s", session: "s-2", items: Array(many[batch..<(batch + 8)]))))
        }
        let more = Write(author: "s", authorRole: .student, authorCounter: 51,
                         operation: .setPresenceState(user: "s", session: "s-2", items: [PresenceItem(key: "k32", value: [1])]))
        #expect(room.admit(more, nowMillis: one.now)?.code == "invalid")
    }

    @Test func aNodeDeclaredDownTimesItsUsersOut() {
        var one = Origin(1)
        var room = classroom(students: ["s"], origin: &one)
        var changes: [MessagingChange] = []
        let outcome = room.apply(one.delta("node-2", .system, .replicaDown(replica: ReplicaID(1), incarnation: 1)), messaging: &changes)
        #expect(outcome.changes.contains(.userLeft("s")))
        #expect(changes.contains(.userTimedOut("s")) && changes.contains(.userTimedOut("t")))
    }

    // MARK: - Revisions

    static func setTopic(_ value: String, if revision: UInt64?) -> Operation {
        .setRoomProperty(key: "topic", value: Array(value.utf8), cause: "test", revision: PropertyRevision(condition: revision))
    }

    @Test func conditionalWritesAdvanceTheRevisionAndRefuseStaleOnes() {
        var one = Origin(1)
        var room = classroom(students: [], origin: &one)
        func write(_ operation: Operation) -> Write {
            one.counter += 1
            return Write(author: "t", authorRole: .teacher, authorCounter: one.counter, operation: operation)
        }
        func commit(_ write: Write) {
            one.now += 1
            _ = room.apply(one.sequencer.stamp(room.prepare(write), nowMillis: one.now))
        }
        let create = write(Self.setTopic("a", if: 0))
        #expect(room.admit(create, nowMillis: one.now) == nil)
        commit(create)
        #expect(room.propertyRevision(scope: .room, key: "topic") == 1)
        let stale = write(Self.setTopic("b", if: 0))
        #expect(room.admit(stale, nowMillis: one.now) == .revisionMismatch(key: "topic", expected: 0, actual: 1))
        commit(write(Self.setTopic("b", if: 1)))
        commit(write(.setRoomProperty(key: "topic", value: nil, cause: "done")))
        #expect(room.propertyRevision(scope: .room, key: "topic") == 3)
        #expect(room.properties["topic"]?.value.bytes == nil)
        #expect(room.properties["topic"]?.value.lineage.count == 2)
    }

    /// Signaling's major revision: one number for the whole set, with compare-and-set.
    @Test func theSetRevisionCountsEveryWriteThatStandsAndGuardsTheWholeSet() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["s"], origin: &one)
        func write(_ key: String, _ value: String?, ifSet: UInt64? = nil, user: UserID? = nil) -> Write {
            one.counter += 1
            let revision = PropertyRevision(setCondition: ifSet)
            let operation: Operation = user.map {
                .setUserProperty(user: $0, key: key, value: value.map { Array($0.utf8) }, cause: "test", revision: revision)
            } ?? .setRoomProperty(key: key, value: value.map { Array($0.utf8) }, cause: "test", revision: revision)
            return Write(author: "t", authorRole: .teacher, authorCounter: one.counter, operation: operation)
        }
        func commit(_ write: Write, on room: inout RoomState, _ origin: inout Origin) -> Delta {
            origin.now += 1
            let delta = origin.sequencer.stamp(room.prepare(write), nowMillis: origin.now)
            _ = room.apply(delta)
            return delta
        }
        #expect(a.propertySetRevision(scope: .room) == 0)
        _ = commit(write("topic", "fractions", ifSet: 0), on: &a, &one)
        _ = commit(write("board", "A"), on: &a, &one)
        _ = commit(write("topic", "decimals"), on: &a, &one)
        #expect(a.propertySetRevision(scope: .room) == 3)
        // A delete is a write: the set moves on, and the tombstone keeps its share.
        _ = commit(write("board", nil), on: &a, &one)
        #expect(a.propertySetRevision(scope: .room) == 4)
        #expect(a.admit(write("quiz", "1", ifSet: 3), nowMillis: one.now) == .setRevisionMismatch(scope: .room, expected: 3, actual: 4))
        #expect(a.admit(write("quiz", "1", ifSet: 4), nowMillis: one.now) == nil)
        // A user's set is its own.
        _ = commit(write("mood", "ok", user: "s"), on: &a, &one)
        #expect(a.propertySetRevision(scope: .user("s")) == 1 && a.propertySetRevision(scope: .room) == 4)
        #expect(a.admit(write("mood", "x", ifSet: 0, user: "s"), nowMillis: one.now) == .setRevisionMismatch(scope: .user("s"), expected: 0, actual: 1))

        // A partition: both sides write on set revision 4; after the merge both replicas
        // agree, and the set revision never went down on either.
        var b = a
        two.now = one.now + 10
        two.counter = 1_000
        _ = commit(write("topic", "left", ifSet: 4), on: &a, &one)
        _ = commit(write("quiz", "q1", ifSet: 5), on: &a, &one)
        let right = Write(author: "t", authorRole: .teacher, authorCounter: 2_000,
                          operation: .setRoomProperty(key: "topic", value: Array("right".utf8), cause: "test",
                                                      revision: PropertyRevision(setCondition: 4)))
        #expect(b.admit(right, nowMillis: two.now) == nil)
        _ = commit(right, on: &b, &two)
        let beforeA = a.propertySetRevision(scope: .room), beforeB = b.propertySetRevision(scope: .room)
        #expect(beforeA == 6 && beforeB == 5)
        a.merge(b.missing(since: a.seen))
        b.merge(a.missing(since: b.seen))
        #expect(a == b)
        // Two writes of topic at revision 5 became one: the set counts what stands.
        #expect(a.propertySetRevision(scope: .room) == b.propertySetRevision(scope: .room))
        #expect(a.propertySetRevision(scope: .room) >= max(beforeA, beforeB))
    }

    @Test func underAPartitionBothConditionalWritesAreAcceptedAndTheLoserFindsOut() {
        var one = Origin(1), two = Origin(2)
        var a = classroom(students: ["s"], origin: &one)
        one.counter += 1
        _ = a.apply(one.sequencer.stamp(a.prepare(Write(author: "t", authorRole: .teacher, authorCounter: one.counter,
                                                         operation: Self.setTopic("v1", if: 0))), nowMillis: one.now + 1))
        var b = a
        two.now = one.now + 10
        // Both sides read revision 1 and write "only if still 1".
        let left = one.sequencer.stamp(a.prepare(Write(author: "t", authorRole: .teacher, authorCounter: 50,
                                                      operation: Self.setTopic("left", if: 1))), nowMillis: one.now + 5)
        let right = two.sequencer.stamp(b.prepare(Write(author: "s2", authorRole: .teacher, authorCounter: 60,
                                                       operation: Self.setTopic("right", if: 1))), nowMillis: two.now)
        #expect(a.admit(Write(author: "t", authorRole: .teacher, authorCounter: 50, operation: Self.setTopic("left", if: 1)), nowMillis: 0) == nil)
        _ = a.apply(left)
        _ = b.apply(right)
        // The left side writes once more on top of its own value: revision 3 beats the right side's 2.
        let leftAgain = one.sequencer.stamp(a.prepare(Write(author: "t", authorRole: .teacher, authorCounter: 51,
                                                           operation: Self.setTopic("left2", if: 2))), nowMillis: one.now + 6)
        _ = a.apply(leftAgain)
        var changesA: [MessagingChange] = [], changesB: [MessagingChange] = []
        a.merge(b.missing(since: a.seen), messaging: &changesA)
        b.merge(a.missing(since: b.seen), messaging: &changesB)
        #expect(a == b)
        #expect(a.properties["topic"]?.value.bytes == Array("left2".utf8))
        #expect(a.propertyRevision(scope: .room, key: "topic") == 3)
        // The right side's writer is told on its replica, and can ask about its write at any time.
        let conflicts = changesB.compactMap { if case let .propertyConflict(c) = $0 { return c } else { return nil } }
        #expect(conflicts.count == 1 && conflicts[0].lost.dot == right.dot && conflicts[0].lostDots == [right.dot])
        #expect(a.propertyWrite(right.dot, revision: 2, scope: .room, key: "topic") == false)
        #expect(a.propertyWrite(left.dot, revision: 2, scope: .room, key: "topic") == true)
        // The revision never went down on either side.
        #expect(b.propertyRevision(scope: .room, key: "topic") == 3)
    }

    @Test func aLateAncestorIsNotAConflict() {
        var one = Origin(1)
        var source = classroom(students: [], origin: &one)
        var deltas: [Delta] = []
        for (index, value) in ["a", "b", "c"].enumerated() {
            one.counter += 1
            let delta = one.sequencer.stamp(source.prepare(Write(author: "t", authorRole: .teacher, authorCounter: one.counter,
                                                                 operation: Self.setTopic(value, if: UInt64(index)))), nowMillis: one.now + UInt64(index) + 1)
            _ = source.apply(delta)
            deltas.append(delta)
        }
        var late = RoomState(roomID: "r")
        var changes: [MessagingChange] = []
        for delta in deltas.reversed() { _ = late.apply(delta, messaging: &changes) }
        #expect(!changes.contains { if case .propertyConflict = $0 { return true } else { return false } })
        #expect(late.properties == source.properties)
    }
}
