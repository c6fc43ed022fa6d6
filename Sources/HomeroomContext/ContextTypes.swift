import HomeroomCore
import HomeroomNode

// The value types a UI needs, re-exported so that a UI imports HomeroomContext only.
public typealias UserID = HomeroomCore.UserID
public typealias Role = HomeroomCore.Role
public typealias RoomType = HomeroomCore.RoomType
public typealias ClassState = HomeroomCore.ClassState
public typealias Device = HomeroomCore.Device
public typealias StreamState = HomeroomCore.StreamState
public typealias Schedule = HomeroomCore.Schedule
public typealias BreakoutGroup = HomeroomCore.BreakoutGroup
public typealias LockStatus = HomeroomCore.LockStatus
public typealias HandRaisingPolicy = HomeroomCore.HandRaisingPolicy
public typealias LockFence = HomeroomCore.LockFence

/// The link between this client and the cluster, as a UI shows it. `reconnecting`
/// and `suspended` heal by themselves (`LinkInfo.nextTryMillis` says when the next
/// round over the nodes is); only `aborted` is the end (`LinkInfo.reason` says why).
public enum ConnectionState: String, Sendable, Equatable {
    case connecting, connected, reconnecting
    /// Every node failed through the whole backoff (2, 4, 8, 16 s): still trying, every 30 s.
    case suspended
    case aborted

    init(_ state: ClientLinkState) {
        switch state {
        case .connecting: self = .connecting
        case .connected: self = .connected
        case .reconnecting: self = .reconnecting
        case .suspended: self = .suspended
        case .aborted: self = .aborted
        }
    }
}

/// The link told for people: the node attached or lost, since when, why, and what
/// the client tries now (Signaling's link state with its reason).
public struct LinkInfo: Sendable, Equatable {
    public var state: ConnectionState { ConnectionState(status.state) }
    /// The node attached now, or the one lost.
    public var node: String? { status.node }
    /// Wall-clock milliseconds since which the node is attached, or lost.
    public var sinceMillis: UInt64 { status.sinceMillis }
    /// Why the node was lost, in the failure's words.
    public var cause: String? { status.cause }
    /// Why the link is in `state` (set with every change of state; reconnecting, also
    /// after a round in which every node failed).
    public var reason: LinkReason { LinkReason(status.reason) }
    /// While reconnecting or suspended: when (wall clock) the next round over the nodes starts.
    public var nextTryMillis: UInt64? { status.nextRoundMillis }
    let status: ClientLinkStatus

    init(_ status: ClientLinkStatus) { self.status = status }

    /// One line: "connected to tcp://…", "lost tcp://… 12 s ago (why); trying tcp://…", ...
    public func summary(nowMillis: UInt64) -> String { status.summary(nowMillis: nowMillis) }
}

/// Who a user is: id, display name and role (AgoraEduContextUserInfo).
public struct UserInfo: Hashable, Sendable {
    public var id: UserID
    public var name: String
    public var role: Role

    public init(id: UserID, name: String, role: Role) {
        self.id = id
        self.name = name
        self.role = role
    }

    /// The name, or the id when the user has no name.
    public var displayName: String { name.isEmpty ? id : name }
}

/// The room as the room context reports it (AgoraEduContextRoomInfo).
public struct RoomInfo: Hashable, Sendable {
    public var id: String
    public var name: String
    public var type: RoomType
    public var stageLimit: Int
    public var handLimit: Int
    /// The devices the room mutes now (Flexible Classroom's `muteVideo` / `muteAudio`): no
    /// student's device of these kinds counts as on, and students may not turn them on.
    public var mutedDevices: Set<Device> = []
    /// Hand raising on or off, and auto-stage (`UserContext.allowHandsUp`).
    public var handRaising = HandRaisingPolicy()

    public init(id: String, name: String, type: RoomType, stageLimit: Int, handLimit: Int) {
        self.id = id
        self.name = name
        self.type = type
        self.stageLimit = stageLimit
        self.handLimit = handLimit
    }

    public var displayName: String { name.isEmpty ? id : name }
}

/// An invitation to the stage (Flexible Classroom's `invitePodium`), as the contexts report it.
public struct InvitationInfo: Hashable, Sendable {
    /// The invited user.
    public var user: UserInfo
    /// Who invited (nil while only the answer has reached this replica).
    public var inviter: UserInfo?
    public var seconds: UInt32
    /// Wall-clock ms (Unix) after which an answer no longer counts.
    public var expiresAtMillis: UInt64
    /// Pending, accepted, declined, or expired (unanswered past its duration, by this clock).
    public var status: InvitationStatus

