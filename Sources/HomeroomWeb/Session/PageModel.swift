/// The read model the page draws, as JSON: what `ContextPool.snapshot` says, for one
/// user of one room (the pool's room only: nothing of any other room reaches the page).
/// Built by `PageModel(pool:...)` (PageModel+Building.swift).
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
        /// The breakout group the user is in (nil: the main room), as the terminal tags the name.
        var group: String?
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
        /// A peer message: only the two users see it (the recipient's id and name).
        var to: String?
        var toName: String?
    }

    /// A running carousel, as the terminal's stage strip tells it.
    struct Carousel: Encodable, Equatable {
        var intervalSeconds: UInt32
        /// all or camera-on.
        var range: String
        /// join-order or random.
        var order: String
        var turn: UInt64
        /// Wall-clock ms (the server's) when the next turn starts: the page counts down to it.
        var nextTurnAtMillis: UInt64
        /// False while everyone taking part fits on stage: nothing rotates.
        var rotates: Bool
    }

    /// An invitation to the stage waiting for its answer.
    struct Invitation: Encodable, Equatable {
        var user: User
        var inviter: User?
        /// Wall-clock ms (the server's) after which an answer no longer counts: the page counts down to it.
        var expiresAtMillis: UInt64
    }

    struct Group: Encodable, Equatable {
        var id: String
        var name: String
        /// In natural order of their ids, as the context gives them.
        var members: [User]
        /// The room the group meets in (`<room>:<id>`).
        var room: String
    }

    var type = "model"
    var room: RoomDTO
    var classState: String
    var classSinceMillis: UInt64
    var classDurationSeconds: UInt32
    var local: User
    var connection: String
    var node: String
    /// The link for people while it is not connected ("lost …; every node failed; next try in 2 s"); nil while connected.
    var link: String?
    /// Why the link is not connected (`LinkReason`'s code: "link-lost", "every-node-failed",
    /// "backoff-spent", "banned", ...); nil while connected.
    var linkReason: String?
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
    /// Invitations to the stage waiting for an answer: every one on a teacher's or an
    /// assistant's page, only the local user's own on anyone else's.
    var invitations: [Invitation]
    var groups: [Group]
    /// Room messages, oldest first.
    var chat: [Message]
    /// Peer messages to or from the local user, oldest first.
    var whispers: [Message]
    var chatMuted: Bool

    struct RoomDTO: Encodable, Equatable {
        var id: String
        var name: String
        var type: String
        var stageLimit: Int
        var handLimit: Int
        /// Room-wide mutes (a teacher's `camera mute` / `mic mute`): no student's device of the kind counts as on.
        var cameraMuted: Bool
        var microphoneMuted: Bool
        /// Students may raise hands; with `autoStage`, a raise puts them on stage while seats remain.
        var handRaising: Bool
        var autoStage: Bool
    }
}
