import HomeroomCore
/// Room events (AgoraEduRoomHandler). Every method has an empty default, so a handler
/// implements only what it needs. Called on the pool's event queue, in order.
public protocol RoomHandler: AnyObject, Sendable {
    func onJoinRoomSuccess(_ room: RoomInfo)
    func onLeftRoom()
    func onRoomInfoUpdated(_ room: RoomInfo)
    func onClassStateUpdated(_ state: ClassState)
    func onRoomPropertiesUpdated(keys: [String])
    func onAllMicrophonesMuted()
    /// The class closed (the nodes refuse the room `room-closed`): the pool has left the room for good.
    func onRoomClosed()
    /// A property write lost to a concurrent write that had not seen it.
    func onPropertyConflict(_ conflict: PropertyConflictInfo)
}

extension RoomHandler {
    public func onJoinRoomSuccess(_ room: RoomInfo) {}
    public func onLeftRoom() {}
    public func onRoomInfoUpdated(_ room: RoomInfo) {}
    public func onClassStateUpdated(_ state: ClassState) {}
    public func onRoomPropertiesUpdated(keys: [String]) {}
    public func onAllMicrophonesMuted() {}
    public func onRoomClosed() {}
    public func onPropertyConflict(_ conflict: PropertyConflictInfo) {}
}

/// Lock events (Signaling's lock events).
public protocol LockHandler: AnyObject, Sendable {
    /// Locks were acquired, renewed, released or revoked. A lock that lapses (its holder
    /// offline past its TTL) sends no event: `LockStatus.lapsesAtMillis` says when.
    func onLocksUpdated(names: [String])
}

extension LockHandler {
    public func onLocksUpdated(names: [String]) {}
}

/// Breakout group events (AgoraEduGroupHandler).
public protocol GroupHandler: AnyObject, Sendable {
    /// Groups were created, renamed, removed or ended, or users moved between them.
    func onBreakoutUpdated(_ groups: [BreakoutGroup])
}

extension GroupHandler {
    public func onBreakoutUpdated(_ groups: [BreakoutGroup]) {}
}

/// User events (AgoraEduUserHandler).
public protocol UserHandler: AnyObject, Sendable {
    func onRemoteUserJoined(_ user: UserInfo)
    func onRemoteUserLeft(_ user: UserInfo)
    func onUserUpdated(_ user: UserInfo)
    /// The same, with the user as it was (its name and role before the change); by
    /// default it calls `onUserUpdated(_:)`.
    func onUserUpdated(_ user: UserInfo, previous: UserInfo)
    func onCoHostUserListAdded(_ users: [UserInfo])
    func onCoHostUserListRemoved(_ users: [UserInfo])
    func onUserBoardUpdated(_ user: UserInfo, granted: Bool)
    func onUserRewarded(_ user: UserInfo, amount: Int32, total: Int64)
    func onUserHandsWave(_ user: UserInfo)
    func onUserHandsDown(_ user: UserInfo)
    /// Hand raising was switched on or off, or auto-stage changed; hands it lowered come as `onUserHandsDown`.
    func onHandRaisingUpdated(_ policy: HandRaisingPolicy)
    /// The local user was invited to the stage: answer with `UserContext.acceptInvitation` or `declineInvitation`.
    func onInvitationReceived(_ invitation: InvitationInfo)
    /// An invitation was accepted or declined (`invitation.status`).
    func onInvitationAnswered(_ invitation: InvitationInfo)
    /// An invitation this client saw pending timed out unanswered.
    func onInvitationTimedOut(_ invitation: InvitationInfo)
    func onUserKickedOut(_ user: UserInfo)
    func onUserBanned(_ user: UserInfo)
    func onLocalUserKickedOut(banned: Bool)
    func onUserPropertiesUpdated(_ user: UserInfo, keys: [String])
}

extension UserHandler {
    public func onRemoteUserJoined(_ user: UserInfo) {}
    public func onRemoteUserLeft(_ user: UserInfo) {}
    public func onUserUpdated(_ user: UserInfo) {}
    public func onUserUpdated(_ user: UserInfo, previous: UserInfo) { onUserUpdated(user) }
    public func onCoHostUserListAdded(_ users: [UserInfo]) {}
    public func onCoHostUserListRemoved(_ users: [UserInfo]) {}
    public func onUserBoardUpdated(_ user: UserInfo, granted: Bool) {}
    public func onUserRewarded(_ user: UserInfo, amount: Int32, total: Int64) {}
    public func onUserHandsWave(_ user: UserInfo) {}
    public func onUserHandsDown(_ user: UserInfo) {}
    public func onHandRaisingUpdated(_ policy: HandRaisingPolicy) {}
    public func onInvitationReceived(_ invitation: InvitationInfo) {}
    public func onInvitationAnswered(_ invitation: InvitationInfo) {}
    public func onInvitationTimedOut(_ invitation: InvitationInfo) {}
    public func onUserKickedOut(_ user: UserInfo) {}
    public func onUserBanned(_ user: UserInfo) {}
    public func onLocalUserKickedOut(banned: Bool) {}
    public func onUserPropertiesUpdated(_ user: UserInfo, keys: [String]) {}
}

/// Stream events (AgoraEduStreamHandler): a camera or microphone changed state.
public protocol StreamHandler: AnyObject, Sendable {
    func onStreamUpdated(_ stream: StreamInfo)
    /// The room's camera or microphone mute was switched on or off; the streams it changed
    /// come as `onStreamUpdated` too.
    func onRoomMuteUpdated(_ device: Device, muted: Bool)
}

extension StreamHandler {
    public func onStreamUpdated(_ stream: StreamInfo) {}
    public func onRoomMuteUpdated(_ device: Device, muted: Bool) {}
}

