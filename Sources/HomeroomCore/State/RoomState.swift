/// The replicated state of one room: a join-semilattice of registers, counters
/// and sets, plus the version vector of the deltas it contains.
///
/// `apply` takes one delta, `merge` takes a patch (another `RoomState`, usually
/// cut down by `missing(since:)`); both are commutative, associative and
/// idempotent, and both return the change set they caused.
public struct RoomState: Sendable {
    public let roomID: String
    public var name = Register("", stamp: .origin)
    public var type = Register(RoomType.smallClassroom, stamp: .origin)
    public var stageLimit = Register(UInt32(RoomState.defaultStageLimit), stamp: .origin)
    public var handLimit = Register(UInt32(RoomState.defaultHandLimit), stamp: .origin)
    public var schedule = Register(Schedule(), stamp: .origin)
    /// The stage carousel (LWW); its start is this register's stamp.
    public var carousel = Register(Carousel.stopped, stamp: .origin)
    public var classState = ClassStateRegister()
    /// The latest mute-all: a microphone privilege granted before it is off.
    public var muteAll: Stamp = .origin
    /// Per node, the highest incarnation known to be dead (max-merge).
    public var deadIncarnations: [ReplicaID: UInt64] = [:]
    public var properties: [String: Register<PropertyValue>] = [:]
    /// Locks by name (at most `Locks.maxPerRoom`).
    public var locks: [String: LockRecord] = [:]
    /// Breakout groups by id: their names (nil: removed), LWW, written after `breakoutEnded`.
    public var breakoutGroups: [String: Register<String?>] = [:]
    /// Who is in which group (nil: the main room), LWW, written after `breakoutEnded`.
    public var breakoutAssignments: [UserID: Register<String?>] = [:]
    /// The latest end of every group (max-merged): what was written before it is void.
    public var breakoutEnded: Stamp = .origin
    /// Chat muted for every student and observer (teachers and assistants may still send).
    public var chatMuted = Register(false, stamp: .origin)
    /// The room's camera mute (Flexible Classroom's `muteVideo`): while closed no student's
    /// camera counts as on, and a student's camera turned on before or during it stays off.
    public var cameraMute = RoomGate()
    /// The room's microphone mute (`muteAudio`), as `cameraMute`.
    public var microphoneMute = RoomGate()
    /// Hand raising (Flexible Classroom's `allowHandsUp`): closed while switched off; a
    /// hand raised before the switch-off, or while it held, does not count (`RoomGate`).
    public var handRaising = RoomGate()
    /// Whether a student's raise puts it on stage while seats remain (with hand raising on).
    public var autoStage = Register(false, stamp: .origin)
    /// Invitations to the stage, by invited user: the latest of each (`StageInvitation`).
    public var invitations: [UserID: StageInvitation] = [:]
    /// How many messages the history keeps.
    public var historyLimit = Register(MessageLog.defaultLimit, stamp: .origin)
    /// Room and peer messages, newest `historyLimit` above the floor.
    public var messages = MessageLog()
    public var users: [UserID: UserRecord] = [:]
    /// Every delta this state contains, rejected ones included.
    public var seen = VersionVector()
    /// Per node name (its hash), the highest generation of its replica ids that is
    /// retired (max-merge): replicas keep nothing of those ids and take nothing from them.
    public var retiredGenerations: [UInt32: UInt64] = [:]

    // Derived, rebuilt from the fields above; not part of equality.
    var stageQueue = CandidateQueue()
    var handQueue = CandidateQueue()
    /// Bytes of every property in the room, kept as registers change (`maxPropertyBytesPerRoom`).
    public internal(set) var propertyBytes = 0

    public static let defaultStageLimit = 6
    public static let defaultHandLimit = 10

    public init(roomID: String) {
        self.roomID = roomID
    }
}

