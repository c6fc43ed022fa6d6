import HomeroomContext
import HomeroomCore
import Testing
@testable import HomeroomWeb

/// The read model as the page receives it, made from snapshots written by hand: groups
/// with their members, the carousel's next turn, peer messages apart from the chat, the
/// link told only while it is lost.
@Suite struct PageModelTests {
    static let ada = UserInfo(id: "ada", name: "Ada", role: .teacher)
    static let ann = UserInfo(id: "ann", name: "Ann", role: .student)

    static func snapshot(connection: ConnectionState = .connected, carousel: CarouselStatus? = nil,
                         breakout: [BreakoutGroup] = []) -> RoomSnapshot {
        let teacher = UserRow(info: ada)
        let student = UserRow(info: ann, group: breakout.first { $0.members.contains("ann") }?.id)
        var snapshot = RoomSnapshot(
            room: RoomInfo(id: "maths", name: "Maths", type: .smallClassroom, stageLimit: 6, handLimit: 10),
            classInfo: ClassInfo(state: .during, sinceMillis: 1_000, schedule: Schedule()), localUser: ada,
            connection: connection, latencyMicros: 0, moderators: [teacher],
            students: UserPage(rows: [student], index: 0, size: 20, total: 1), stage: [], stageWaiting: [],
            raisedHands: [], waitingHands: [], onlineCount: 2, observerCount: 0, carousel: carousel)
        snapshot.breakout = breakout
        return snapshot
    }

    static func reading(link: String = "connected to tcp://127.0.0.1:7100", reason: LinkReason = .joined,
                        messages: [MessageInfo] = []) -> PageModel.Reading {
        PageModel.Reading(node: "tcp://127.0.0.1:7100", link: link, reason: reason.rawValue, messages: messages, localChatMuted: false,
                          isChatMuted: { _ in false }, userInfo: lookup)
    }

    static func lookup(_ id: UserID) -> UserInfo? { [ada, ann].first { $0.id == id } }

    static func json(_ model: PageModel) -> String { PageReply.json(model) }

    static func message(_ sender: UserInfo, _ counter: UInt64, to recipient: UserID? = nil, _ text: String) -> MessageInfo {
        MessageInfo(key: MessageKey(sender: sender.id, counter: counter), sender: sender, recipient: recipient, type: "chat",
                    payload: Array(text.utf8), sentAtMillis: 5_000 + counter)
    }

    @Test func groupsCarryTheirMembersByNameAndTheRosterTagsThem() {
        let group = BreakoutGroup(id: "g1", name: "Fractions", members: ["ann", "zed"], roomID: "maths:g1")
        let model = PageModel(snapshot: Self.snapshot(breakout: [group]), reading: Self.reading(), chatLimit: 40)
        let text = Self.json(model)
        // A member the room does not know (yet) is shown by id.
        #expect(text.contains(#""groups":[{"id":"g1","members":[{"id":"ann","name":"Ann","role":"student"},{"id":"zed","name":"zed","role":"student"}],"name":"Fractions","room":"maths:g1"}]"#), "\(text)")
        #expect(model.students.rows.first?.group == "g1")
        #expect(text.contains(#""group":"g1""#))
    }

    @Test func theCarouselSaysWhenItsNextTurnComes() {
        let settings = Carousel(running: true, intervalSeconds: 30, range: .cameraOn, order: .random)
        let turn = CarouselTurn(number: 3, onStage: ["ann"], candidates: ["ann", "ben"], nextTurnAtMillis: 1_767_000_030_000, rotates: true)
        let model = PageModel(snapshot: Self.snapshot(carousel: CarouselStatus(settings, turn)), reading: Self.reading(), chatLimit: 40)
        #expect(Self.json(model).contains(#""carousel":{"intervalSeconds":30,"nextTurnAtMillis":1767000030000,"order":"random","range":"camera-on","rotates":true,"turn":3}"#))
        let none = PageModel(snapshot: Self.snapshot(), reading: Self.reading(), chatLimit: 40)
        #expect(!Self.json(none).contains(#""carousel""#))
    }

