/// One row of the roster, with the seed's columns: Name, Stage, Auth, Camera, Mic, Rewards.
public struct RosterRow: Hashable, Sendable {
    public var user: UserID
    public var name: String
    public var role: Role
    public var online: Bool
    public var onStage: Bool
    /// Promoted, but the stage is full.
    public var waitingForStage: Bool
    /// Whiteboard authorization.
    public var boardGranted: Bool
    public var camera: StreamState
    public var microphone: StreamState
    public var rewards: Int64
    public var handRaised: Bool
    public var kicked: Bool
    public var banned: Bool
    /// The breakout group the user is in (nil: the main room).
    public var group: String? = nil
}

/// The derived view of a room that a UI renders.
public struct Roster: Hashable, Sendable {
    public var roomID: String
    public var roomName: String
    public var roomType: RoomType
    public var classState: ClassState
    /// Wall-clock ms when the class entered its current state (0 if never).
    public var classStateSinceMillis: UInt64
    public var schedule: Schedule
    public var stageLimit: Int
    public var rows: [RosterRow]
    public var stage: [UserID]
    public var stageWaiting: [UserID]
    public var raisedHands: [UserID]
    public var waitingHands: [UserID]
    public var onlineCount: Int
    /// The running carousel's settings and current turn (when built with a moment).
    public var carousel: Carousel? = nil
    public var carouselTurn: CarouselTurn? = nil
    /// The live breakout groups.
    public var breakout: [BreakoutGroup] = []
}

/// The part of a roster that depends on the moment and on the stage and hand queues:
/// who is on stage (a running carousel's turn decides), promoted and waiting, hands up.
/// Small (bounded by the stage and hand limits), and cheap to take every frame.
public struct RosterFrame: Hashable, Sendable {
    public var turn: CarouselTurn?
    public var stage: [UserID]
    public var stageWaiting: [UserID]
    public var raisedHands: [UserID]
    public var waitingHands: [UserID]
    /// What the camera and microphone states follow room-wide (mute-all, the room's mutes).
    public var streams: StreamRules
    public let stageRank: [UserID: Int]
    let waiting: Set<UserID>
    let hands: Set<UserID>

    init(turn: CarouselTurn?, stage: [UserID], stageWaiting: [UserID], raisedHands: [UserID], waitingHands: [UserID], streams: StreamRules) {
        self.turn = turn
        self.streams = streams
        self.stage = stage
        self.stageWaiting = stageWaiting
        self.raisedHands = raisedHands
        self.waitingHands = waitingHands
        stageRank = Dictionary(stage.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        waiting = Set(stageWaiting)
        hands = Set(raisedHands)
    }

    /// Users whose row this frame marks (stage, waiting, hand): what a row depends on besides its own record.
    public var marked: Set<UserID> { Set(stage).union(waiting).union(hands) }
}

extension RoomState {
    /// The stage and hands at `nowMillis` (nil: the stage as written, without the carousel).
    public func rosterFrame(nowMillis: UInt64?) -> RosterFrame {
        let turn = nowMillis.flatMap { carouselTurn(atMillis: $0) }
        return RosterFrame(turn: turn, stage: nowMillis == nil ? stageWinners : stage(during: turn),
                           stageWaiting: turn == nil ? stageWaiting : [], raisedHands: raisedHands, waitingHands: waitingHands,
                           streams: streamRules)
    }

    /// One known user's row in `frame` (banned users have rows too; the roster leaves them out).
    public func rosterRow(_ user: UserID, _ record: UserRecord, in frame: RosterFrame) -> RosterRow {
        let isOnline = record.isOnline(deadIncarnations: deadIncarnations)
        let onStage = frame.stageRank[user] != nil
        return RosterRow(
            user: user, name: record.name.value, role: record.role.value, online: isOnline,
            onStage: onStage, waitingForStage: frame.waiting.contains(user), boardGranted: record.board.value,
            camera: frame.streams.state(record, .camera, onStage: onStage),
            microphone: frame.streams.state(record, .microphone, onStage: onStage),
            rewards: record.rewardTotal, handRaised: frame.hands.contains(user),
            kicked: !(record.kicked == .origin) && !isOnline, banned: record.isBanned,
            group: breakoutAssignments.isEmpty ? nil : breakoutGroup(of: user))
    }

    /// The roster's order: on-stage users first (in stage order), then by name, then by id.
    public static func rosterPrecedes(_ aUser: UserID, _ aName: String, _ bUser: UserID, _ bName: String, stageRank: [UserID: Int]) -> Bool {
        switch (stageRank[aUser], stageRank[bUser]) {
        case let (x?, y?): return x < y
        case (.some, nil): return true
        case (nil, .some): return false
        case (nil, nil): return namePrecedes(aName, aUser, bName, bUser)
        }
    }

    /// By name (natural order), then by id: the roster's order off the stage.
    public static func namePrecedes(_ aName: String, _ aUser: UserID, _ bName: String, _ bUser: UserID) -> Bool {
        aName != bName ? NaturalOrder.less(aName, bName) : NaturalOrder.less(aUser, bUser)
    }

    /// The same order, for names whose keys were made once (sorting many).
    public static func namePrecedes(_ aName: NaturalOrder.Key, _ aUser: UserID, _ bName: NaturalOrder.Key, _ bUser: UserID) -> Bool {
        aName != bName ? aName < bName : NaturalOrder.less(aUser, bUser)
    }

    /// The roster: users that have joined at least once and are not banned;
    /// on-stage users first (in stage order), then by name, then by id.
    /// `roles` filters rows (the roster shows students by default in the UI).
    /// `nowMillis`: the moment (Unix ms) a running carousel's turn is taken at; nil
    /// shows the stage as written (`stageWinners`), without the carousel.
    public func roster(roles: Set<Role>? = nil, includeOffline: Bool = true, nowMillis: UInt64? = nil) -> Roster {
        let frame = rosterFrame(nowMillis: nowMillis)
        var rows: [RosterRow] = []
        var online = 0
        rows.reserveCapacity(users.count)
        for (user, record) in users where record.isKnown {
            let row = rosterRow(user, record, in: frame)
            if row.online { online += 1 }
            if record.isBanned { continue }
            if let roles, !roles.contains(record.role.value) { continue }
            if !includeOffline && !row.online { continue }
            rows.append(row)
        }
        // Each name cut into its natural-order key once, not at every comparison.
        var keyed = rows.map { (row: $0, key: NaturalOrder.Key($0.name)) }
        keyed.sort { a, b in
            switch (frame.stageRank[a.row.user], frame.stageRank[b.row.user]) {
            case let (x?, y?): return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return Self.namePrecedes(a.key, a.row.user, b.key, b.row.user)
            }
        }
        rows = keyed.map(\.row)
        return Roster(roomID: roomID, roomName: name.value, roomType: type.value, classState: classState.state,
                      classStateSinceMillis: classState.stamp == .origin ? 0 : classState.stamp.clock.millis,
                      schedule: schedule.value, stageLimit: stageLimitValue, rows: rows, stage: frame.stage,
                      stageWaiting: frame.stageWaiting, raisedHands: frame.raisedHands, waitingHands: frame.waitingHands, onlineCount: online,
                      carousel: carousel.value.running ? carousel.value : nil, carouselTurn: frame.turn, breakout: breakout)
    }
}
