import HomeroomCore
import HomeroomWire
import Testing

/// The teacher lane's reading of a request's bytes (`WireLane`) agrees with Core's
/// (`Operation.isTeacherControl`) for every operation, and takes anything it cannot
/// read as ordinary without failing.
@Suite struct WireLaneTests {
    /// Every operation: the wire fixtures, and the kinds they lack.
    static var operations: [(author: UserID, role: Role, operation: Operation)] {
        Fixtures.everyOperation + [
            ("ada", .teacher, .setDeviceMuted(device: .camera, muted: true)),
            ("ada", .teacher, .setHandRaising(allowed: false, autoStage: false)),
            ("ada", .teacher, .setCarousel(Carousel(running: true, intervalSeconds: 20, range: .all, order: .joinOrder))),
            ("ada", .teacher, .setBreakoutGroup(id: "g1", name: "Fractions")),
            ("ada", .teacher, .assignBreakoutGroup(user: "ann", group: "g1")),
            ("ada", .teacher, .endBreakout),
            ("ann", .student, .acquireLock(name: "board", ttlSeconds: 30)),
            ("ann", .student, .releaseLock(name: "board", revoke: false)),
            ("node:a", .system, .foldRewards(user: "ann", upTo: 3, sum: 4)),
            ("node:a", .system, .retirePredecessors(generation: 2, rewardFloors: [])),
            ("ada", .teacher, .inviteToStage(user: "ann", seconds: 30)),
            ("ann", .student, .answerInvitation(accept: true)),
        ]
    }

    static func request(_ operation: Operation, author: UserID, role: Role) -> [UInt8] {
        let write = Write(author: author, authorRole: role, authorCounter: 9, operation: operation)
        return WireCodec.encode(WireEnvelope(roomID: "maths", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                             message: .writeRequest(.init(requestID: 3, write: write))))
    }

    @Test func theBytesSayWhatCoreSaysForEveryOperation() {
        var controls: Set<String> = []
        for entry in Self.operations {
            let bytes = Self.request(entry.operation, author: entry.author, role: entry.role)
            #expect(WireLane.isTeacherControl(request: bytes) == entry.operation.isTeacherControl, "\(entry.operation.name)")
            if entry.operation.isTeacherControl { controls.insert(entry.operation.name) }
        }
        // Each of the twelve control kinds was tried, so a wrong field number fails above.
        #expect(controls.count == 12, "\(controls.sorted())")
    }

    @Test func whatIsNotAWriteOrCannotBeReadIsOrdinary() throws {
        let mute = Self.request(.muteAll, author: "ada", role: .teacher)
        #expect(WireLane.isTeacherControl(request: mute))
        // Every truncation of a control write, and a join, a sync, nothing at all.
        for cut in 0..<mute.count { #expect(!WireLane.isTeacherControl(request: Array(mute[..<cut])), "cut at \(cut)") }
        let join = WireCodec.encode(WireEnvelope(roomID: "maths", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                                 message: .joinRequest(.init(user: "ann", role: .student, session: "s", name: "Ann"))))
        #expect(!WireLane.isTeacherControl(request: join))
        #expect(!WireLane.isTeacherControl(request: []))
        // Random bytes (seeded): never a crash, and ordinary unless they happen to frame a control write.
        let seed = UInt64.random(in: 1...UInt64.max)
        var generator = SplitMix64(seed: seed)
        for _ in 0..<2_000 {
            var bytes = (0..<Int.random(in: 0...64, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            if Bool.random(using: &generator) { bytes = Array(mute.prefix(Int.random(in: 0...mute.count, using: &generator))) + bytes }
            _ = WireLane.isTeacherControl(request: bytes)
        }
        print("WireLaneTests seed \(seed) (replay: the loop above with SplitMix64(seed: \(seed)))")
    }
}
