import Testing
@testable import HomeroomCore

/// `snapshot()` shares the state itself when that is what `missing(since: .empty)`
/// would build; these check it is the same value either way, and that the shortcut
/// is refused whenever the cut would leave something out.
@Suite struct SnapshotTests {
    @Test func aLiveClassroomIsItsOwnSnapshot() {
        var one = Origin(1)
        var room = classroom(students: ["s1", "s2", "s3"], origin: &one)
        _ = room.apply(one.delta("t", .teacher, .setStage(user: "s1", on: true)))
        _ = room.apply(one.delta("t", .teacher, .reward(user: "s2", amount: 3)))
        _ = room.apply(one.delta("s3", .student, .leaveSession(user: "s3", session: "s3-1")))
        // The end of a session whose start never arrived: kept by the cut.
        _ = room.apply(one.delta("s4", .student, .leaveSession(user: "s4", session: "s4-1")))
        #expect(room.isOwnSnapshot)
        #expect(room.snapshot() == room.missing(since: .empty))
    }

    @Test func unwrittenPartsRefuseTheSharedSnapshot() {
        var one = Origin(1)
        let base = classroom(students: ["s1", "s2"], origin: &one)
        let unwritten = Stamp(clock: HybridTimestamp(millis: 5, logical: 0, replica: ReplicaID(1)), sequence: 0)

        var roomRegister = base
        roomRegister.name = Register("not sent", stamp: unwritten)
        var emptyUser = base
        emptyUser.users["ghost"] = UserRecord()
        var orphanSession = base
        orphanSession.users["s1"]!.upsertSession(SessionRecord(id: "s1-9", host: ReplicaID(1), incarnation: 1, started: .maxedOut))
        var unwrittenReward = base
        unwrittenReward.users["s2"]!.addReward(RewardKey(author: "t", authorCounter: 99), RewardEntry(amount: 1, stamp: unwritten))
        var unwrittenDevice = base
        unwrittenDevice.users["s2"]!.cameraDevice = Register(true, stamp: unwritten)

        for (label, state) in [("room register", roomRegister), ("empty user", emptyUser), ("orphan session", orphanSession),
                               ("reward", unwrittenReward), ("device", unwrittenDevice)] {
            #expect(!state.isOwnSnapshot, "\(label)")
            #expect(state.snapshot() == state.missing(since: .empty), "\(label)")
            #expect(state.snapshot() != state, "\(label): the cut should have left something out")
        }
        // An activity allocated but all at defaults is no different from none.
        var idleActivity = base
        idleActivity.users["s1"]!.modifyActivity { _ in }
        #expect(idleActivity.isOwnSnapshot)
        #expect(idleActivity.snapshot() == idleActivity.missing(since: .empty))
    }
}

/// The stage and hand queue against a plain sorted array, through enough writes to
/// split and empty its runs.
@Suite struct CandidateQueueTests {
    @Test func matchesASortedArrayThroughSplitsAndRemovals() {
        var queue = CandidateQueue()
        var reference: [UserID: Stamp] = [:]
        var rng = SplitMix64(seed: 42)
        for step in 0..<6_000 {
            let user = "u\(Int.random(in: 0..<700, using: &rng))"
            // Ties on the stamp are broken by the user id.
            let stamp = Bool.random(using: &rng) && step % 3 != 0
                ? Stamp(clock: HybridTimestamp(millis: UInt64.random(in: 0..<50, using: &rng), logical: 0, replica: ReplicaID(1)), sequence: 1)
                : nil
            queue.set(user, stamp: stamp)
            reference[user] = stamp
            if step % 500 == 0 || step == 5_999 {
                let sorted = reference.map { CandidateQueue.Entry(stamp: $0.value, user: $0.key) }.sorted()
                #expect(queue.count == sorted.count)
                #expect(queue.winners(limit: 10) == Array(sorted.prefix(10)))
                #expect(queue.waiting(limit: 10) == Array(sorted.dropFirst(10)))
                #expect(queue.winners(limit: 0).isEmpty && queue.winningUsers(limit: 0).isEmpty)
                #expect(queue.winningUsers(limit: 10) == sorted.prefix(10).map(\.user))
                #expect(queue.winningUsers(limit: 300) == sorted.prefix(300).map(\.user))
                for (rank, entry) in sorted.enumerated() where rank < 12 || rank % 97 == 0 {
                    #expect(queue.isAmongFirst(10, entry.user) == (rank < 10))
                }
                #expect(!queue.isAmongFirst(10, "nobody"))
            }
        }
        #expect(reference.count > CandidateQueue.runCapacity, "too few entries to split a run")
    }
}

@Suite struct SeenCheckTests {
    /// The scanning check answers as the version vector does: contiguous prefixes,
    /// early dots past a gap, unknown origins, sequence 0, and too many origins to scan.
    @Test func answersAsTheVersionVector() {
        var rng = SplitMix64(seed: 7)
        for origins in [1, 3, SeenCheck.maxScannedOrigins, SeenCheck.maxScannedOrigins + 5] {
            var seen = VersionVector()
            for origin in 1...origins {
                for _ in 0..<40 { seen.insert(Dot(origin: ReplicaID(UInt64(origin)), sequence: UInt64.random(in: 1...60, using: &rng))) }
            }
            let check = SeenCheck(seen)
            for origin in 0...(origins + 1) {
                for sequence in 0...65 {
                    let dot = Dot(origin: ReplicaID(UInt64(origin)), sequence: UInt64(sequence))
                    #expect(check.contains(dot) == seen.contains(dot), "\(dot) with \(origins) origins")
                }
            }
        }
    }
}
