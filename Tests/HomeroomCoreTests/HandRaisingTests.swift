import Testing
@testable import HomeroomCore

/// Hand raising switched off and on, and auto-stage (Flexible Classroom's
/// `allowHandsUp(state, autoStage)`): refusals, lowered hands, a raise racing the switch,
/// and raises that take stage seats within the stage limit and its candidate order.
@Suite struct HandRaisingTests {
    typealias Node = LockTests.Node
    static let now = LockTests.now

    /// Node n1 holding a room with tom (teacher) and the students ana, ben and cy.
    static func classroom() throws -> Node {
        var node = Node("n1")
        for (user, role) in [("tom", Role.teacher), ("ana", .student), ("ben", .student), ("cy", .student)] {
            _ = try node.write(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role,
                                                        host: node.sequencer.replica, incarnation: 1), at: now).get()
        }
        return node
    }

    static func raise(_ node: inout Node, _ user: UserID, at time: UInt64) -> Result<Delta, WriteError> {
        node.write(user, .student, .setHand(user: user, raised: true), at: time)
    }

    @Test func switchedOffARaiseIsRefusedRaisedHandsAreLoweredAndStayDown() throws {
        var node = try Self.classroom()
        var replay = node.room
        let raises = [try Self.raise(&node, "ana", at: Self.now + 1).get(), try Self.raise(&node, "ben", at: Self.now + 2).get()]
        #expect(node.room.raisedHands == ["ana", "ben"])
        let off = try node.write("tom", .teacher, .setHandRaising(allowed: false, autoStage: false), at: Self.now + 3).get()
        for raise in raises { _ = replay.apply(raise) }
        #expect(replay.apply(off).changes == [.handRaisingUpdated(HandRaisingPolicy(allowed: false)), .handLowered("ana"), .handLowered("ben")])
        #expect(node.room.raisedHands.isEmpty && node.room.users["ana"]?.hand.value == true && !node.room.handRaisingPolicy.allowed)
        let refused = Self.raise(&node, "cy", at: Self.now + 4)
        #expect(node.refusalCode(refused) == "hand-raising-off")
        if case let .failure(error) = refused { #expect(error.description.contains("switch it on again")) }
        _ = try node.write("ana", .student, .setHand(user: "ana", raised: false), at: Self.now + 5).get()
        // On again: the lowered hands stay down until raised again.
        _ = try node.write("tom", .teacher, .setHandRaising(allowed: true, autoStage: false), at: Self.now + 6).get()
        #expect(node.room.raisedHands.isEmpty && node.room.handRaisingPolicy == HandRaisingPolicy())
        _ = try Self.raise(&node, "ben", at: Self.now + 7).get()
        #expect(node.room.raisedHands == ["ben"])
        #expect(Authority.check(author: "ana", role: .student, operation: .setHandRaising(allowed: true, autoStage: true))?.code == "requires-moderator")
    }

    /// ana raises on n2, cut off, after tom switched hand raising off on n1: on every
    /// replica, in any order, her hand is down, and it stays down once it is on again.
    @Test func aRaiseRacingTheSwitchOffNeverCounts() throws {
        var a = try Self.classroom()
        var b = Node("n2", room: a.room)
        let off = try a.write("tom", .teacher, .setHandRaising(allowed: false, autoStage: false), at: Self.now + 10).get()
        let raised = try Self.raise(&b, "ana", at: Self.now + 20).get()
        #expect(off.stamp < raised.stamp && b.room.raisedHands == ["ana"])
        var offFirst = a.room, raiseFirst = b.room
        _ = offFirst.apply(raised)
        #expect(raiseFirst.apply(off).changes.contains(.handLowered("ana")))
        a.room.merge(b.room.missing(since: a.room.seen))
        b.room.merge(a.room.missing(since: b.room.seen))
        for room in [offFirst, raiseFirst, b.room] {
            #expect(room == a.room && room.raisedHands.isEmpty)
        }
        _ = try a.write("tom", .teacher, .setHandRaising(allowed: true, autoStage: false), at: Self.now + 30).get()
        #expect(a.room.raisedHands.isEmpty)
    }

    /// With auto-stage, raises take free seats (as the system's stage write, in stage order);
    /// the stage full, the hand stays raised. The hand limit does not hold back a raise
    /// that takes a seat.
    @Test func autoStagePutsRaisesOnStageWhileSeatsRemain() throws {
        var node = try Self.classroom()
        _ = try node.write("tom", .teacher, .setStageLimit(2), at: Self.now + 1).get()
        _ = try node.write("tom", .teacher, .setHandLimit(0), at: Self.now + 1).get()
        _ = try node.write("tom", .teacher, .setHandRaising(allowed: true, autoStage: true), at: Self.now + 2).get()
        #expect(node.room.handRaisingPolicy == HandRaisingPolicy(allowed: true, autoStage: true))
        let ana = try Self.raise(&node, "ana", at: Self.now + 3).get()
        #expect(ana.operation == .setStage(user: "ana", on: true) && ana.author == "ana" && ana.authorRole == .system)
        _ = try Self.raise(&node, "ben", at: Self.now + 4).get()
        #expect(node.room.stageWinners == ["ana", "ben"] && node.room.raisedHands.isEmpty)
        // Full: cy's raise is a raise (and the hand limit of 0 refuses it).
        #expect(node.refusalCode(Self.raise(&node, "cy", at: Self.now + 5)) == "hand-limit-reached")
        _ = try node.write("tom", .teacher, .setHandLimit(5), at: Self.now + 6).get()
        let cy = try Self.raise(&node, "cy", at: Self.now + 7).get()
        #expect(cy.operation == .setHand(user: "cy", raised: true) && node.room.raisedHands == ["cy"] && node.room.stageWinners == ["ana", "ben"])
        // Without auto-stage, or while a carousel runs, a raise is a raise.
        _ = try node.write("tom", .teacher, .setStage(user: "ben", on: false), at: Self.now + 8).get()
        _ = try node.write("tom", .teacher, .setHandRaising(allowed: true, autoStage: false), at: Self.now + 9).get()
        #expect(try Self.raise(&node, "ben", at: Self.now + 10).get().operation == .setHand(user: "ben", raised: true))
        // The teacher's own raise is never turned into a promotion.
        #expect(!node.room.autoStages(Write(author: "tom", authorRole: .teacher, authorCounter: 1, operation: .setHand(user: "tom", raised: true))))
    }

    /// Two students raise at once on two nodes for the last seat: both are promoted there,
    /// and every replica agrees the earlier (by stamp) sits and the other waits for a seat.
    @Test(arguments: [false, true])
    func twoRaisesForTheLastSeatAgreeOnWhoSits(_ benFirst: Bool) throws {
        var a = try Self.classroom()
        _ = try a.write("tom", .teacher, .setStageLimit(1), at: Self.now + 1).get()
        _ = try a.write("tom", .teacher, .setHandRaising(allowed: true, autoStage: true), at: Self.now + 2).get()
        var b = Node("n2", room: a.room)
        let ana = try Self.raise(&a, "ana", at: Self.now + (benFirst ? 20 : 10)).get()
        let ben = try Self.raise(&b, "ben", at: Self.now + (benFirst ? 10 : 20)).get()
        #expect(a.room.stageWinners == ["ana"] && b.room.stageWinners == ["ben"])
        var anaFirst = a.room, benFirstRoom = b.room
        _ = anaFirst.apply(ben)
        _ = benFirstRoom.apply(ana)
        a.room.merge(b.room.missing(since: a.room.seen))
        let winner = benFirst ? "ben" : "ana", waiting = benFirst ? "ana" : "ben"
        for room in [anaFirst, benFirstRoom, a.room] {
            #expect(room.stageWinners == [winner] && room.stageWaiting == [waiting] && room.raisedHands.isEmpty)
        }
        // A later raise finds the stage full: the hand stays raised.
        #expect(try Self.raise(&a, "cy", at: Self.now + 30).get().operation == .setHand(user: "cy", raised: true))
    }
}