/// Link events (AgoraEduMonitorHandler).
public protocol MonitorHandler: AnyObject, Sendable {
    func onConnectionStateUpdated(_ state: ConnectionState)
    func onLatencyUpdated(micros: Double)
    func onTokenWillExpire(inSeconds seconds: Int64)
}

extension MonitorHandler {
    public func onConnectionStateUpdated(_ state: ConnectionState) {}
    public func onLatencyUpdated(micros: Double) {}
    public func onTokenWillExpire(inSeconds seconds: Int64) {}
}

/// Message events (AgoraEduMessageHandler, RTM message events).
public protocol MessageHandler: AnyObject, Sendable {
    func onRoomMessageReceived(_ message: MessageInfo)
    func onPeerMessageReceived(_ message: MessageInfo)
    func onMessagesRemoved(_ keys: [MessageKey])
    /// `user` nil: chat muted or unmuted for the whole room.
    func onChatMuteUpdated(user: UserInfo?, muted: Bool)
}

extension MessageHandler {
    public func onRoomMessageReceived(_ message: MessageInfo) {}
    public func onPeerMessageReceived(_ message: MessageInfo) {}
    public func onMessagesRemoved(_ keys: [MessageKey]) {}
    public func onChatMuteUpdated(user: UserInfo?, muted: Bool) {}
}

/// Presence events (RTM 2.x presence): joins, leaves, timeouts, state changes, intervals.
public protocol PresenceHandler: AnyObject, Sendable {
    func onPresenceEvent(_ event: PresenceEvent)
}

extension PresenceHandler {
    public func onPresenceEvent(_ event: PresenceEvent) {}
}

/// Routes one event to the handler methods that want it.
extension ContextEvent {
    func deliver(to handler: AnyObject) {
        switch self {
        case let .joinedRoom(room): (handler as? RoomHandler)?.onJoinRoomSuccess(room)
        case .leftRoom: (handler as? RoomHandler)?.onLeftRoom()
        case .roomClosed: (handler as? RoomHandler)?.onRoomClosed()
        case let .roomInfoUpdated(room): (handler as? RoomHandler)?.onRoomInfoUpdated(room)
        case let .classStateUpdated(state): (handler as? RoomHandler)?.onClassStateUpdated(state)
        case let .roomPropertiesUpdated(keys): (handler as? RoomHandler)?.onRoomPropertiesUpdated(keys: keys)
        case .allMicrophonesMuted: (handler as? RoomHandler)?.onAllMicrophonesMuted()
        case let .locksUpdated(names): (handler as? LockHandler)?.onLocksUpdated(names: names)
        case let .breakoutUpdated(groups): (handler as? GroupHandler)?.onBreakoutUpdated(groups)
        case let .remoteUserJoined(user): (handler as? UserHandler)?.onRemoteUserJoined(user)
        case let .remoteUserLeft(user): (handler as? UserHandler)?.onRemoteUserLeft(user)
        case let .userUpdated(user, previous): (handler as? UserHandler)?.onUserUpdated(user, previous: previous)
        case let .coHostsAdded(users): (handler as? UserHandler)?.onCoHostUserListAdded(users)
        case let .coHostsRemoved(users): (handler as? UserHandler)?.onCoHostUserListRemoved(users)
        case let .boardUpdated(user, granted): (handler as? UserHandler)?.onUserBoardUpdated(user, granted: granted)
        case let .userRewarded(user, amount, total): (handler as? UserHandler)?.onUserRewarded(user, amount: amount, total: total)
        case let .handWaved(user): (handler as? UserHandler)?.onUserHandsWave(user)
        case let .handLowered(user): (handler as? UserHandler)?.onUserHandsDown(user)
        case let .handRaisingUpdated(policy): (handler as? UserHandler)?.onHandRaisingUpdated(policy)
        case let .invitationReceived(info): (handler as? UserHandler)?.onInvitationReceived(info)
        case let .invitationAnswered(info): (handler as? UserHandler)?.onInvitationAnswered(info)
        case let .invitationTimedOut(info): (handler as? UserHandler)?.onInvitationTimedOut(info)
        case let .userKickedOut(user): (handler as? UserHandler)?.onUserKickedOut(user)
        case let .userBanned(user): (handler as? UserHandler)?.onUserBanned(user)
        case let .localUserKickedOut(banned): (handler as? UserHandler)?.onLocalUserKickedOut(banned: banned)
        case let .userPropertiesUpdated(user, keys): (handler as? UserHandler)?.onUserPropertiesUpdated(user, keys: keys)
        case let .streamUpdated(stream): (handler as? StreamHandler)?.onStreamUpdated(stream)
        case let .roomMuteUpdated(device, muted): (handler as? StreamHandler)?.onRoomMuteUpdated(device, muted: muted)
        case let .connectionStateUpdated(state): (handler as? MonitorHandler)?.onConnectionStateUpdated(state)
        case let .latencyUpdated(micros): (handler as? MonitorHandler)?.onLatencyUpdated(micros: micros)
        case let .tokenWillExpire(seconds): (handler as? MonitorHandler)?.onTokenWillExpire(inSeconds: seconds)
        case let .roomMessageReceived(message): (handler as? MessageHandler)?.onRoomMessageReceived(message)
        case let .peerMessageReceived(message): (handler as? MessageHandler)?.onPeerMessageReceived(message)
        case let .messagesRemoved(keys): (handler as? MessageHandler)?.onMessagesRemoved(keys)
        case let .chatMuteUpdated(user, muted): (handler as? MessageHandler)?.onChatMuteUpdated(user: user, muted: muted)
        case let .presence(event): (handler as? PresenceHandler)?.onPresenceEvent(event)
        case let .propertyConflict(conflict): (handler as? RoomHandler)?.onPropertyConflict(conflict)
        }
    }
}
