import HomeroomCore
import Synchronization
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

    @Test func aStreamEventSaysWhetherItsOwnerIsOnline() {
        let events = ContextEvent.translate([.streamUpdated("bob", .camera, .live), .streamUpdated("cy", .microphone, .live)],
                                            localUser: "me", room: { Self.room }, isOnline: { $0 == "bob" }, lookup: Self.info)
        #expect(events == [
            .streamUpdated(StreamInfo(owner: Self.info("bob"), device: .camera, state: .live, ownerOnline: true)),
            .streamUpdated(StreamInfo(owner: Self.info("cy"), device: .microphone, state: .live, ownerOnline: false)),
        ])
    }

    @Test func aRoomMuteBecomesAStreamEventForStreamHandlers() {
        let events = ContextEvent.translate([.deviceMuteUpdated(.camera, muted: true), .streamUpdated("bob", .camera, .deviceOff),
                                             .deviceMuteUpdated(.microphone, muted: false)],
                                            localUser: "me", room: { Self.room }, lookup: Self.info)
        #expect(events == [.roomMuteUpdated(.camera, muted: true), .streamUpdated(StreamInfo(owner: Self.info("bob"), device: .camera, state: .deviceOff)),
                           .roomMuteUpdated(.microphone, muted: false)])
        final class Mutes: StreamHandler, @unchecked Sendable {
            var heard: [String] = []
            func onRoomMuteUpdated(_ device: Device, muted: Bool) { heard.append("\(device) \(muted)") }
        }
        let handler = Mutes()
        for event in events { event.deliver(to: handler) }
        #expect(handler.heard == ["camera true", "microphone false"])
    }

    @Test func handRaisingBecomesAUserEvent() {
        let policy = HandRaisingPolicy(allowed: true, autoStage: true)
        let events = ContextEvent.translate([.handRaisingUpdated(policy), .handLowered("bob")], localUser: "me", room: { Self.room }, lookup: Self.info)
        #expect(events == [.handRaisingUpdated(policy), .handLowered(Self.info("bob"))])
        final class Hands: UserHandler, @unchecked Sendable {
            var heard: [HandRaisingPolicy] = []
            func onHandRaisingUpdated(_ policy: HandRaisingPolicy) { heard.append(policy) }
        }
        let handler = Hands()
        for event in events { event.deliver(to: handler) }
        #expect(handler.heard == [policy])
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

    @Test func messagingChangesBecomeEventsAndOwnLossesNameTheLocalUser() {
        let dot = Dot(origin: ReplicaID(7), sequence: 3)
        let kept = PropertyWriteInfo(author: "ada", revision: 2, dot: dot, value: Array("ada's".utf8))
        let lostOwn = PropertyWriteInfo(author: "", revision: 2, dot: Dot(origin: ReplicaID(8), sequence: 1), value: nil)
        let conflict = PropertyConflict(scope: .user("bob"), key: "seat", kept: kept, lost: lostOwn, lostDots: [lostOwn.dot])
        let key = MessageKey(sender: "bob", counter: 4)
        let events = ContextEvent.translate(
            [.messagesRemoved([key], floor: .origin), .chatMuteUpdated(user: nil, muted: true), .chatMuteUpdated(user: "bob", muted: false),
             .propertyConflict(conflict), .historyLimitUpdated(5), .userTimedOut("bob")],
            localUser: "me", lookup: Self.info)
        #expect(events == [
            .messagesRemoved([key]), .chatMuteUpdated(user: nil, muted: true), .chatMuteUpdated(user: Self.info("bob"), muted: false),
            .propertyConflict(PropertyConflictInfo(owner: "bob", key: "seat", keptRevision: 2, keptAuthor: "ada", keptValue: "ada's",
                                                   lostRevision: 2, lostAuthor: "me")),
        ])
        let presence = ContextEvent.presence(
            [.joined("bob"), .timedOut("cy"), .stateChanged("bob", ["mood": [1]]),
             .interval(PresenceBatcher.PresenceInterval(joined: ["a"], left: ["b"], timedOut: [], states: [:]))],
            lookup: Self.info)
        #expect(presence == [.presence(.joined(Self.info("bob"))), .presence(.timedOut(Self.info("cy"))),
                             .presence(.stateChanged(Self.info("bob"), state: ["mood": [1]])),
                             .presence(.interval(joined: ["a"], left: ["b"], timedOut: [], states: [:]))])
    }

    @Test func deliveredMessagesAreRoomOrPeerEventsWithTheirMarks() {
        let stamp = Stamp(clock: HybridTimestamp(packed: 1_000 << 16, replica: ReplicaID(1)), sequence: 1)
        let room = Message(key: MessageKey(sender: "bob", counter: 2), recipient: nil, type: "chat", payload: Array("hi".utf8), previous: 1, stamp: stamp)
        let peer = Message(key: MessageKey(sender: "bob", counter: 3), recipient: "me", type: "chat", payload: [0xFF], previous: 0, stamp: stamp)
        let events = ContextEvent.messages([MessageInbox.Delivery(message: room, late: false, gap: true),
                                            MessageInbox.Delivery(message: peer, late: true, gap: false)], lookup: Self.info)
        guard case let .roomMessageReceived(first) = events[0], case let .peerMessageReceived(second) = events[1] else {
            Issue.record("wrong kinds: \(events)")
            return
        }
        #expect(first.text == "hi" && first.gap && !first.late && first.sender == Self.info("bob") && first.sentAtMillis == 1_000)
        #expect(second.text == nil && second.late && second.recipient == "me" && second.isPeer)
    }
}

