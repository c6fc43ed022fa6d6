import HomeroomCore

/// The views a UI keeps from change sets alone, for the kinds the core mirrors in
/// `Simulation.record` do not cover: board grants, bans, room and user properties,
/// locks, breakout groups, mute-all, the room's camera and microphone mutes and hand
/// raising. A view is brought up to date only when a change
/// names it, so a merge that changes something without saying so leaves it stale, and
/// the end of the schedule says where.
struct ChangeSetViews {
    var board: Set<UserID> = []
    var banned: Set<UserID> = []
    var roomProperties: [String: PropertyShown] = [:]
    var userProperties: [UserID: [String: PropertyShown]] = [:]
    var locks: [String: LockRecord] = [:]
    var breakout: [BreakoutGroup] = []
    var muteAll: Stamp = .origin
    /// The devices the room mutes now (`deviceMuteUpdated`).
    var mutedDevices: Set<Device> = []
    /// Hand raising on or off, and auto-stage (`handRaisingUpdated`).
    var handRaising = HandRaisingPolicy()
    /// Users the roster has shown (a `userJoined`): from then on it keeps their state.
    var appeared: Set<UserID> = []

    /// What a UI shows of a property: its bytes and revision.
    struct PropertyShown: Equatable {
        var bytes: [UInt8]?
        var revision: UInt64
        init(_ register: Register<PropertyValue>) {
            bytes = register.value.bytes
            revision = register.value.revision
        }
    }

    /// The views as a UI builds them from a snapshot (at start, and after a restart).
    init(from state: RoomState) {
        // A UI shows known users only (a record made by a write that came before the join
        // is not shown); it reads a user's state when the user appears.
        appeared = Set(state.users.filter { $0.value.isOnline(deadIncarnations: state.deadIncarnations) }.keys)
        for (user, record) in state.users where record.isKnown {
            if record.board.value { board.insert(user) }
            if record.isBanned { banned.insert(user) }
            let shown = record.properties.mapValues(PropertyShown.init)
            if !shown.isEmpty { userProperties[user] = shown }
        }
        roomProperties = state.properties.mapValues(PropertyShown.init)
        locks = state.locks
        breakout = state.breakout
        muteAll = state.muteAll
        mutedDevices = Set(Device.allCases.filter { state.mute($0).isClosed })
        handRaising = state.handRaisingPolicy
    }

    init() {}

    mutating func record(_ change: RoomChange, in state: RoomState) {
        switch change {
        case let .userJoined(user), let .userUpdated(user, _, _):
            guard let record = state.users[user], record.isKnown else { return }
            appeared.insert(user)
            if record.board.value { board.insert(user) } else { board.remove(user) }
            if record.isBanned { banned.insert(user) }
            let shown = record.properties.mapValues(PropertyShown.init)
            userProperties[user] = shown.isEmpty ? nil : shown
        case let .boardUpdated(user, granted):
            if granted { board.insert(user) } else { board.remove(user) }
        case let .userBanned(user):
            banned.insert(user)
        case let .roomPropertiesUpdated(keys):
            for key in keys { roomProperties[key] = state.properties[key].map(PropertyShown.init) }
        case let .userPropertiesUpdated(user, keys):
            for key in keys { userProperties[user, default: [:]][key] = state.users[user]?.properties[key].map(PropertyShown.init) }
            if userProperties[user]?.isEmpty == true { userProperties[user] = nil }
        case let .locksUpdated(names):
            for name in names { locks[name] = state.locks[name] }
        case .breakoutUpdated:
            breakout = state.breakout
        case .allMicrophonesMuted:
            muteAll = state.muteAll
        case let .deviceMuteUpdated(device, muted):
            if muted { mutedDevices.insert(device) } else { mutedDevices.remove(device) }
        case let .handRaisingUpdated(policy):
            handRaising = policy
        default:
            break
        }
    }

    /// Where the views differ from the state: each line names the view and what it missed.
    /// Users are compared once the roster has shown them (a user appears with `userJoined`
    /// and is read whole then); a record that became known while offline emits nothing,
    /// so a UI never showed it.
    func differences(from state: RoomState) -> [String] {
        var truth = ChangeSetViews(from: state)
        var mine = self
        let shown = appeared.filter { state.users[$0]?.isKnown == true }
        for views in [\ChangeSetViews.board, \ChangeSetViews.banned] {
            truth[keyPath: views] = truth[keyPath: views].intersection(shown)
            mine[keyPath: views] = mine[keyPath: views].intersection(shown)
        }
        truth.userProperties = truth.userProperties.filter { shown.contains($0.key) }
        mine.userProperties = mine.userProperties.filter { shown.contains($0.key) }
        return mine.compare(truth)
    }

    private func compare(_ truth: ChangeSetViews) -> [String] {
        var found: [String] = []
        if board != truth.board { found.append("board grants \(truth.board.sorted()) but the change sets said \(board.sorted())") }
        if banned != truth.banned { found.append("banned \(truth.banned.sorted()) but the change sets said \(banned.sorted())") }
        if roomProperties != truth.roomProperties {
            let keys = Set(roomProperties.keys).union(truth.roomProperties.keys).filter { roomProperties[$0] != truth.roomProperties[$0] }
            found.append("room properties \(keys.sorted()) differ from the change sets")
        }
        for user in Set(userProperties.keys).union(truth.userProperties.keys) where userProperties[user] ?? [:] != truth.userProperties[user] ?? [:] {
            found.append("\(user)'s properties \(truth.userProperties[user] ?? [:]) differ from the change sets (\(userProperties[user] ?? [:]))")
        }
        if locks != truth.locks { found.append("locks \(Set(locks.keys).union(truth.locks.keys).filter { locks[$0] != truth.locks[$0] }.sorted()) differ from the change sets") }
        if breakout != truth.breakout {
            let shown = { (groups: [BreakoutGroup]) in groups.map { "\($0.id) \($0.name) \($0.members)" } }
            found.append("breakout groups \(shown(truth.breakout)) differ from the change sets (\(shown(breakout)))")
        }
        if muteAll != truth.muteAll { found.append("mute-all \(truth.muteAll) but the change sets said \(muteAll)") }
        if mutedDevices != truth.mutedDevices {
            found.append("room mutes \(truth.mutedDevices.map(\.description).sorted()) but the change sets said \(mutedDevices.map(\.description).sorted())")
        }
        if handRaising != truth.handRaising { found.append("hand raising \(truth.handRaising) but the change sets said \(handRaising)") }
        return found
    }
}
