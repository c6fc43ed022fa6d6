import HomeroomContext
import HomeroomSupport

extension PageModel {
    /// What a frame takes from the pool's contexts besides the snapshot. A value of its
    /// own so that a frame can be made (and tested) from a snapshot written by hand.
    struct Reading {
        /// The node the link is on.
        var node: String
        /// The link for people (the frame carries it only while the link is not connected).
        var link: String
        /// Why the link is in its state (`LinkReason`'s code: "every-node-failed", "backoff-spent", "banned", ...).
        var reason: String = LinkReason.joined.rawValue
        /// The newest messages the local user may see (room and its own peer messages), oldest first.
        var messages: [MessageInfo]
        var localChatMuted: Bool
        var isChatMuted: (UserID) -> Bool
        /// Who a user id is, for names the snapshot's rows may not hold (another page of a hall).
        var userInfo: (UserID) -> UserInfo?
    }

    /// One frame of the room. `page` pages the students (every scene pages; a small room fits one page).
    init(pool: ContextPool, page: Int, pageSize: Int, chatLimit: Int) {
        let snapshot = pool.snapshot(page: page, pageSize: pageSize)
        let message = pool.message, users = pool.user
        let link = pool.monitor.link
        // Twice the window: a burst of room chat does not push every peer message out of it.
        let reading = Reading(node: link.node ?? "", link: link.summary(nowMillis: WallClock.nowMillis()), reason: link.reason.rawValue,
                              messages: message.history(limit: chatLimit * 2), localChatMuted: message.isLocalUserMuted,
                              isChatMuted: { message.isChatMuted($0) }, userInfo: { users.userInfo($0) })
        self.init(snapshot: snapshot, reading: reading, chatLimit: chatLimit)
    }

    init(snapshot: RoomSnapshot, reading: Reading, chatLimit: Int) {
        func user(_ info: UserInfo) -> User { User(id: info.id, name: info.displayName, role: "\(info.role)") }
        func user(id: UserID) -> User { reading.userInfo(id).map(user) ?? User(id: id, name: id, role: "student") }
        func row(_ row: UserRow) -> Row {
            Row(id: row.id, name: row.info.displayName, role: "\(row.info.role)", online: row.online, onStage: row.onStage,
                waitingForStage: row.waitingForStage, board: row.boardGranted, camera: Self.stream(row.shownStream(.camera)),
                mic: Self.stream(row.shownStream(.microphone)), rewards: row.rewards, hand: row.handRaised,
                chatMuted: reading.isChatMuted(row.id), group: row.group)
        }
        func message(_ info: MessageInfo) -> Message {
            Message(id: "\(info.key)", sender: user(info.sender), text: info.text ?? "", sentAtMillis: info.sentAtMillis,
                    to: info.recipient, toName: info.recipient.map { user(id: $0).name })
        }
        room = RoomDTO(id: snapshot.room.id, name: snapshot.room.displayName, type: "\(snapshot.room.type)",
                       stageLimit: snapshot.room.stageLimit, handLimit: snapshot.room.handLimit,
                       cameraMuted: snapshot.room.mutedDevices.contains(.camera),
                       microphoneMuted: snapshot.room.mutedDevices.contains(.microphone),
                       handRaising: snapshot.room.handRaising.allowed, autoStage: snapshot.room.handRaising.autoStage)
        classState = "\(snapshot.classInfo.state)"
        classSinceMillis = snapshot.classInfo.sinceMillis
        classDurationSeconds = snapshot.classInfo.schedule.durationSeconds
        local = user(snapshot.localUser)
        connection = snapshot.connection.rawValue
        node = reading.node
        // Only while not connected: a connected frame stays equal from one second to the next.
        link = snapshot.connection == .connected ? nil : reading.link
        linkReason = snapshot.connection == .connected ? nil : reading.reason
        // Rounded to the millisecond: a frame that differs only in noise is not sent again.
        latencyMicros = Int(snapshot.latencyMicros / 1000) * 1000
        moderators = snapshot.moderators.map(row)
        students = Page(rows: snapshot.students.rows.map(row), index: snapshot.students.index, size: snapshot.students.size,
                        total: snapshot.students.total, count: snapshot.students.count)
        stage = snapshot.stage.map(row)
        stageWaiting = snapshot.stageWaiting.map(row)
        hands = snapshot.raisedHands.map(user)
        waitingHands = snapshot.waitingHands.map(user)
        onlineCount = snapshot.onlineCount
        observerCount = snapshot.observerCount
        carousel = snapshot.carousel.map {
            Carousel(intervalSeconds: $0.intervalSeconds, range: $0.range.name, order: $0.order.name, turn: $0.turn,
                     nextTurnAtMillis: $0.nextTurnAtMillis, rotates: $0.rotates)
        }
        let moderates = snapshot.localUser.role == .teacher || snapshot.localUser.role == .assistant
        invitations = snapshot.invitations.filter { moderates || $0.user.id == snapshot.localUser.id }.map {
            Invitation(user: user($0.user), inviter: $0.inviter.map(user), expiresAtMillis: $0.expiresAtMillis)
        }
        groups = snapshot.breakout.map { Group(id: $0.id, name: $0.name, members: $0.members.map { user(id: $0) }, room: $0.roomID) }
        chat = reading.messages.filter { !$0.isPeer }.suffix(chatLimit).map(message)
        whispers = reading.messages.filter(\.isPeer).suffix(chatLimit).map(message)
        chatMuted = reading.localChatMuted
    }

    static func stream(_ state: StreamState) -> String {
        switch state {
        case .inoperable: return "inoperable"
        case .deviceOff: return "device-off"
        case .privilegeOff: return "privilege-off"
        case .live: return "live"
        }
    }
}