/// A rename or a role change carries what the user was (issue 42, item 3: the feed read
/// "Student cai is now Student cai", the event knowing only the new name).
@Suite struct UserUpdateTests {
    @Test func aTranslatedUpdateCarriesThePreviousNameAndRole() {
        let events = ContextEvent.translate([.userUpdated("cai", previousName: "Cai", previousRole: .student)], localUser: "me",
                                            room: { EventTranslationTests.room },
                                            lookup: { UserInfo(id: $0, name: "Student Cai", role: .assistant) })
        #expect(events == [.userUpdated(UserInfo(id: "cai", name: "Student Cai", role: .assistant),
                                        previous: UserInfo(id: "cai", name: "Cai", role: .student))])
    }

    @Test func aRenameInTheRoomReachesOthersWithTheOldName() throws {
        final class Updates: UserHandler, @unchecked Sendable {
            let seen = Mutex<[String]>([])
            func onUserUpdated(_ user: UserInfo, previous: UserInfo) {
                seen.withLock { $0.append("\(previous.displayName) (\(previous.role)) -> \(user.displayName) (\(user.role))") }
            }
        }
        let cluster = try ContextCluster(size: 1, label: "ctx-rename")
        let teacher = try cluster.joined("ada", .teacher, room: "rename")
        let cai = try cluster.joined("cai", .student, room: "rename")
        let updates = Updates()
        teacher.registerEventHandler(updates)
        let events = Mutex<[ContextEvent]>([])
        let token = teacher.addEventListener { event in events.withLock { $0.append(event) } }
        defer { teacher.removeEventListener(token) }
        try cai.user.updateName("Student Cai")
        #expect(eventually { updates.seen.withLock { $0 } == ["Cai (student) -> Student Cai (student)"] }, "\(updates.seen.withLock { $0 })")
        #expect(events.withLock { $0 }.contains(.userUpdated(UserInfo(id: "cai", name: "Student Cai", role: .student),
                                                             previous: UserInfo(id: "cai", name: "Cai", role: .student))))
    }

    /// A handler written for the one-argument method still hears every update.
    @Test func theOneArgumentHandlerMethodStillHearsUpdates() {
        final class Old: UserHandler, @unchecked Sendable {
            var names: [String] = []
            func onUserUpdated(_ user: UserInfo) { names.append(user.name) }
        }
        let handler = Old()
        ContextEvent.userUpdated(UserInfo(id: "cai", name: "New", role: .student), previous: UserInfo(id: "cai", name: "Old", role: .student))
            .deliver(to: handler)
        #expect(handler.names == ["New"])
    }
}

/// Invitations to the stage as user events.
@Suite struct InvitationEventTests {
    @Test func invitationsBecomeUserEvents() {
        func info(_ user: UserID, _ status: InvitationStatus) -> InvitationInfo {
            InvitationInfo(user: EventTranslationTests.info(user), inviter: EventTranslationTests.info("tom"), seconds: 30, expiresAtMillis: 9_000, status: status)
        }
        let statuses: [UserID: InvitationStatus] = ["me": .pending, "bob": .pending, "cy": .accepted, "dee": .declined, "eve": .expired]
        let events = ContextEvent.translate(["me", "bob", "cy", "dee", "eve", "zed"].map { RoomChange.invitationUpdated($0) },
                                            localUser: "me", room: { EventTranslationTests.room }, invitation: { user in statuses[user].map { info(user, $0) } },
                                            lookup: EventTranslationTests.info)
        // Only the local user hears its own invitation; answers are heard by all.
        #expect(events == [.invitationReceived(info("me", .pending)), .invitationAnswered(info("cy", .accepted)),
                           .invitationAnswered(info("dee", .declined))])
        final class Invitations: UserHandler, @unchecked Sendable {
            var heard: [String] = []
            func onInvitationReceived(_ invitation: InvitationInfo) { heard.append("invited \(invitation.user.id)") }
            func onInvitationAnswered(_ invitation: InvitationInfo) { heard.append("\(invitation.user.id) \(invitation.status.rawValue)") }
            func onInvitationTimedOut(_ invitation: InvitationInfo) { heard.append("\(invitation.user.id) timed out") }
        }
        let handler = Invitations()
        for event in events + [.invitationTimedOut(info("bob", .expired))] { event.deliver(to: handler) }
        #expect(handler.heard == ["invited me", "cy accepted", "dee declined", "bob timed out"])
    }
}