    public init(user: UserInfo, inviter: UserInfo?, seconds: UInt32, expiresAtMillis: UInt64, status: InvitationStatus) {
        self.user = user
        self.inviter = inviter
        self.seconds = seconds
        self.expiresAtMillis = expiresAtMillis
        self.status = status
    }

    /// Whole seconds left to answer at `nowMillis` (0 once expired).
    public func secondsLeft(nowMillis: UInt64) -> UInt64 {
        expiresAtMillis > nowMillis ? (expiresAtMillis - nowMillis + 999) / 1000 : 0
    }
}

public typealias InvitationStatus = HomeroomCore.StageInvitation.Status

/// Class state and schedule (AgoraEduContextClassInfo).
public struct ClassInfo: Hashable, Sendable {
    public var state: ClassState
    /// Wall-clock ms when the class entered `state` (0 if never).
    public var sinceMillis: UInt64
    public var schedule: Schedule

    public init(state: ClassState, sinceMillis: UInt64, schedule: Schedule) {
        self.state = state
        self.sinceMillis = sinceMillis
        self.schedule = schedule
    }

    /// The state as a UI shows it at `now`: `closed` once the class is over and its close
    /// delay has passed (the nodes then refuse the room `room-closed`).
    public func display(now: UInt64) -> ClassDisplayState {
        ClassDisplayState(state: state, sinceMillis: sinceMillis, schedule: schedule, nowMillis: now)
    }

    /// Milliseconds until the room closes, after the class (nil before it ends or once closed).
    public func untilClosedMillis(now: UInt64) -> UInt64? {
        guard state == .after, sinceMillis > 0 else { return nil }
        let closesAt = sinceMillis &+ UInt64(schedule.closeDelaySeconds) * 1000
        return now < closesAt ? closesAt - now : nil
    }

    /// Milliseconds since the class started, while it runs.
    public func elapsedMillis(now: UInt64) -> UInt64? {
        guard state == .during, sinceMillis > 0 else { return nil }
        return now > sinceMillis ? now - sinceMillis : 0
    }

    /// Milliseconds left of the scheduled length, while it runs (negative when over time).
    public func remainingMillis(now: UInt64) -> Int64? {
        guard let elapsed = elapsedMillis(now: now) else { return nil }
        return Int64(schedule.durationSeconds) * 1000 - Int64(elapsed)
    }

    /// Milliseconds until the scheduled start, before the class (negative when late).
    public func untilStartMillis(now: UInt64) -> Int64? {
        guard state == .before, schedule.startMillis > 0 else { return nil }
        return Int64(schedule.startMillis) - Int64(now)
    }
}

/// One user's camera or microphone, in one of the four states (AgoraEduContextStreamInfo).
public struct StreamInfo: Hashable, Sendable {
    public var owner: UserInfo
    public var device: Device
    /// What the registers say; an offline owner publishes nothing whatever it is
    /// (the roster draws it off), so a UI says so beside it.
    public var state: StreamState
    public var ownerOnline: Bool

    public init(owner: UserInfo, device: Device, state: StreamState, ownerOnline: Bool = true) {
        self.owner = owner
        self.device = device
        self.state = state
        self.ownerOnline = ownerOnline
    }
}

/// One row of the roster: the seed's columns (Name, Stage, Auth, Camera, Mic, Rewards)
/// and what the other components show.
public struct UserRow: Hashable, Sendable {
    public var info: UserInfo
    public var online: Bool
    public var onStage: Bool
    /// Promoted, but the stage is full: waiting for a seat.
    public var waitingForStage: Bool
    /// Whiteboard authorization.
    public var boardGranted: Bool
    public var camera: StreamState
    public var microphone: StreamState
    public var rewards: Int64
    public var handRaised: Bool
    /// The breakout group the user is in (nil: the main room).
    public var group: String?

    public init(info: UserInfo, online: Bool = true, onStage: Bool = false, waitingForStage: Bool = false,
                boardGranted: Bool = false, camera: StreamState = .inoperable, microphone: StreamState = .inoperable,
                rewards: Int64 = 0, handRaised: Bool = false, group: String? = nil) {
        self.group = group
        self.info = info
        self.online = online
        self.onStage = onStage
        self.waitingForStage = waitingForStage
        self.boardGranted = boardGranted
        self.camera = camera
        self.microphone = microphone
        self.rewards = rewards
        self.handRaised = handRaised
    }

