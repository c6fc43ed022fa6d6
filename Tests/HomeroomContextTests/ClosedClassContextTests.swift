import Foundation
import HomeroomCore
import Testing
import HomeroomContext
import HomeroomNode
import Synchronization

/// A closed class through the contexts: when the close delay after the class ended has
/// passed, every pool hears `onRoomClosed` (`ContextEvent.roomClosed`) and leaves the
/// room, and a join again is refused `room-closed`.
@Suite(.serialized) struct ClosedClassContextTests {
    @Test func everyPoolHearsTheRoomCloseAndNobodyRejoins() throws {
        let cluster = try ContextCluster(size: 1, label: "closed-ctx")
        let room = "closed-ctx-\(UInt32.random(in: 0...UInt32.max))"
        let teacher = try cluster.joined("tina", .teacher, room: room)
        let bob = try cluster.pool("bob", .student, room: room)
        let bobHears = Recorder(), tinaHears = Recorder()
        bob.user.registerEventHandler(bobHears)
        teacher.user.registerEventHandler(tinaHears)
        let streamed = Mutex<[ContextEvent]>([])
        let token = bob.addEventListener { event in streamed.withLock { $0.append(event) } }
        defer { bob.removeEventListener(token) }
        try bob.room.join()
        try teacher.room.setSchedule(Schedule(startMillis: WallClock.nowMillis(), durationSeconds: 60, closeDelaySeconds: 1))
        try teacher.room.startClass()
        let ended = WallClock.nowMillis()
        try teacher.room.endClass()
        #expect(eventually(10) { bobHears.saw("room closed") && !bob.room.isJoined }, "\(bobHears.all)")
        #expect(eventually(10) { tinaHears.saw("room closed") && !teacher.room.isJoined }, "\(tinaHears.all)")
        #expect(WallClock.nowMillis() >= ended + 1_000, "closed before its close delay passed")
        #expect(streamed.withLock { $0.contains(.roomClosed) })
        #expect(!bobHears.saw("I was banned") && !bobHears.saw("I was kicked"), "a closing is not a removal: \(bobHears.all)")
        do {
            try bob.room.join()
            Issue.record("a closed room was joined again")
        } catch {
            #expect(error.code == "room-closed", "\(error)")
        }
    }
}
