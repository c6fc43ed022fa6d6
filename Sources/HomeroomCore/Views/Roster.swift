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

extension RoomState {
    /// The roster: users that have joined at least once and are not banned;
    /// on-stage users first (in stage order), then by name, then by id.
    /// `roles` filters rows (the roster shows students by default in the UI).
    /// `nowMillis`: the moment (Unix ms) a running carousel's turn is taken at; nil
    /// shows the stage as written (`stageWinners`), without the carousel.
    public func roster(roles: Set<Role>? = nil, includeOffline: Bool = true, nowMillis: UInt64? = nil) -> Roster {
        let turn = nowMillis.flatMap { carouselTurn(atMillis: $0) }
        let stage = nowMillis == nil ? stageWinners : self.stage(during: turn)
        let stageRank = Dictionary(uniqueKeysWithValues: stage.enumerated().map { ($1, $0) })
        let stageWaiting = turn == nil ? self.stageWaiting : []
        let waiting = Set(stageWaiting)
        let hands = Set(raisedHands)
        var rows: [RosterRow] = []
        var online = 0
        rows.reserveCapacity(users.count)
        for (user, record) in users where record.isKnown {
            let isOnline = record.isOnline(deadIncarnations: deadIncarnations)
            if isOnline { online += 1 }
            if record.isBanned { continue }
            if let roles, !roles.contains(record.role.value) { continue }
            if !includeOffline && !isOnline { continue }
            let onStage = stageRank[user] != nil
            rows.append(RosterRow(
                user: user, name: record.name.value, role: record.role.value, online: isOnline,
                onStage: onStage, waitingForStage: waiting.contains(user), boardGranted: record.board.value,
                camera: .derive(onStage: onStage, deviceOn: record.cameraDevice.value, privilegeOn: record.cameraPrivilege.value),
                microphone: .derive(onStage: onStage, deviceOn: record.microphoneDevice.value,
                                    privilegeOn: microphonePrivilege(record, muteAll: muteAll)),
                rewards: record.rewardTotal, handRaised: hands.contains(user),
                kicked: !(record.kicked == .origin) && !isOnline, banned: record.isBanned,
                group: breakoutAssignments.isEmpty ? nil : breakoutGroup(of: user)))
        }
        rows.sort { a, b in
            switch (stageRank[a.user], stageRank[b.user]) {
            case let (x?, y?): return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.name != b.name ? NaturalOrder.less(a.name, b.name) : NaturalOrder.less(a.user, b.user)
            }
        }
        return Roster(roomID: roomID, roomName: name.value, roomType: type.value, classState: classState.state,
                      classStateSinceMillis: classState.stamp == .origin ? 0 : classState.stamp.clock.millis,
                      schedule: schedule.value, stageLimit: stageLimitValue, rows: rows, stage: stage,
                      stageWaiting: stageWaiting, raisedHands: raisedHands, waitingHands: waitingHands, onlineCount: online,
                      carousel: carousel.value.running ? carousel.value : nil, carouselTurn: turn, breakout: breakout)
    }
}