    public var id: UserID { info.id }

    public func stream(_ device: Device) -> StreamState { device == .camera ? camera : microphone }

    /// What a UI shows for a device: `stream(device)`, but an offline user publishes
    /// nothing, so a device its registers leave on (live or held) shows as off. The
    /// registers, and `camera` and `microphone`, keep their state: it is what the user
    /// finds again on returning (and what `homeroom roster --json` prints, beside `online`).
    public func shownStream(_ device: Device) -> StreamState {
        let state = stream(device)
        return !online && (state == .live || state == .privilegeOff) ? .deviceOff : state
    }
}

/// A page of a user list, for large rooms.
public struct UserPage: Hashable, Sendable {
    public var rows: [UserRow]
    /// Zero-based.
    public var index: Int
    public var size: Int
    /// Users matching the query, on every page.
    public var total: Int

    public init(rows: [UserRow], index: Int, size: Int, total: Int) {
        self.rows = rows
        self.index = index
        self.size = size
        self.total = total
    }

    public var count: Int { max(1, (total + size - 1) / max(1, size)) }
}

/// Everything a UI draws, read at one moment: the read model of the whole room.
/// Built by `ContextPool.snapshot(page:)`; UIs never see the replica itself.
public struct RoomSnapshot: Hashable, Sendable {
    public var room: RoomInfo
    public var classInfo: ClassInfo
    public var localUser: UserInfo
    public var connection: ConnectionState
    public var latencyMicros: Double
    /// Teachers and assistants, online first.
    public var moderators: [UserRow]
    /// Students (the roster table), or one page of them.
    public var students: UserPage
    /// On stage, in the order every replica agrees on.
    public var stage: [UserRow]
    /// Promoted while the stage was full.
    public var stageWaiting: [UserRow]
    public var raisedHands: [UserInfo]
    public var waitingHands: [UserInfo]
    public var onlineCount: Int
    public var observerCount: Int
    /// The stage carousel, while one runs: its settings and the turn shown.
    public var carousel: CarouselStatus?
    /// The live breakout groups (each one's members and room).
    public var breakout: [BreakoutGroup] = []
    /// Invitations to the stage waiting for an answer (`UserContext.inviteToStage`).
    public var invitations: [InvitationInfo] = []

    public init(room: RoomInfo, classInfo: ClassInfo, localUser: UserInfo, connection: ConnectionState, latencyMicros: Double,
                moderators: [UserRow], students: UserPage, stage: [UserRow], stageWaiting: [UserRow],
                raisedHands: [UserInfo], waitingHands: [UserInfo], onlineCount: Int, observerCount: Int,
                carousel: CarouselStatus? = nil) {
        self.carousel = carousel
        self.room = room
        self.classInfo = classInfo
        self.localUser = localUser
        self.connection = connection
        self.latencyMicros = latencyMicros
        self.moderators = moderators
        self.students = students
        self.stage = stage
        self.stageWaiting = stageWaiting
        self.raisedHands = raisedHands
        self.waitingHands = waitingHands
        self.onlineCount = onlineCount
        self.observerCount = observerCount
    }
}

/// A running stage carousel as one replica sees it at one moment.
public struct CarouselStatus: Hashable, Sendable {
    public var intervalSeconds: UInt32
    public var range: Carousel.Range
    public var order: Carousel.Order
    /// The current turn's number (0 first), who it puts on stage, and when the next starts.
    public var turn: UInt64
    public var onStage: [UserID]
    public var nextTurnAtMillis: UInt64
    /// False while every student taking part fits on stage: nothing rotates.
    public var rotates: Bool

    public init(_ settings: Carousel, _ turn: CarouselTurn) {
        intervalSeconds = settings.intervalSeconds
        range = settings.range
        order = settings.order
        self.turn = turn.number
        onStage = turn.onStage
        nextTurnAtMillis = turn.nextTurnAtMillis
        rotates = turn.rotates
    }
}

/// Which rows of the room a list shows.
public struct UserQuery: Hashable, Sendable {
    public var roles: Set<Role>?
    public var includeOffline: Bool

    public init(roles: Set<Role>? = nil, includeOffline: Bool = true) {
        self.roles = roles
        self.includeOffline = includeOffline
    }

    public static let everyone = UserQuery()
    public static let students = UserQuery(roles: [.student])
}
