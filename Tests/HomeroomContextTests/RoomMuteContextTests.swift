import HomeroomContext
import HomeroomNode
import Testing

/// The room's camera and microphone mutes through the contexts, on a real two-node
/// cluster: the teacher mutes, a student on the other node sees the event and its camera
/// shown off, is refused `device-muted`, and turns it on again once unmuted.
@Suite(.serialized) struct RoomMuteContextTests {
    @Test func aStudentCannotTurnOnACameraTheTeacherMuted() throws {
        let cluster = try ContextCluster(size: 2, label: "ctx-mutes")
        #expect(cluster.meshed())
        let teacher = try cluster.joined("ada", .teacher, node: 0, room: "mutes")
        let bob = try cluster.pool("bob", .student, node: 1, room: "mutes")
        let heard = Recorder()
        bob.registerEventHandler(heard)
        try bob.room.join()
        // Bob joined through the other node: the teacher's node must know him first.
        #expect(eventually { teacher.user.row("bob") != nil })
        try teacher.user.addCoHost("bob")
        try bob.stream.openLocalDevice(.camera)
        #expect(eventually { teacher.stream.streamState(of: "bob", device: .camera) == .privilegeOff })
        try teacher.stream.updatePublishPrivilege(of: "bob", device: .camera, allowed: true)
        #expect(eventually { heard.saw("bob camera live") }, "\(heard.all)")

        try teacher.stream.muteRoom(.camera)
        #expect(teacher.stream.isRoomMuted(.camera) && !teacher.stream.isRoomMuted(.microphone))
        #expect(eventually { heard.saw("room camera muted") && heard.saw("bob camera device-off") }, "\(heard.all)")
        #expect(bob.stream.isRoomMuted(.camera) && !bob.stream.isLocalDeviceOn(.camera))
        #expect(bob.snapshot().room.mutedDevices == [.camera] && bob.user.row("bob")?.camera == .deviceOff)
        do {
            try bob.stream.openLocalDevice(.camera)
            Issue.record("a muted camera was turned on")
        } catch {
            #expect(error.code == ContextError.deviceMuted, "\(error)")
            #expect(error.message.contains("unmute"), "\(error)")
        }
        // The teacher is not muted; the microphone is not either.
        try teacher.stream.openLocalDevice(.camera)
        try bob.stream.openLocalDevice(.microphone)

        try teacher.stream.muteRoom(.camera, muted: false)
        #expect(eventually { heard.saw("room camera unmuted") }, "\(heard.all)")
        #expect(bob.user.row("bob")?.camera == .deviceOff, "an unmute turns nothing on")
        try bob.stream.openLocalDevice(.camera)
        #expect(eventually { teacher.stream.streamState(of: "bob", device: .camera) == .live })
        #expect(bob.snapshot().room.mutedDevices.isEmpty)
    }
}
