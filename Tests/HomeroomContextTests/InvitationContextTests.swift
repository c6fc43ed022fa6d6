import HomeroomContext
import HomeroomNode
import Testing

/// Invitations to the stage through the contexts, on a real two-node cluster: the invited
/// student hears it, accepts and is on stage on the teacher's node; another declines; a
/// third lets it time out, and both sides hear the timeout.
@Suite(.serialized) struct InvitationContextTests {
    @Test func aStudentAcceptsDeclinesOrLetsItTimeOut() throws {
        let cluster = try ContextCluster(size: 2, label: "ctx-invite")
        #expect(cluster.meshed())
        let teacher = try cluster.joined("ada", .teacher, node: 0, room: "podium")
        let seenByTeacher = Recorder()
        teacher.registerEventHandler(seenByTeacher)
        let bob = try cluster.pool("bob", .student, node: 1, room: "podium")
        let heard = Recorder()
        bob.registerEventHandler(heard)
        try bob.room.join()
        let cy = try cluster.joined("cy", .student, node: 1, room: "podium")
        #expect(eventually { teacher.user.userList().count == 3 })

        do {
            try bob.user.acceptInvitation()
            Issue.record("an answer was taken with no invitation")
        } catch {
            #expect(error.code == ContextError.noInvitation, "\(error)")
        }
        try teacher.user.inviteToStage("bob", seconds: 30)
        #expect(eventually { heard.saw("invited bob by ada") }, "\(heard.all)")
        #expect(bob.user.invitation?.status == .pending && bob.snapshot().invitations.map(\.user.id) == ["bob"])
        #expect(eventually { teacher.user.pendingInvitations.map(\.user.id) == ["bob"] })
        try bob.user.acceptInvitation()
        #expect(eventually { teacher.user.coHostList.map(\.id) == ["bob"] && seenByTeacher.saw("invitation bob accepted") }, "\(seenByTeacher.all)")
        #expect(bob.user.invitation?.status == .accepted)
        do {
            try bob.user.declineInvitation()
            Issue.record("a second answer was taken")
        } catch {
            #expect(error.code == ContextError.invitationAnswered, "\(error)")
        }

        try teacher.user.inviteToStage("cy", seconds: 5)
        #expect(eventually { cy.user.invitation?.status == .pending })
        try cy.user.declineInvitation()
        #expect(eventually { seenByTeacher.saw("invitation cy declined") }, "\(seenByTeacher.all)")
        #expect(teacher.user.coHostList.map(\.id) == ["bob"])

        // A new invitation for cy, left unanswered: both sides hear it time out.
        let cyHeard = Recorder()
        cy.registerEventHandler(cyHeard)
        try teacher.user.inviteToStage("cy", seconds: 5)
        #expect(eventually { cyHeard.saw("invited cy by ada") }, "\(cyHeard.all)")
        #expect(eventually(10) { cyHeard.saw("invitation cy timed out") && seenByTeacher.saw("invitation cy timed out") },
                "\(cyHeard.all) / \(seenByTeacher.all)")
        #expect(cy.user.invitation?.status == .expired && teacher.user.pendingInvitations.isEmpty)
        do {
            try cy.user.acceptInvitation()
            Issue.record("an answer was taken after the invitation timed out")
        } catch {
            #expect(error.code == ContextError.invitationExpired, "\(error)")
        }
    }
}