extension RoomState: Equatable {
    public static func == (a: RoomState, b: RoomState) -> Bool {
        a.roomID == b.roomID && a.name == b.name && a.type == b.type && a.stageLimit == b.stageLimit
            && a.handLimit == b.handLimit && a.schedule == b.schedule && a.carousel == b.carousel && a.classState == b.classState
            && a.muteAll == b.muteAll && a.deadIncarnations == b.deadIncarnations
            && a.properties == b.properties && a.locks == b.locks && a.breakoutGroups == b.breakoutGroups
            && a.breakoutAssignments == b.breakoutAssignments && a.breakoutEnded == b.breakoutEnded && a.users == b.users && a.seen == b.seen
            && a.retiredGenerations == b.retiredGenerations && a.chatMuted == b.chatMuted && a.historyLimit == b.historyLimit && a.messages == b.messages
            && a.cameraMute == b.cameraMute && a.microphoneMute == b.microphoneMute
            && a.handRaising == b.handRaising && a.autoStage == b.autoStage && a.invitations == b.invitations
    }
}

// MARK: - Derived facts

/// What the room shows of one user; two of these are compared to emit changes.
struct UserFacts: Equatable {
    var known = false
    var online = false
    var name = ""
    var role = Role.student
    var onStage = false
    var camera = StreamState.inoperable
    var microphone = StreamState.inoperable
    var board = false
    var handUp = false
    var rewardTotal: Int64 = 0
    var kicked = Stamp.origin
    var banned = false
    /// Banned, and assigned to a live breakout group (whose list no longer shows it).
    var grouped = false
}

/// The room-wide inputs to `UserFacts`, captured before a change so the
/// "before" facts of untouched users can be computed afterwards.
struct FactsContext {
    var stageWinners: [UserID]
    var handWinners: [UserID]
    var streams: StreamRules
    var deadIncarnations: [ReplicaID: UInt64]
}

extension RoomState {
    public var stageLimitValue: Int { type.value == .oneToOne ? 2 : Int(stageLimit.value) }

    /// Users on stage, in the order every replica agrees on.
    public var stageWinners: [UserID] {
        if type.value == .oneToOne { return oneToOneParties }
        return stageQueue.winningUsers(limit: stageLimitValue)
    }

    /// In a one-to-one room the first teacher and the first student to join are
    /// both always on stage (earliest join, then id, so every replica agrees).
    var oneToOneParties: [UserID] {
        var teacher: (Stamp, UserID)?
        var student: (Stamp, UserID)?
        for (user, record) in users where record.isKnown && !record.isBanned {
            let key = (record.role.stamp, user)
            switch record.role.value {
            case .teacher: if teacher.map({ key < $0 }) ?? true { teacher = key }
            case .student: if student.map({ key < $0 }) ?? true { student = key }
            default: break
            }
        }
        return [teacher?.1, student?.1].compactMap { $0 }.sorted()
    }

    /// Users promoted while the stage was full: shown as waiting, in order.
    public var stageWaiting: [UserID] {
        type.value == .oneToOne ? [] : stageQueue.waiting(limit: stageLimitValue).map(\.user)
    }

    public var raisedHands: [UserID] { handQueue.winningUsers(limit: Int(handLimit.value)) }
    public var waitingHands: [UserID] { handQueue.waiting(limit: Int(handLimit.value)).map(\.user) }

    public func isOnStage(_ user: UserID) -> Bool {
        if type.value == .oneToOne { return oneToOneParties.contains(user) }
        return stageQueue.isAmongFirst(stageLimitValue, user)
    }

    public func isHandUp(_ user: UserID) -> Bool {
        return handQueue.isAmongFirst(Int(handLimit.value), user)
    }

    /// Hand raising as the room has it now: on or off, and auto-stage (which counts only while on).
    public var handRaisingPolicy: HandRaisingPolicy {
        let allowed = !handRaising.isClosed
        return HandRaisingPolicy(allowed: allowed, autoStage: allowed && autoStage.value)
    }

    public func isOnline(_ user: UserID) -> Bool {
        users[user]?.isOnline(deadIncarnations: deadIncarnations) ?? false
    }

    public func microphonePrivilege(_ record: UserRecord, muteAll: Stamp) -> Bool {
        record.microphonePrivilege.value && muteAll < record.microphonePrivilege.stamp
    }

    /// What decides camera and microphone states room-wide: mute-all and the room's mutes.
    public var streamRules: StreamRules { StreamRules(muteAll: muteAll, cameraMute: cameraMute, microphoneMute: microphoneMute) }

    /// The room's mute of one device.
    public func mute(_ device: Device) -> RoomGate { device == .camera ? cameraMute : microphoneMute }

