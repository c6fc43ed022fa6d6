import HomeroomCore
import Testing
@testable import HomeroomContext

@Suite struct EventTranslationTests {
    static let room = RoomInfo(id: "r", name: "R", type: .smallClassroom, stageLimit: 6, handLimit: 10)
    static func info(_ id: String) -> UserInfo { UserInfo(id: id, name: id.uppercased(), role: .student) }

    @Test func remoteAndLocalUsersAreTold() {
        let events = ContextEvent.translate(
            [.userJoined("me"), .userJoined("bob"), .userLeft("bob"), .coHostsAdded(["bob", "me"]), .userKicked("me"),
             .userKicked("bob"), .userBanned("cy"), .streamUpdated("bob", .camera, .live), .userRewarded("bob", amount: 2, total: 5),
             .classStateUpdated(.during), .roomInfoUpdated],
            localUser: "me", room: { Self.room }, lookup: Self.info)
        #expect(events == [
            .remoteUserJoined(Self.info("bob")), .remoteUserLeft(Self.info("bob")), .coHostsAdded([Self.info("bob"), Self.info("me")]),
            .userKickedOut(Self.info("bob")), .userBanned(Self.info("cy")),
            .streamUpdated(StreamInfo(owner: Self.info("bob"), device: .camera, state: .live)),
            .userRewarded(Self.info("bob"), amount: 2, total: 5), .classStateUpdated(.during), .roomInfoUpdated(Self.room),
        ])
    }

    @Test func defaultHandlerMethodsDoNothing() {
        final class OnlyHands: UserHandler, @unchecked Sendable {
            var hands = 0
            func onUserHandsWave(_ user: UserInfo) { hands += 1 }
        }
        let handler = OnlyHands()
        for event in [ContextEvent.handWaved(Self.info("a")), .handLowered(Self.info("a")), .classStateUpdated(.after), .allMicrophonesMuted] {
            event.deliver(to: handler)
        }
        #expect(handler.hands == 1)
    }
}
