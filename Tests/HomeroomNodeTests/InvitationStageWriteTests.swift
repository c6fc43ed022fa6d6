import HomeroomCore
import HomeroomSupport
import Testing
@testable import HomeroomNode

/// An accepted invitation puts its student on stage through op 46, which a client written
/// before invitations existed skips (marking it seen, so no repair would send the stage
/// register again). The node follows the accept with a plain stage write of its own: the
/// student's stage register then carries another dot than the accept's, which such a
/// client lacks and gets.
@Suite struct InvitationStageWriteTests {
    @Test func anAcceptedInvitationIsFollowedByAPlainStageWrite() throws {
        let config = NodeConfig(name: "inv", listen: "inproc://inv-rep-\(UInt32.random(in: 0...UInt32.max))",
                                publish: "inproc://inv-pub-\(UInt32.random(in: 0...UInt32.max))")
        let (logger, _) = Logger.capturing(label: "inv", level: .error)
        let node = try ClusterNode(config: config, logger: logger)
        defer { node.stop() }
        node.join(room: "maths", user: "ada", role: .teacher, session: "a1", name: "Ada")
        node.join(room: "maths", user: "ana", role: .student, session: "s1", name: "Ana")
        let invite = node.submit(room: "maths", Write(author: "ada", authorRole: .teacher, authorCounter: 2,
                                                      operation: .inviteToStage(user: "ana", seconds: 60)))
        #expect(invite.status == .accepted, "\(invite.message)")
        let accept = node.submit(room: "maths", Write(author: "ana", authorRole: .student, authorCounter: 2,
                                                      operation: .answerInvitation(accept: true)))
        #expect(accept.status == .accepted, "\(accept.message)")
        let room = node.snapshot(room: "maths", visibleTo: "ada")
        let stage = try #require(room.users["ana"]?.stage)
        #expect(stage.value && room.stageWinners == ["ana"])
        #expect(stage.stamp.dot != accept.dot, "the stage register holds only the accept's dot: an older client never gets it")
        #expect(room.invitations["ana"]?.answer?.accepted == true)

        // A decline is not followed by anything.
        node.join(room: "maths", user: "ben", role: .student, session: "s2", name: "Ben")
        _ = node.submit(room: "maths", Write(author: "ada", authorRole: .teacher, authorCounter: 3, operation: .inviteToStage(user: "ben", seconds: 60)))
        let decline = node.submit(room: "maths", Write(author: "ben", authorRole: .student, authorCounter: 2, operation: .answerInvitation(accept: false)))
        #expect(decline.status == .accepted)
        #expect(node.snapshot(room: "maths", visibleTo: "ada").users["ben"]?.stage.value != true)
    }
}
