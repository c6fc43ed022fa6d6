import Testing
@testable import HomeroomCore

/// Invitations to the stage (Flexible Classroom's `invitePodium(user, duration)`): accept
/// and decline, the timeout decided from stamps on every replica, the stage limit,
/// withdrawal by a later stage write or kick, refusals, and merges in any order.
@Suite struct InvitationTests {
    typealias Node = LockTests.Node
    static let now = LockTests.now

    static func classroom() throws -> Node { try HandRaisingTests.classroom() }

    static func invite(_ node: inout Node, _ user: UserID, seconds: UInt32 = 30, at time: UInt64) throws -> Delta {
        try node.write("tom", .teacher, .inviteToStage(user: user, seconds: seconds), at: time).get()
    }

    static func answer(_ node: inout Node, _ user: UserID, accept: Bool, at time: UInt64) -> Result<Delta, WriteError> {
        node.write(user, .student, .answerInvitation(accept: accept), at: time)
    }

    @Test func anAcceptPutsTheStudentOnStageAndNamesItsInvitation() throws {
        var node = try Self.classroom()
        let invitation = try Self.invite(&node, "ana", seconds: 20, at: Self.now + 1)
        #expect(node.room.openInvitation(for: "ana")?.inviter == "tom")
        #expect(node.room.invitations["ana"]?.status(nowMillis: Self.now + 2) == .pending)
        let accept = try Self.answer(&node, "ana", accept: true, at: Self.now + 5_000).get()
        // The origin filled in what every replica decides timeliness from.
        #expect(accept.operation == .answerInvitation(accept: true, invitation: invitation.stamp, seconds: 20))
        #expect(node.room.stageWinners == ["ana"] && node.room.users["ana"]?.stage.stamp == accept.stamp)
        #expect(node.room.invitations["ana"]?.status(nowMillis: Self.now + 60_000) == .accepted)
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: false, at: Self.now + 6_000)) == "invitation-answered")
        // A teacher's later stage remove takes the student off, as any later stage write.
        _ = try node.write("tom", .teacher, .setStage(user: "ana", on: false), at: Self.now + 7_000).get()
        #expect(node.room.stageWinners.isEmpty)
    }

    @Test func aDeclineLeavesTheStudentOffAndRefusalsSayWhy() throws {
        var node = try Self.classroom()
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: true, at: Self.now + 1)) == "no-invitation")
        _ = try Self.invite(&node, "ana", at: Self.now + 2)
        _ = try Self.answer(&node, "ana", accept: false, at: Self.now + 3).get()
        #expect(node.room.stageWinners.isEmpty && node.room.invitations["ana"]?.answer?.accepted == false)
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: true, at: Self.now + 4)) == "invitation-answered")
        // ben was never invited; his answer names nothing.
        #expect(node.refusalCode(Self.answer(&node, "ben", accept: true, at: Self.now + 5)) == "no-invitation")
        #expect(Authority.check(author: "ana", role: .student, operation: .inviteToStage(user: "ben", seconds: 30))?.code == "requires-moderator")
        #expect(Authority.check(author: "tom", role: .teacher, operation: .inviteToStage(user: "ben", seconds: 4))?.code == "invalid-value")
        #expect(Authority.check(author: "tom", role: .teacher, operation: .inviteToStage(user: "ben", seconds: 601))?.code == "invalid-value")
        #expect(Authority.check(author: "ana", role: .observer, operation: .answerInvitation(accept: true))?.code == "observer-read-only")
        #expect(node.refusalCode(node.write("tom", .teacher, .inviteToStage(user: "zed", seconds: 30), at: Self.now + 6)) == "user-not-found")
        _ = try node.write("tom", .teacher, .setStage(user: "cy", on: true), at: Self.now + 7).get()
        #expect(node.refusalCode(node.write("tom", .teacher, .inviteToStage(user: "cy", seconds: 30), at: Self.now + 8)) == "invalid")
    }

    @Test func anUnansweredInvitationExpiresAndALateAnswerIsRefused() throws {
        var node = try Self.classroom()
        _ = try Self.invite(&node, "ana", seconds: 10, at: Self.now)
        #expect(node.room.invitations["ana"]?.status(nowMillis: Self.now + 10_000) == .pending)
        #expect(node.room.invitations["ana"]?.status(nowMillis: Self.now + 10_001) == .expired)
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: true, at: Self.now + 10_500)) == "invitation-expired")
        #expect(node.room.stageWinners.isEmpty)
    }

    /// Whether an answer came in time is read from the stamps in the deltas, never from a
    /// replica's clock: a late-stamped accept (its origin's screen passed it) puts nobody
    /// on stage anywhere, an in-time one does on a replica that applies it much later.
    @Test func theTimeoutIsDecidedFromStampsOnEveryReplica() throws {
        var node = try Self.classroom()
        let invitation = try Self.invite(&node, "ana", seconds: 10, at: Self.now)
        var late = Sequencer(replica: ReplicaID(node: "n9", generation: 1))
        var early = Sequencer(replica: ReplicaID(node: "n8", generation: 1))
        let prepared = Write(author: "ana", authorRole: .student, authorCounter: 1,
                             operation: .answerInvitation(accept: true, invitation: invitation.stamp, seconds: 10))
        let lateAccept = late.stamp(prepared, nowMillis: Self.now + 10_001)
        let inTime = early.stamp(prepared, nowMillis: Self.now + 9_999)
        var lateFirst = node.room, inTimeFirst = node.room, onlyLate = node.room
        #expect(onlyLate.apply(lateAccept).changes.isEmpty)
        #expect(onlyLate.stageWinners.isEmpty && onlyLate.invitations["ana"]?.answer == nil)
        _ = lateFirst.apply(lateAccept); _ = lateFirst.apply(inTime)
        _ = inTimeFirst.apply(inTime); _ = inTimeFirst.apply(lateAccept)
        #expect(lateFirst == inTimeFirst && lateFirst.stageWinners == ["ana"])
        #expect(lateFirst.invitations["ana"]?.answer == StageInvitation.Answer(at: inTime.stamp, accepted: true))
        // An answer reaching a replica before its invitation is decided all the same.
        var fresh = RoomState(roomID: "r")
        for delta in [inTime] { _ = fresh.apply(delta) }
        #expect(fresh.invitations["ana"]?.answer?.accepted == true && fresh.invitations["ana"]?.inviter == "")
        _ = fresh.apply(invitation)
        #expect(fresh.invitations["ana"] == lateFirst.invitations["ana"])
    }

    /// ana accepts on n2 while, cut off, her other session declines on n1: every replica
    /// and every merge order ends with the accept (it put her on stage) and her on stage.
    @Test func concurrentAnswersMergeTheSameWayInAnyOrder() throws {
        var a = try Self.classroom()
        _ = try Self.invite(&a, "ana", at: Self.now + 1)
        var b = Node("n2", room: a.room)
        let decline = try Self.answer(&a, "ana", accept: false, at: Self.now + 1_000).get()
        let accept = try Self.answer(&b, "ana", accept: true, at: Self.now + 2_000).get()
        var declineFirst = a.room, acceptFirst = b.room
        _ = declineFirst.apply(accept)
        _ = acceptFirst.apply(decline)
        a.room.merge(b.room.missing(since: a.room.seen))
        b.room.merge(a.room.missing(since: b.room.seen))
        for room in [declineFirst, acceptFirst, b.room] {
            #expect(room == a.room)
        }
        #expect(a.room.stageWinners == ["ana"] && a.room.invitations["ana"]?.answer?.accepted == true)
        // A patch into an empty replica carries the invitations too.
        var empty = RoomState(roomID: "r")
        empty.merge(a.room.missing(since: .empty))
        #expect(empty.invitations == a.room.invitations)
    }

    /// Of two answers made apart, an accept wins over a decline whichever came first, and
    /// of two accepts the earlier: the same on every replica in any order.
    @Test func anAcceptBeatsALaterDeclineAndTheEarlierOfTwoAcceptsWins() throws {
        for secondAccepts in [false, true] {
            var a = try Self.classroom()
            _ = try Self.invite(&a, "ana", at: Self.now + 1)
            var b = Node("n2", room: a.room)
            let first = try Self.answer(&a, "ana", accept: true, at: Self.now + 1_000).get()
            let second = try Self.answer(&b, "ana", accept: secondAccepts, at: Self.now + 2_000).get()
            var firstThenSecond = a.room, secondThenFirst = b.room
            _ = firstThenSecond.apply(second)
            _ = secondThenFirst.apply(first)
            #expect(firstThenSecond == secondThenFirst, "second accepts: \(secondAccepts)")
            let answer = try #require(firstThenSecond.invitations["ana"]?.answer)
            #expect(answer.accepted && answer.at == first.stamp, "the earlier accept wins (second accepts: \(secondAccepts))")
            #expect(firstThenSecond.stageWinners == ["ana"])
        }
    }

    /// The stage full, an accept is refused `stage-full` as a teacher's stage add is.
    @Test func anAcceptRespectsTheStageLimit() throws {
        var node = try Self.classroom()
        _ = try node.write("tom", .teacher, .setStageLimit(1), at: Self.now + 1).get()
        _ = try node.write("tom", .teacher, .setStage(user: "ben", on: true), at: Self.now + 2).get()
        _ = try Self.invite(&node, "ana", at: Self.now + 3)
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: true, at: Self.now + 4)) == "stage-full")
        // Declining needs no seat; once a seat is free an accept would have taken it.
        _ = try node.write("tom", .teacher, .setStage(user: "ben", on: false), at: Self.now + 5).get()
        _ = try Self.answer(&node, "ana", accept: true, at: Self.now + 6).get()
        #expect(node.room.stageWinners == ["ana"])
    }

    /// A stage write about the student or a kick after the invitation withdraws it; a new
    /// invitation replaces the earlier one (and its duration).
    @Test func laterStageWritesKicksAndNewInvitationsDecideOverAnOpenOne() throws {
        var node = try Self.classroom()
        _ = try Self.invite(&node, "ana", at: Self.now + 1)
        _ = try node.write("tom", .teacher, .setStage(user: "ana", on: false), at: Self.now + 2).get()
        #expect(node.room.openInvitation(for: "ana") == nil)
        #expect(node.refusalCode(Self.answer(&node, "ana", accept: true, at: Self.now + 3)) == "no-invitation")

        _ = try Self.invite(&node, "ben", at: Self.now + 4)
        _ = try node.write("tom", .teacher, .kick(user: "ben"), at: Self.now + 5).get()
        #expect(node.refusalCode(Self.answer(&node, "ben", accept: true, at: Self.now + 6)) == "no-invitation")

        _ = try Self.invite(&node, "cy", seconds: 5, at: Self.now + 10)
        let second = try Self.invite(&node, "cy", seconds: 60, at: Self.now + 20)
        #expect(node.room.invitations["cy"]?.issued == second.stamp && node.room.invitations["cy"]?.seconds == 60)
        _ = try Self.answer(&node, "cy", accept: true, at: Self.now + 30_000).get()
        #expect(node.room.stageWinners == ["cy"])
    }
}