    func currentContext() -> FactsContext {
        FactsContext(stageWinners: stageWinners, handWinners: raisedHands, streams: streamRules, deadIncarnations: deadIncarnations)
    }

    func facts(_ user: UserID, _ record: UserRecord, onStage: Bool, handUp: Bool, streams: StreamRules, dead: [ReplicaID: UInt64]) -> UserFacts {
        UserFacts(
            known: record.isKnown,
            online: record.isOnline(deadIncarnations: dead),
            name: record.name.value,
            role: record.role.value,
            onStage: onStage,
            camera: streams.state(record, .camera, onStage: onStage),
            microphone: streams.state(record, .microphone, onStage: onStage),
            board: record.board.value,
            handUp: handUp,
            rewardTotal: record.rewardTotal,
            kicked: record.kicked,
            banned: record.isBanned,
            // Looked up only for a banned user: the one case `emit` reads it (a ban).
            grouped: record.isBanned && breakoutGroup(of: user) != nil
        )
    }

    func currentFacts(_ user: UserID) -> UserFacts {
        guard let record = users[user] else { return UserFacts() }
        return facts(user, record, onStage: isOnStage(user), handUp: isHandUp(user), streams: streamRules, dead: deadIncarnations)
    }

    func facts(_ user: UserID, record: UserRecord, in context: FactsContext) -> UserFacts {
        facts(user, record, onStage: context.stageWinners.contains(user), handUp: context.handWinners.contains(user),
              streams: context.streams, dead: context.deadIncarnations)
    }

    /// Keeps the stage and hand queues in step with one user's record.
    mutating func reindex(_ user: UserID) {
        guard let record = users[user] else { return }
        stageQueue.set(user, stamp: record.isStageCandidate() ? record.stage.stamp : nil)
        // A hand counts only if raised while hand raising was on (and since it was last switched on).
        handQueue.set(user, stamp: record.isHandCandidate() && handRaising.admits(record.hand.stamp) ? record.hand.stamp : nil)
    }

    /// Re-places every raised hand (hand raising was switched on or off).
    mutating func reindexHands() {
        for (user, record) in users where record.hasActivity && record.hand.value { reindex(user) }
    }

    /// Rebuilds every derived index (after decoding a snapshot, for example).
    public mutating func rebuildIndexes() {
        stageQueue = CandidateQueue()
        handQueue = CandidateQueue()
        for user in users.keys { reindex(user) }
        propertyBytes = recountPropertyBytes()
    }
}

// MARK: - Emitting changes

extension RoomState {
    static func emit(_ user: UserID, before: UserFacts, after: UserFacts, into changes: inout [RoomChange],
                     stageAdded: inout [UserID], stageRemoved: inout [UserID]) {
        if before == after { return }
        if !before.online && after.online { changes.append(.userJoined(user)) }
        if before.known && after.known && (before.name != after.name || before.role != after.role) {
            changes.append(.userUpdated(user, previousName: before.name, previousRole: before.role))
        }
        // Known now, but not online (its session's host is already declared down, or a
        // patch brought only ended sessions): the roster shows it offline, so say so.
        if !before.known && after.known && !after.online { changes.append(.userKnown(user)) }
        if before.kicked != after.kicked { changes.append(.userKicked(user)) }
        if !before.banned && after.banned { changes.append(.userBanned(user)) }
        // A ban takes a member out of its breakout group's list (the assignment stays).
        if !before.banned && after.grouped { changes.append(.breakoutUpdated) }
        if before.online && !after.online { changes.append(.userLeft(user)) }
        if before.onStage != after.onStage {
            if after.onStage { stageAdded.append(user) } else { stageRemoved.append(user) }
        }
        if before.camera != after.camera { changes.append(.streamUpdated(user, .camera, after.camera)) }
        if before.microphone != after.microphone { changes.append(.streamUpdated(user, .microphone, after.microphone)) }
        if before.board != after.board { changes.append(.boardUpdated(user, granted: after.board)) }
        if before.handUp != after.handUp { changes.append(after.handUp ? .handWaved(user) : .handLowered(user)) }
        if after.rewardTotal != before.rewardTotal {
            changes.append(.userRewarded(user, amount: Int32(clamping: after.rewardTotal - before.rewardTotal), total: after.rewardTotal))
        }
    }
}
