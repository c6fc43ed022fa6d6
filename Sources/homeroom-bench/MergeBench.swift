import HomeroomCore

/// Merge suites: streamed single deltas, catch-up of a large divergence, memory per user.
enum MergeBench {
    static let roomUsers = 10_000

    /// A room with `users` students joined through replica 1.
    static func room(users: Int, type: RoomType = .smallClassroom) -> (RoomState, Sequencer) {
        var sequencer = Sequencer(replica: ReplicaID(1))
        var room = RoomState(roomID: "bench")
        var now: UInt64 = 1_700_000_000_000
        func write(_ author: UserID, _ role: Role, _ operation: Operation) {
            now += 1
            _ = room.apply(sequencer.stamp(Write(author: author, authorRole: role, authorCounter: now, operation: operation), nowMillis: now))
        }
        write("teacher", .teacher, .joinSession(user: "teacher", session: "t-1", name: "Teacher", role: .teacher, host: ReplicaID(1), incarnation: 1))
        write("teacher", .teacher, .setRoomType(type))
        for index in 0..<users {
            let user = "student-\(index)"
            write(user, .student, .joinSession(user: user, session: "\(user)-1", name: "Student \(index)", role: .student, host: ReplicaID(1), incarnation: 1))
        }
        return (room, sequencer)
    }

    /// A mix of the deltas a live class produces most: devices, privileges, stage, hands, rewards.
    static func liveDeltas(count: Int, users: Int, origins: Int, seed: UInt64) -> [Delta] {
        var rng = SplitMix64(seed: seed)
        var sequencers = (0..<origins).map { Sequencer(replica: ReplicaID(UInt64(100 + $0))) }
        var deltas: [Delta] = []
        deltas.reserveCapacity(count)
        var now: UInt64 = 1_700_000_100_000
        for index in 0..<count {
            now += UInt64.random(in: 0...1, using: &rng)
            let user = "student-\(Int.random(in: 0..<users, using: &rng))"
            let device = Bool.random(using: &rng) ? Device.camera : Device.microphone
            let on = Bool.random(using: &rng)
            let write: Write
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3: write = Write(author: user, authorRole: .student, authorCounter: UInt64(index), operation: .setDevice(user: user, device: device, on: on))
            case 4...5: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .setPrivilege(user: user, device: device, allowed: on))
            case 6: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .setStage(user: user, on: on))
            case 7: write = Write(author: user, authorRole: .student, authorCounter: UInt64(index), operation: .setHand(user: user, raised: on))
            case 8: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .reward(user: user, amount: 1))
            default: write = Write(author: "teacher", authorRole: .teacher, authorCounter: UInt64(index), operation: .setBoard(user: user, granted: on))
            }
            let origin = index % origins
            deltas.append(sequencers[origin].stamp(write, nowMillis: now))
        }
        return deltas
    }

    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        streamed(quick: quick, emit: emit)
        catchUp(quick: quick, emit: emit)
        memory(quick: quick, emit: emit)
    }

    static func streamed(quick: Bool, emit: (BenchRow) -> Void) {
        let count = quick ? 200_000 : 1_000_000
        let (base, _) = room(users: roomUsers)
        let deltas = liveDeltas(count: count, users: roomUsers, origins: 3, seed: 1)
        var best = Double.infinity
        for _ in 0..<(quick ? 2 : 3) {
            var state = base
            var changes = 0
            let seconds = measure { changes = streamedApply(&state, deltas) }
            precondition(changes > 0)
            best = min(best, seconds)
        }
        emit(BenchRow(suite: "merge", name: "streamed-single-deltas-10k-users", n: count, opsPerSecond: Double(count) / best,
                      seconds: best, target: ">= 1000000 ops/s"))
    }

    static func catchUp(quick: Bool, emit: (BenchRow) -> Void) {
        let changes = quick ? 50_000 : 200_000
        let (base, _) = room(users: roomUsers)
        var ahead = base
        for delta in liveDeltas(count: changes, users: roomUsers, origins: 20, seed: 2) { _ = ahead.apply(delta) }
        var best = Double.infinity
        var bestMerge = Double.infinity
        var patchUsers = 0
        for _ in 0..<(quick ? 2 : 3) {
            var behind = base
            var patch = RoomState(roomID: base.roomID)
            let cut = measure { patch = catchUpCut(ahead, since: behind.seen) }
            let merge = measure { applyCatchUpPatch(&behind, patch) }
            patchUsers = patch.users.count
            precondition(behind == ahead, "catch-up did not converge")
            best = min(best, cut + merge)
            bestMerge = min(bestMerge, merge)
        }
        emit(BenchRow(suite: "merge", name: "catch-up-merge-only-\(changes / 1000)k-changes", n: changes,
                      opsPerSecond: Double(changes) / bestMerge, seconds: bestMerge,
                      note: "applying the patch, without cutting it from the sender's state"))
        emit(BenchRow(suite: "merge", name: "catch-up-\(changes / 1000)k-changes-20-writers-10k-users", n: changes,
                      opsPerSecond: Double(changes) / best, seconds: best, target: ">= 5000000 changes/s",
                      note: "patch carried \(patchUsers) user records"))
    }

    // Each measured step is its own function, so callgrind's --toggle-collect can isolate it
    // (see "Profiles (callgrind)" in docs/PERFORMANCE.md).
    @inline(never)
    static func streamedApply(_ state: inout RoomState, _ deltas: [Delta]) -> Int {
        var changes = 0
        for delta in deltas { changes &+= state.apply(delta).changes.count }
        return changes
    }

    @inline(never)
    static func catchUpCut(_ ahead: RoomState, since seen: VersionVector) -> RoomState { ahead.missing(since: seen) }

    @inline(never)
    @discardableResult
    static func applyCatchUpPatch(_ behind: inout RoomState, _ patch: RoomState) -> Int { behind.merge(patch).count }

    static func memory(quick: Bool, emit: (BenchRow) -> Void) {
        let users = quick ? 20_000 : 100_000
        let before = HeapUsage.bytesInUse()
        let (hall, _) = room(users: users, type: .lectureHall)
        let after = HeapUsage.bytesInUse()
        let perUser = Double(after - before) / Double(users)
        withExtendedLifetime(hall) {}
        emit(BenchRow(suite: "memory", name: "lecture-hall-\(users / 1000)k-users", n: users, bytesPerOp: perUser,
                      target: "<= 1024 bytes/user", note: "resident bytes per joined user (/proc/self/statm)"))
    }
}