    @Test func peerMessagesAreApartFromTheChatWithTheirRecipientsName() {
        let messages = [
            Self.message(Self.ada, 1, "good morning"),
            Self.message(Self.ada, 2, to: "ann", "see me after class"),
            Self.message(Self.ann, 1, to: "ada", "I will come"),
            Self.message(Self.ann, 2, "hello"),
        ]
        let model = PageModel(snapshot: Self.snapshot(), reading: Self.reading(messages: messages), chatLimit: 40)
        #expect(model.chat.map(\.text) == ["good morning", "hello"])
        #expect(model.chat.allSatisfy { $0.to == nil && $0.toName == nil })
        #expect(model.whispers.map(\.text) == ["see me after class", "I will come"])
        #expect(model.whispers.map(\.toName) == ["Ann", "Ada"])
        #expect(Self.json(model).contains(#""whispers":[{"id":"ada#2","sender":{"id":"ada","name":"Ada","role":"teacher"},"sentAtMillis":5002,"text":"see me after class","to":"ann","toName":"Ann"}"#))
        // Each list keeps its newest `chatLimit`.
        let short = PageModel(snapshot: Self.snapshot(), reading: Self.reading(messages: messages), chatLimit: 1)
        #expect(short.chat.map(\.text) == ["hello"] && short.whispers.map(\.text) == ["I will come"])
    }

    @Test func theLinkIsToldOnlyWhileItIsNotConnected() {
        let lost = "lost tcp://127.0.0.1:7100 4 s ago; every node failed; next try in 2 s"
        let connected = PageModel(snapshot: Self.snapshot(), reading: Self.reading(link: lost), chatLimit: 40)
        #expect(connected.link == nil && !Self.json(connected).contains(#""link""#))
        #expect(!Self.json(connected).contains(#""linkReason""#))
        let aborted = PageModel(snapshot: Self.snapshot(connection: .aborted), reading: Self.reading(link: lost, reason: .banned), chatLimit: 40)
        let text = Self.json(aborted)
        #expect(text.contains(#""connection":"aborted""#) && text.contains(#""link":"\#(lost)""#), "\(text)")
        #expect(text.contains(#""linkReason":"banned""#), "\(text)")
        let suspended = PageModel(snapshot: Self.snapshot(connection: .suspended), reading: Self.reading(link: lost, reason: .backoffSpent),
                                  chatLimit: 40)
        let waiting = Self.json(suspended)
        #expect(waiting.contains(#""connection":"suspended""#) && waiting.contains(#""linkReason":"backoff-spent""#), "\(waiting)")
    }

    @Test func aTeachersPageShowsEveryInvitationAStudentsOnlyItsOwn() {
        let ben = UserInfo(id: "ben", name: "Ben", role: .student)
        var snapshot = Self.snapshot()
        snapshot.invitations = [
            InvitationInfo(user: Self.ann, inviter: Self.ada, seconds: 30, expiresAtMillis: 90_000, status: .pending),
            InvitationInfo(user: ben, inviter: Self.ada, seconds: 30, expiresAtMillis: 95_000, status: .pending),
        ]
        let teachers = PageModel(snapshot: snapshot, reading: Self.reading(), chatLimit: 40)
        #expect(teachers.invitations.map(\.user.id) == ["ann", "ben"])
        #expect(teachers.invitations.first?.inviter?.name == "Ada" && teachers.invitations.first?.expiresAtMillis == 90_000)
        snapshot.localUser = Self.ann
        let anns = PageModel(snapshot: snapshot, reading: Self.reading(), chatLimit: 40)
        #expect(anns.invitations.map(\.user.id) == ["ann"])
        #expect(Self.json(anns).contains(#""invitations":[{"expiresAtMillis":90000,"inviter":{"id":"ada","name":"Ada","role":"teacher"},"user":{"id":"ann","name":"Ann","role":"student"}}]"#),
                "\(Self.json(anns))")
        snapshot.localUser = ben
        snapshot.invitations.removeLast()
        #expect(PageModel(snapshot: snapshot, reading: Self.reading(), chatLimit: 40).invitations.isEmpty)
    }
}
