import HomeroomContext
import HomeroomNode
import Testing

/// Hand raising through the contexts, on a real two-node cluster: switched off, a raise is
/// refused `hand-raising-off` and a raised hand is lowered; on with auto-stage, a raise
/// puts the student on stage while a seat is free; with the stage full, a raise is a raised hand.
@Suite(.serialized) struct HandRaisingContextTests {
    @Test func aTeacherSwitchesHandRaisingOffThenOnWithAutoStage() throws {
        let cluster = try ContextCluster(size: 2, label: "ctx-hands")
        #expect(cluster.meshed())
        let teacher = try cluster.joined("ada", .teacher, node: 0, room: "hands")
        let bob = try cluster.pool("bob", .student, node: 1, room: "hands")
        let heard = Recorder()
        bob.registerEventHandler(heard)
        try bob.room.join()
        let cy = try cluster.joined("cy", .student, node: 1, room: "hands")
        try cy.user.handsWave()
        #expect(eventually { teacher.user.raisedHands.map(\.id) == ["cy"] })

        try teacher.user.allowHandsUp(false)
        #expect(eventually { heard.saw("hand raising off") && heard.saw("hand down cy") }, "\(heard.all)")
        #expect(bob.snapshot().room.handRaising == HandRaisingPolicy(allowed: false) && bob.user.raisedHands.isEmpty)
        do {
            try bob.user.handsWave()
            Issue.record("a raise was taken while hand raising is off")
        } catch {
            #expect(error.code == ContextError.handRaisingOff, "\(error)")
        }

        try teacher.room.setStageLimit(1)
        try teacher.user.allowHandsUp(true, autoStage: true)
        #expect(eventually { heard.saw("hand raising on, auto-stage") }, "\(heard.all)")
        #expect(eventually { bob.user.handRaising.autoStage })
        try bob.user.handsWave()
        #expect(eventually { heard.saw("stage+ bob") && teacher.user.coHostList.map(\.id) == ["bob"] }, "\(heard.all)")
        #expect(bob.user.raisedHands.isEmpty, "the raise took a seat, not a place on the hand list")
        // The stage is full now: cy's raise is a raise.
        try cy.user.handsWave()
        #expect(eventually { teacher.user.raisedHands.map(\.id) == ["cy"] && teacher.user.coHostList.map(\.id) == ["bob"] })
    }
}
