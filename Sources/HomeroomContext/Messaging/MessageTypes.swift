import HomeroomCore
import HomeroomNode

public typealias MessageKey = HomeroomCore.MessageKey

/// One room or peer message as a UI shows it (AgoraEduContextChatItem, RTM message).
public struct MessageInfo: Hashable, Sendable {
    /// Sender and the sender's counter: unique, and the same on every node and client.
    public var key: MessageKey
    public var sender: UserInfo
    /// The one user a peer message is for; nil for a room message.
    public var recipient: UserID?
    /// Application-defined kind ("chat" for the CLI's messages).
    public var type: String
    public var payload: [UInt8]
    /// When the sender's node stamped it (Unix ms of its hybrid clock).
    public var sentAtMillis: UInt64
    /// Delivered after a later message of the same sender (it arrived after that one's hold ran out).
    public var late: Bool
    /// Delivered without the sender's previous message, which did not come in time.
    public var gap: Bool

    public init(key: MessageKey, sender: UserInfo, recipient: UserID?, type: String, payload: [UInt8], sentAtMillis: UInt64,
                late: Bool = false, gap: Bool = false) {
        self.key = key
        self.sender = sender
        self.recipient = recipient
        self.type = type
        self.payload = payload
        self.sentAtMillis = sentAtMillis
        self.late = late
        self.gap = gap
    }

    public var isPeer: Bool { recipient != nil }
    /// The payload as UTF-8 text, or nil when it is not text.
    public var text: String? { String(validating: payload, as: UTF8.self) }
}

/// One online user and its temporary presence state (RTM `getOnlineUsers` + `getState`).
public struct PresenceInfo: Hashable, Sendable {
    public var user: UserInfo
    /// Keys the user's current session set; values as bytes (`text(_:)` for UTF-8).
    public var state: [String: [UInt8]]

    public init(user: UserInfo, state: [String: [UInt8]]) {
        self.user = user
        self.state = state
    }

    /// A state value as UTF-8 text, or nil when absent or not text.
    public func text(_ key: String) -> String? { state[key].flatMap { String(validating: $0, as: UTF8.self) } }
}

/// Presence events (RTM 2.x): one by one in small rooms, gathered into interval events
/// above the pool's `presenceThreshold` online users.
public enum PresenceEvent: Hashable, Sendable {
    case joined(UserInfo)
    case left(UserInfo)
    /// Went offline because its node was declared down, not because it left.
    case timedOut(UserInfo)
    case stateChanged(UserInfo, state: [String: [UInt8]])
    /// Everything since the last interval; each user in at most one list (its latest
    /// transition), `states` with each changed user's latest state.
    case interval(joined: [UserID], left: [UserID], timedOut: [UserID], states: [UserID: [String: [UInt8]]])
}

/// A property's value with its revision, writer and cause (Agora's room/user properties).
public struct PropertyEntry: Hashable, Sendable {
    public var key: String
    /// UTF-8 text of the value (values written through the contexts are text).
    public var value: String
    /// Grows by one with each write of the key that saw the previous one.
    public var revision: UInt64
    /// Who wrote it last, and why.
    public var operatorID: UserID
    public var cause: String

    public init(key: String, value: String, revision: UInt64, operatorID: UserID, cause: String) {
        self.key = key
        self.value = value
        self.revision = revision
        self.operatorID = operatorID
        self.cause = cause
    }
}

/// What an accepted property write became: the key's new revision. Keep it to ask
/// `RoomContext.isPropertyWriteKept(_:)` later.
public struct PropertyWriteReceipt: Hashable, Sendable {
    public var key: String
    /// nil for a room property, else the user whose property it is.
    public var owner: UserID?
    public var revision: UInt64
    /// The whole set's revision after the write (Signaling's major revision): pass it
    /// as `ifSetRevision` to write again only if nothing in the set changed since.
    public var setRevision: UInt64
    let result: PropertyWriteResult
}

/// A property write lost to a concurrent one that had not seen it (under a partition,
/// two writes conditional on the same revision can both be accepted): `kept` holds the
/// property now. Told to every client; `lostAuthor` is the local user when it is its own.
public struct PropertyConflictInfo: Hashable, Sendable {
    /// nil for a room property, else the user whose property it is.
    public var owner: UserID?
    public var key: String
    public var keptRevision: UInt64
    public var keptAuthor: UserID
    /// The value that won (nil: the key was deleted).
    public var keptValue: String?
    public var lostRevision: UInt64
    /// Empty when not known (the local user's own writes are always known as lost).
    public var lostAuthor: UserID

    public init(owner: UserID?, key: String, keptRevision: UInt64, keptAuthor: UserID, keptValue: String?, lostRevision: UInt64,
                lostAuthor: UserID) {
        self.owner = owner
        self.key = key
        self.keptRevision = keptRevision
        self.keptAuthor = keptAuthor
        self.keptValue = keptValue
        self.lostRevision = lostRevision
        self.lostAuthor = lostAuthor
    }
}
