/// Messaging: room and peer messages, temporary presence state, chat moderation and
/// property revisions (docs/MESSAGING.md). The values here are what the operations
/// carry and what the room keeps; `MessageLog` holds the history.

/// The limits of messaging, checked by the authority rules on every replica.
public enum Messaging {
    /// A message's type: 1 to 64 bytes.
    public static let maxTypeBytes = 64
    /// A message's payload: at most 32 KiB (the wire's bytes limit).
    public static let maxPayloadBytes = 32 * 1024
    /// Presence state: at most 32 keys shown per user; keys 1 to 64 bytes, values at most 1 KiB.
    public static let maxPresenceKeys = 32
    public static let maxPresenceKeyBytes = 64
    public static let maxPresenceValueBytes = 1_024
}

/// Identifies a message: its sender and the sender's write counter. A message retried
/// (through any node) keeps its key, so it is stored and delivered once.
public struct MessageKey: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var sender: UserID
    public var counter: UInt64

    public init(sender: UserID, counter: UInt64) {
        self.sender = sender
        self.counter = counter
    }

    public static func < (a: MessageKey, b: MessageKey) -> Bool {
        a.sender != b.sender ? a.sender.utf8.lexicographicallyPrecedes(b.sender.utf8) : a.counter < b.counter
    }

    public var description: String { "\(sender)#\(counter)" }
}

/// One message of the history: a room message (`recipient` nil) or a peer message.
public struct Message: Hashable, Sendable {
    public var key: MessageKey
    /// The one user a peer message is for; nil for a room message.
    public var recipient: UserID?
    /// Application-defined kind, e.g. "chat" (1 to 64 bytes).
    public var type: String
    public var payload: [UInt8]
    /// The sender's counter of its previous message in the same conversation (the room,
    /// or the same recipient); 0 when none. Lets a receiver deliver in the sender's order.
    public var previous: UInt64
    /// The latest stamp among the copies of this message (max-merge): its place in the history.
    public var stamp: Stamp

    public init(key: MessageKey, recipient: UserID?, type: String, payload: [UInt8], previous: UInt64, stamp: Stamp) {
        self.key = key
        self.recipient = recipient
        self.type = type
        self.payload = payload
        self.previous = previous
        self.stamp = stamp
    }

    public var sender: UserID { key.sender }
    public var isPeer: Bool { recipient != nil }
    /// When the sending node stamped it (wall-clock ms of its hybrid clock).
    public var sentAtMillis: UInt64 { stamp.clock.millis }

    /// Whether `user` may see this message: everyone for a room message; only the sender
    /// and the recipient for a peer message.
    public func isVisible(to user: UserID?) -> Bool {
        guard let recipient else { return true }
        guard let user else { return false }
        return user == recipient || user == key.sender
    }
}

/// One key of a user's temporary presence state; `value` nil removes the key.
public struct PresenceItem: Hashable, Sendable {
    public var key: String
    public var value: [UInt8]?

    public init(key: String, value: [UInt8]?) {
        self.key = key
        self.value = value
    }
}

/// A stored presence-state value: the bytes (nil: removed) and the session that set
/// it. It is shown only while that session is open, so a user's state is cleared when
/// the connection that set it ends (and a client sets it again after reconnecting).
public struct PresenceValue: Hashable, Sendable {
    public var bytes: [UInt8]?
    public var session: SessionID

    public init(bytes: [UInt8]?, session: SessionID) {
        self.bytes = bytes
        self.session = session
    }
}

