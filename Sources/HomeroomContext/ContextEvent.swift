import HomeroomCore

/// Every event the contexts report, in the order it happened. The handler protocols
/// (`RoomHandler`, `UserHandler`, `StreamHandler`, `MonitorHandler`, `MessageHandler`,
/// `PresenceHandler`) receive the same
/// events as method calls; `ContextPool.events()` gives them as an async sequence.
public enum ContextEvent: Hashable, Sendable {
    // Room
    case joinedRoom(RoomInfo)
    case leftRoom
    case roomInfoUpdated(RoomInfo)
    case classStateUpdated(ClassState)
    case roomPropertiesUpdated(keys: [String])
    case allMicrophonesMuted
    /// The class closed (`after`, and its close delay passed): the nodes refused this
    /// client `room-closed`, nobody rejoins, and the pool has left the room for good.
    case roomClosed
    // Locks (LockHandler)
    /// Locks were acquired, renewed, released or revoked (`LockContext.lock(_:)` reads one).
    case locksUpdated(names: [String])
    // Breakout groups (GroupHandler)
    /// Groups were created, renamed, removed or ended, or someone moved: the live groups now.
    case breakoutUpdated([BreakoutGroup])
    // User
    case remoteUserJoined(UserInfo)
    case remoteUserLeft(UserInfo)
    /// A user's name or role changed: `previous` is what it was (a reward total that
    /// went down, a fold, is an update whose `previous` equals the user as now).
    case userUpdated(UserInfo, previous: UserInfo)
    case coHostsAdded([UserInfo])
    case coHostsRemoved([UserInfo])
    case boardUpdated(UserInfo, granted: Bool)
    case userRewarded(UserInfo, amount: Int32, total: Int64)
    case handWaved(UserInfo)
    case handLowered(UserInfo)
    /// Hand raising was switched on or off, or auto-stage changed (`UserContext.allowHandsUp`).
    case handRaisingUpdated(HandRaisingPolicy)
    /// The local user was invited to the stage (`UserContext.acceptInvitation` / `declineInvitation`).
    case invitationReceived(InvitationInfo)
    /// An invitation was accepted or declined (its `status` says which).
    case invitationAnswered(InvitationInfo)
    /// An invitation this client saw pending went unanswered past its duration.
    case invitationTimedOut(InvitationInfo)
    /// Another user was kicked out (once) of the room.
    case userKickedOut(UserInfo)
    /// Another user was banned.
    case userBanned(UserInfo)
    /// The local user was kicked out (`banned`: for good). The pool has left the room.
    case localUserKickedOut(banned: Bool)
    case userPropertiesUpdated(UserInfo, keys: [String])
    // Stream
    case streamUpdated(StreamInfo)
    /// The room's camera or microphone mute was switched on or off (`StreamContext.muteRoom`).
    case roomMuteUpdated(Device, muted: Bool)
    // Monitor
    /// The link's state changed, or its reason did (reconnecting: every node failed a
    /// round). Why, and what is tried next: `MonitorContext.link` (`reason`, `nextTryMillis`).
    case connectionStateUpdated(ConnectionState)
    case latencyUpdated(micros: Double)
    /// The join token expires in `seconds` (0: already past): renew it with
    /// `MonitorContext.renewToken(_:)` before the nodes refuse it. Once per token,
    /// `ClassroomConfig.tokenWarningSeconds` before its expiry.
    case tokenWillExpire(inSeconds: Int64)
    // Messages (MessageHandler)
    /// A room message, once, in its sender's order (the local user's own included).
    case roomMessageReceived(MessageInfo)
    /// A peer message to or from the local user.
    case peerMessageReceived(MessageInfo)
    /// Messages left the history (its count or age limit, or a teacher cleared it).
    case messagesRemoved([MessageKey])
    /// Chat muted or unmuted for one user, or for the whole room (`user` nil).
    case chatMuteUpdated(user: UserInfo?, muted: Bool)
    // Presence (PresenceHandler)
    case presence(PresenceEvent)
    // Properties (RoomHandler)
    /// A property write lost to a concurrent one (docs/MESSAGING.md, "Properties").
    case propertyConflict(PropertyConflictInfo)
}

extension ContextEvent {
    /// Translates a change set from the replica into context events. `lookup` names the
    /// users; `localUser` splits remote events from the local user's own.
    static func translate(_ changes: [RoomChange], localUser: UserID, room: () -> RoomInfo,
                          groups: () -> [BreakoutGroup] = { [] }, isOnline: (UserID) -> Bool = { _ in true },
                          invitation: (UserID) -> InvitationInfo? = { _ in nil },
                          lookup: (UserID) -> UserInfo) -> [ContextEvent] {
        var events: [ContextEvent] = []
        events.reserveCapacity(changes.count)
        for change in changes {
            switch change {
            case .roomInfoUpdated: events.append(.roomInfoUpdated(room()))
            case let .classStateUpdated(state): events.append(.classStateUpdated(state))
            case .allMicrophonesMuted: events.append(.allMicrophonesMuted)
            case .roomClosed: events.append(.roomClosed)
            case let .deviceMuteUpdated(device, muted): events.append(.roomMuteUpdated(device, muted: muted))
            case let .handRaisingUpdated(policy): events.append(.handRaisingUpdated(policy))
            case let .invitationUpdated(user):
                guard let info = invitation(user) else { break }
                switch info.status {
                case .pending where user == localUser: events.append(.invitationReceived(info))
                case .accepted, .declined: events.append(.invitationAnswered(info))
                case .pending, .expired: break
                }
            case let .roomPropertiesUpdated(keys): events.append(.roomPropertiesUpdated(keys: keys))
            case let .locksUpdated(names): events.append(.locksUpdated(names: names))
            case .breakoutUpdated: events.append(.breakoutUpdated(groups()))
            case let .userJoined(user) where user != localUser: events.append(.remoteUserJoined(lookup(user)))
            case let .userLeft(user) where user != localUser: events.append(.remoteUserLeft(lookup(user)))
            case .userJoined, .userLeft: break
            case let .userUpdated(user, previousName, previousRole):
                events.append(.userUpdated(lookup(user), previous: UserInfo(id: user, name: previousName, role: previousRole)))
            // An offline row appearing is the roster's business (`LiveRoster`), not an event.
            case .userKnown: break
            case let .coHostsAdded(users): events.append(.coHostsAdded(users.map(lookup)))
            case let .coHostsRemoved(users): events.append(.coHostsRemoved(users.map(lookup)))
            case let .streamUpdated(user, device, state):
                events.append(.streamUpdated(StreamInfo(owner: lookup(user), device: device, state: state, ownerOnline: isOnline(user))))
            case let .boardUpdated(user, granted): events.append(.boardUpdated(lookup(user), granted: granted))
            case let .userRewarded(user, amount, total): events.append(.userRewarded(lookup(user), amount: amount, total: total))
            case let .handWaved(user): events.append(.handWaved(lookup(user)))
            case let .handLowered(user): events.append(.handLowered(lookup(user)))
            // The local user's own kick or ban is decided by the session (it checks presence first).
            case let .userKicked(user) where user != localUser: events.append(.userKickedOut(lookup(user)))
            case let .userBanned(user) where user != localUser: events.append(.userBanned(lookup(user)))
            case .userKicked, .userBanned: break
            case let .userPropertiesUpdated(user, keys): events.append(.userPropertiesUpdated(lookup(user), keys: keys))
            }
        }
        return events
    }
}
