import HomeroomContext

/// The read model the page draws, as JSON: what `ContextPool.snapshot` says, for one
/// user of one room (the pool's room only: nothing of any other room reaches the page).
struct PageModel: Encodable, Equatable {
    struct User: Encodable, Equatable {
        var id: String
        var name: String
        var role: String
    }

    struct Row: Encodable, Equatable {
        var id: String
        var name: String
        var role: String
        var online: Bool
        var onStage: Bool
        var waitingForStage: Bool
        var board: Bool
        /// One of inoperable, device-off, privilege-off, live (what the roster shows: an offline user's is off).
        var camera: String
        var mic: String
        var rewards: Int64
        var hand: Bool
        var chatMuted: Bool
    }

    struct Page: Encodable, Equatable {
        var rows: [Row]
        var index: Int
        var size: Int
        var total: Int
        var count: Int
    }

    struct Message: Encodable, Equatable {
        var id: String
        var sender: User
        var text: String
        var sentAtMillis: UInt64
        /// A peer message: only the two users see it.
        var to: String?
    }

    struct Carousel: Encodable, Equatable {
        var intervalSeconds: UInt32
        var turn: UInt64
        var rotates: Bool
    }

    struct Group: Encodable, Equatable {
        var id: String
        var name: String
        var members: Int
    }

    var type = "model"
    var room: RoomDTO
    var classState: String
    var classSinceMillis: UInt64
    var classDurationSeconds: UInt32
    var local: User
    var connection: String
    var node: String
    var latencyMicros: Int
    var moderators: [Row]
    var students: Page
    var stage: [Row]
    var stageWaiting: [Row]
    var hands: [User]
    var waitingHands: [User]
    var onlineCount: Int
    var observerCount: Int
    var carousel: Carousel?
    var groups: [Group]
    var chat: [Message]
    var chatMuted: Bool

    struct RoomDTO: Encodable, Equatable {
        var id: String
        var name: String
        var type: String
        var stageLimit: Int
        var handLimit: Int
    }
}

extension PageModel {
    /// One frame of the room. `page` pages the students (every scene pages; a small room fits one page).
    init(pool: ContextPool, page: Int, pageSize: Int, chatLimit: Int) {
        let snapshot = pool.snapshot(page: page, pageSize: pageSize)
        let message = pool.message
        func user(_ info: UserInfo) -> User { User(id: info.id, name: info.displayName, role: "\(info.role)") }
        func row(_ row: UserRow) -> Row {
            Row(id: row.id, name: row.info.displayName, role: "\(row.info.role)", online: row.online, onStage: row.onStage,
                waitingForStage: row.waitingForStage, board: row.boardGranted, camera: Self.stream(row.shownStream(.camera)),
                mic: Self.stream(row.shownStream(.microphone)), rewards: row.rewards, hand: row.handRaised,
                chatMuted: message.isChatMuted(row.id))
        }
        room = RoomDTO(id: snapshot.room.id, name: snapshot.room.displayName, type: "\(snapshot.room.type)",
                       stageLimit: snapshot.room.stageLimit, handLimit: snapshot.room.handLimit)
        classState = "\(snapshot.classInfo.state)"
        classSinceMillis = snapshot.classInfo.sinceMillis
        classDurationSeconds = snapshot.classInfo.schedule.durationSeconds
        local = user(snapshot.localUser)
        connection = snapshot.connection.rawValue
        node = pool.monitor.link.node ?? ""
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
        carousel = snapshot.carousel.map { Carousel(intervalSeconds: $0.intervalSeconds, turn: $0.turn, rotates: $0.rotates) }
        groups = snapshot.breakout.map { Group(id: $0.id, name: $0.name, members: $0.members.count) }
        chat = message.history(limit: chatLimit).map { info in
            Message(id: "\(info.key)", sender: user(info.sender), text: info.text ?? "", sentAtMillis: info.sentAtMillis,
                    to: info.recipient)
        }
        chatMuted = message.isLocalUserMuted
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