/// The revision part of a property write. A client sets only `condition`; the node
/// that sequences the write fills in `assigned` and `lineage` from the room as it is
/// there (so every replica applies the same values).
public struct PropertyRevision: Hashable, Sendable {
    /// "Only if the key's revision is still this" (0: only if the key was never
    /// written); nil: unconditional.
    public var condition: UInt64?
    /// "Only if the whole set (the room's properties, or this user's) is still at this
    /// set revision" (`RoomState.propertySetRevision`); nil: no condition on the set.
    public var setCondition: UInt64?
    /// The revision this write creates: the key's revision at the origin, plus one.
    public var assigned: UInt64
    /// The dots of the writes this one replaced at the origin, newest first
    /// (at most `PropertyRevision.lineageLength`): who this write has seen.
    public var lineage: [Dot]
    /// "Only while I hold this lock with this fence" (docs/MESSAGING.md, "Locks"): the
    /// write is guarded, and loses to every write of the key with a larger fence.
    public var fence: LockFence? {
        get { fenceBox?.fence }
        set { fenceBox = newValue.map(LockFenceBox.init) }
    }
    /// Boxed: few writes carry a fence, and inline it made every `Operation` (and so
    /// every `Delta`) 24 bytes larger, which the streamed merge paid for.
    private var fenceBox: LockFenceBox?

    public static let lineageLength = 8

    public init(condition: UInt64? = nil, setCondition: UInt64? = nil, assigned: UInt64 = 0, lineage: [Dot] = [], fence: LockFence? = nil) {
        self.condition = condition
        self.setCondition = setCondition
        self.assigned = assigned
        self.lineage = lineage
        self.fenceBox = fence.map(LockFenceBox.init)
    }

    public static let unconditional = PropertyRevision()
}

/// A lock fence on the heap, compared and hashed by value.
final class LockFenceBox: Hashable, Sendable {
    let fence: LockFence
    init(_ fence: LockFence) { self.fence = fence }
    static func == (a: LockFenceBox, b: LockFenceBox) -> Bool { a.fence == b.fence }
    func hash(into hasher: inout Hasher) { hasher.combine(fence) }
}

/// Whose property: the room's, or one user's.
public enum PropertyScope: Hashable, Sendable, CustomStringConvertible {
    case room
    case user(UserID)

    public var description: String {
        switch self {
        case .room: return "room"
        case let .user(user): return "user \(user)"
        }
    }
}

/// One write of a property, as a conflict report names it.
public struct PropertyWriteInfo: Hashable, Sendable {
    public var author: UserID
    public var revision: UInt64
    public var dot: Dot
    /// nil for a delete.
    public var value: [UInt8]?

    public init(author: UserID, revision: UInt64, dot: Dot, value: [UInt8]?) {
        self.author = author
        self.revision = revision
        self.dot = dot
        self.value = value
    }
}

/// Two writes of one property that did not see each other (under a partition, for
/// example both conditional on the same revision): `kept` won the merge, `lost` is
/// gone. Reported on every replica that holds both, so `lost.author` finds out.
public struct PropertyConflict: Hashable, Sendable {
    public var scope: PropertyScope
    public var key: String
    public var kept: PropertyWriteInfo
    public var lost: PropertyWriteInfo
    /// Every write this conflict discards, newest first: `lost` and the writes it had
    /// built on that `kept` never saw (as far as the lineages tell).
    public var lostDots: [Dot]

    public init(scope: PropertyScope, key: String, kept: PropertyWriteInfo, lost: PropertyWriteInfo, lostDots: [Dot]) {
        self.scope = scope
        self.key = key
        self.kept = kept
        self.lost = lost
        self.lostDots = lostDots
    }
}

/// What a delta or a patch changed in messaging, beside the `RoomChange`s: returned
/// by `apply(_:messaging:)` and `merge(_:messaging:)`, so callers never diff.
public enum MessagingChange: Hashable, Sendable {
    /// A message entered the history (room messages, and peer messages visible here).
    case messageAdded(Message)
    /// Messages left the history (the count limit, the age limit or a trim): every
    /// message at or below `floor` is gone.
    case messagesRemoved([MessageKey], floor: Stamp)
    case historyLimitUpdated(UInt32)
    /// Chat muted or unmuted for one user, or for the room (`user` nil).
    case chatMuteUpdated(user: UserID?, muted: Bool)
    /// The visible presence state of a user changed (a write, or its session ended).
    case presenceStateUpdated(UserID, keys: [String])
    /// A user went offline because its node was declared down, not because it left.
    case userTimedOut(UserID)
    /// A property write was overwritten by one that had not seen it.
    case propertyConflict(PropertyConflict)
}
