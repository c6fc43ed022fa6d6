import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Room and peer messages, the history, chat moderation and presence
/// (AgoraEduMessageContext plus RTM's presence). Messages arrive once each, in each
/// sender's order, through `MessageHandler` or `ContextEvent.roomMessageReceived`;
/// a pool that reconnects receives what it missed while the history still holds it.
public final class MessageContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any MessageHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any MessageHandler) { session.unregister(handler) }
    public func registerPresenceHandler(_ handler: any PresenceHandler) { session.register(handler) }
    public func unregisterPresenceHandler(_ handler: any PresenceHandler) { session.unregister(handler) }

    // MARK: - Sending

    /// Sends a room message to everyone in the room. Returns once a node has stored it.
    /// Refused with `muted` while the local user's chat (or the room's) is muted.
    @discardableResult
    public func sendRoomMessage(_ text: String, type: String = "chat") throws(ContextError) -> MessageKey {
        try sendRoomMessage(payload: Array(text.utf8), type: type)
    }

    @discardableResult
    public func sendRoomMessage(payload: [UInt8], type: String) throws(ContextError) -> MessageKey {
        try Self.check(type: type, payload: payload)
        let client = try session.client()
        do { return try client.send(type: type, payload) } catch { throw ContextError(error) }
    }

    /// Sends a message to one user of the room, wherever in the cluster it is connected;
    /// only the two of you receive it (and find it in the history).
    @discardableResult
    public func sendPeerMessage(to user: UserID, _ text: String, type: String = "chat") throws(ContextError) -> MessageKey {
        try sendPeerMessage(to: user, payload: Array(text.utf8), type: type)
    }

    @discardableResult
    public func sendPeerMessage(to user: UserID, payload: [UInt8], type: String) throws(ContextError) -> MessageKey {
        try Self.check(type: type, payload: payload)
        guard !user.isEmpty, user.utf8.count <= 128 else { throw .invalidArgument("a user id is 1 to 128 bytes") }
        guard user != session.config.user else { throw .invalidArgument("a peer message goes to another user, not to yourself") }
        let client = try session.client()
        do { return try client.sendPeer(to: user, type: type, payload) } catch { throw ContextError(error) }
    }

    static func check(type: String, payload: [UInt8]) throws(ContextError) {
        guard !type.isEmpty, type.utf8.count <= Messaging.maxTypeBytes else {
            throw .invalidArgument("a message type is 1 to \(Messaging.maxTypeBytes) bytes, e.g. \"chat\"")
        }
        guard payload.count <= Messaging.maxPayloadBytes else {
            throw .invalidArgument("a message is at most \(Messaging.maxPayloadBytes) bytes (32 KiB), not \(payload.count): split it")
        }
    }

    // MARK: - History

    /// The history the local user may see (room messages, and its own peer messages),
    /// oldest first: the newest `limit` (all when nil) among those before `before`
    /// (a key from an earlier page; nil: from the newest). Empty before joining.
    public func history(limit: Int? = nil, before: MessageKey? = nil) -> [MessageInfo] {
        let replica = session.replica
        var messages = replica.history(for: session.config.user)
        if let before, let index = messages.firstIndex(where: { $0.key == before }) { messages.removeSubrange(index...) }
        if let limit, messages.count > max(0, limit) { messages.removeFirst(messages.count - max(0, limit)) }
        return messages.map { MessageInfo($0, sender: ReadModel.userInfo(replica, $0.sender)) }
    }

    /// How many messages the room keeps (count limit; the nodes also drop messages older
    /// than their retention).
    public var historyLimit: Int { Int(session.replica.effectiveHistoryLimit) }

    /// Teacher or assistant: keep the newest `limit` messages (1 to 10,000).
    public func setHistoryLimit(_ limit: Int) throws(ContextError) {
        guard (1...Int(MessageLog.maxLimit)).contains(limit) else {
            throw .invalidArgument("a history limit is 1 to \(MessageLog.maxLimit) messages, not \(limit)")
        }
        try session.write(.setHistoryLimit(UInt32(limit)))
    }

    /// Teacher or assistant: remove every message sent before now from the history.
    public func clearHistory() throws(ContextError) {
        try session.write(.trimHistory(beforeMillis: WallClock.nowMillis()))
    }

    // MARK: - Moderation

    /// Whether `user` may not send chat now (muted itself, or the room muted and the user
    /// not a teacher or an assistant).
    public func isChatMuted(_ user: UserID) -> Bool {
        let replica = session.replica
        return replica.isChatMuted(user, role: replica.users[user]?.role.value ?? .student)
    }

    public var isLocalUserMuted: Bool { session.replica.isChatMuted(session.config.user, role: session.config.role) }

    /// Whether chat is muted for the whole room (students and observers).
    public var isRoomChatMuted: Bool { session.replica.chatMuted.value }

    /// Teacher or assistant: mute (or unmute) one user's chat.
    public func muteChat(of user: UserID, muted: Bool = true) throws(ContextError) {
        try session.write(.setChatMuted(user: user, muted: muted))
    }

    /// Teacher or assistant: mute (or unmute) chat for every student and observer.
    public func muteRoomChat(_ muted: Bool = true) throws(ContextError) {
        try session.write(.setChatMuted(user: nil, muted: muted))
    }

    // MARK: - Presence

    /// Online users and their presence state, as RTM's `getOnlineUsers` with states.
    public var onlineUsers: [PresenceInfo] {
        let replica = session.replica
        return replica.presenceSnapshot().map { PresenceInfo(user: ReadModel.userInfo(replica, $0.user), state: $0.state) }
    }

    public func presenceState(of user: UserID) -> [String: [UInt8]] { session.replica.presenceState(of: user) }

    /// Sets keys of the local user's temporary state (a nil value removes the key). The
    /// state lives as long as this connection: it is set again after a reconnect, and
    /// gone for everyone when the user leaves or times out. At most 32 keys.
    public func setPresenceState(_ items: [String: String?]) throws(ContextError) {
        try setPresenceState(bytes: items.mapValues { $0.map { Array($0.utf8) } })
    }

    public func setPresenceState(bytes items: [String: [UInt8]?]) throws(ContextError) {
        guard !items.isEmpty else { throw .invalidArgument("give at least one key to set or remove") }
        for (key, value) in items {
            guard !key.isEmpty, key.utf8.count <= Messaging.maxPresenceKeyBytes else {
                throw .invalidArgument("a presence key is 1 to \(Messaging.maxPresenceKeyBytes) bytes, not '\(key)'")
            }
            guard (value?.count ?? 0) <= Messaging.maxPresenceValueBytes else {
                throw .invalidArgument("a presence value is at most \(Messaging.maxPresenceValueBytes) bytes (key '\(key)')")
            }
        }
        let current = presenceState(of: session.config.user)
        let after = Set(current.keys).union(items.filter { $0.value != nil }.keys).subtracting(items.filter { $0.value == nil }.keys)
        guard after.count <= Messaging.maxPresenceKeys else {
            throw .invalidArgument("a user's presence state has at most \(Messaging.maxPresenceKeys) keys; remove some first")
        }
        let client = try session.client()
        do { try client.setPresenceState(items) } catch { throw ContextError(error) }
    }
}
