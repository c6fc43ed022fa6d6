/// One connection of a user, hosted by one incarnation of one node.
public struct SessionRecord: Hashable, Sendable {
    public var id: SessionID
    public var host: ReplicaID
    public var incarnation: UInt64
    /// The first start seen (min-merge).
    public var started: Stamp
    /// The first end seen (min-merge); nil while the session is open.
    public var ended: Stamp?

    public init(id: SessionID, host: ReplicaID, incarnation: UInt64, started: Stamp, ended: Stamp? = nil) {
        self.id = id
        self.host = host
        self.incarnation = incarnation
        self.started = started
        self.ended = ended
    }

    mutating func merge(_ other: SessionRecord) {
        // Equal starts (a leave that carried the start made this record before the join
        // arrived): the larger (incarnation, host) wins, so every replica keeps the same.
        if other.started < started
            || (other.started == started && (other.incarnation, other.host.rawValue) > (incarnation, host.rawValue)) {
            started = other.started
            host = other.host
            incarnation = other.incarnation
        }
        if let otherEnd = other.ended, ended.map({ otherEnd < $0 }) ?? true { ended = otherEnd }
    }
}

/// A reward is identified by its author and the author's write counter, so a write
/// retried through another node counts once.
public struct RewardKey: Hashable, Comparable, Sendable {
    public var author: UserID
    public var authorCounter: UInt64

    public init(author: UserID, authorCounter: UInt64) {
        self.author = author
        self.authorCounter = authorCounter
    }

    public static func < (a: RewardKey, b: RewardKey) -> Bool {
        a.author != b.author ? a.author < b.author : a.authorCounter < b.authorCounter
    }
}

public struct RewardEntry: Hashable, Sendable {
    public var amount: Int32
    /// The smallest stamp among the copies of this reward (min-merge): the copy that
    /// counts, and the one whose origin folds it.
    public var stamp: Stamp
    /// The stamps of the other copies (a reward retried through other nodes), sorted:
    /// each origin folds its own copies away, and one that lost to a smaller copy
    /// must know to (union-merge; at most one copy per node).
    public var copies: [Stamp]
    /// When the author first sent it (its wall clock, Unix ms; min-merge; 0 for
    /// records written before rewards carried it).
    public var issuedAtMillis: UInt64

    public init(amount: Int32, stamp: Stamp, copies: [Stamp] = [], issuedAtMillis: UInt64 = 0) {
        self.amount = amount
        self.stamp = stamp
        self.copies = copies
        self.issuedAtMillis = issuedAtMillis
    }

    /// Takes in another copy (or set of copies) of the same reward.
    mutating func merge(_ other: RewardEntry) {
        issuedAtMillis = min(issuedAtMillis, other.issuedAtMillis)
        // Copies of one reward carry one amount; if hostile input disagrees, the
        // earliest copy's wins (then the smaller), so every replica keeps the same.
        if other.stamp < stamp || (other.stamp == stamp && other.amount < amount) { amount = other.amount }
        guard other.stamp != stamp || !other.copies.isEmpty else { return }
        var all = Set(copies)
        all.insert(stamp)
        all.insert(other.stamp)
        all.formUnion(other.copies)
        let sorted = all.sorted()
        stamp = sorted[0]
        copies = Array(sorted.dropFirst())
    }
}

/// What a user does in class beyond joining: stage, devices, privileges, hand,
/// rewards, kicks and properties. Most of a lecture hall's audience never has
/// any of it, so `UserRecord` allocates it only on the first such write.
public struct UserActivity: Hashable, Sendable {
    public var stage = Register(false, stamp: .origin)
    public var board = Register(false, stamp: .origin)
    public var cameraDevice = Register(false, stamp: .origin)
    public var cameraPrivilege = Register(false, stamp: .origin)
    public var microphoneDevice = Register(false, stamp: .origin)
    public var microphonePrivilege = Register(false, stamp: .origin)
    public var hand = Register(false, stamp: .origin)
    public var kicked: Stamp = .origin
    public var banned: Stamp?
    /// Changed only through `addReward` and `foldRewards`, which keep `rewardTotal`
    /// the floors' sums plus these records' amounts.
    public private(set) var rewards: [RewardKey: RewardEntry] = [:]
    public private(set) var rewardTotal: Int64 = 0
    /// Per origin, the rewards it folded away (see `RewardFloor`).
    public private(set) var rewardFloors: [ReplicaID: RewardFloor] = [:]
    public var properties: [String: Register<PropertyValue>] = [:]
    /// Chat muted for this user by a teacher or an assistant.
    public var chatMuted = Register(false, stamp: .origin)
    /// Temporary presence state, per key (last writer wins); shown while the session that wrote it is open.
    public var presence: [String: Register<PresenceValue>] = [:]
    /// Per origin, the sessions it folded away (see `SessionFloor`).
    public var sessionFloors: [ReplicaID: SessionFloor] = [:]

    public init() {}

    static let none = UserActivity()

    mutating func merge(_ other: UserActivity) {
        stage.merge(other.stage)
        board.merge(other.board)
        cameraDevice.merge(other.cameraDevice)
        cameraPrivilege.merge(other.cameraPrivilege)
        microphoneDevice.merge(other.microphoneDevice)
        microphonePrivilege.merge(other.microphonePrivilege)
        hand.merge(other.hand)
        if kicked < other.kicked { kicked = other.kicked }
        if let otherBan = other.banned, banned.map({ otherBan < $0 }) ?? true { banned = otherBan }
        // Floors first, so a reward the other side folded is not taken in again.
        for (origin, floor) in other.rewardFloors { foldRewards(origin: origin, floor) }
        for (key, entry) in other.rewards { addReward(key, entry) }
        for (key, register) in other.properties {
            RoomState.mergeProperty(&properties, key, register)
        }
        chatMuted.merge(other.chatMuted)
        for (key, register) in other.presence {
            if presence[key] == nil { presence[key] = register } else { presence[key]!.merge(register) }
        }
        for (origin, floor) in other.sessionFloors {
            if sessionFloors[origin] == nil { sessionFloors[origin] = floor } else { sessionFloors[origin]!.merge(floor) }
        }
    }

    /// Whether a reward record with this (earliest) stamp is folded into its origin's floor.
    @inline(__always)
    public func isFolded(rewardStamp stamp: Stamp) -> Bool {
        rewardFloors[stamp.clock.replica]?.covers(sequence: stamp.sequence) ?? false
    }

    /// Adds a copy of a reward; returns how much the total changed (0 for a copy
    /// already counted or folded; negative when the copy shows that a record counted
    /// here is one its origin already folded).
    @discardableResult
    public mutating func addReward(_ key: RewardKey, _ entry: RewardEntry) -> Int64 {
        if let held = rewards[key] {
            var existing = held
            existing.merge(entry)
            if isFolded(rewardStamp: existing.stamp) {
                rewards[key] = nil
                rewardTotal -= Int64(held.amount)
                return -Int64(held.amount)
            }
            rewards[key] = existing
            rewardTotal += Int64(existing.amount) - Int64(held.amount)
            return Int64(existing.amount) - Int64(held.amount)
        }
        if isFolded(rewardStamp: entry.stamp) { return 0 }
        rewards[key] = entry
        rewardTotal += Int64(entry.amount)
        return Int64(entry.amount)
    }

    /// Raises the reward floor of `origin` and drops the records it covers; returns how
    /// much the total changed (0 at the replica that folded: the sum replaces them).
    @discardableResult
    public mutating func foldRewards(origin: ReplicaID, _ floor: RewardFloor) -> Int64 {
        let before = rewardTotal
        let previous = rewardFloors[origin]
        var merged = previous ?? floor
        merged.merge(floor)
        // Unchanged (a patch repeating a floor already here): no record it covers is left.
        if merged == previous { return 0 }
        let previousSum = previous?.sum ?? 0
        rewardFloors[origin] = merged
        rewardTotal += merged.sum - previousSum
        let covered = rewards.filter { $0.value.stamp.clock.replica == origin && merged.covers(sequence: $0.value.stamp.sequence) }
        for (key, entry) in covered {
            rewards[key] = nil
            rewardTotal -= Int64(entry.amount)
        }
        return rewardTotal - before
    }
}

extension UserActivity {
    /// Whether anything here belongs to an origin `retired` says is retired.
    func holdsRetired(_ retired: (ReplicaID) -> Bool) -> Bool {
        rewardFloors.keys.contains(where: retired) || sessionFloors.keys.contains(where: retired)
            || rewards.values.contains { retired($0.stamp.clock.replica) || $0.copies.contains { retired($0.clock.replica) } }
    }

    /// Drops what retired origins left: their floors (what they counted moved into the
    /// retiring node's floor), rewards whose earliest copy they sequenced (counted
    /// there too), and their copies of other rewards. Returns how the total changed.
    @discardableResult
    mutating func dropRetired(_ retired: (ReplicaID) -> Bool) -> Int64 {
        let before = rewardTotal
        for origin in rewardFloors.keys where retired(origin) {
            rewardTotal -= rewardFloors[origin]!.sum
            rewardFloors[origin] = nil
        }
        for (key, entry) in rewards {
            if retired(entry.stamp.clock.replica) {
                rewards[key] = nil
                rewardTotal -= Int64(entry.amount)
            } else if entry.copies.contains(where: { retired($0.clock.replica) }) {
                rewards[key]!.copies.removeAll { retired($0.clock.replica) }
            }
        }
        for origin in sessionFloors.keys where retired(origin) { sessionFloors[origin] = nil }
        return rewardTotal - before
    }
}

/// Everything the room knows about one user, each field with its own lattice.
public struct UserRecord: Hashable, Sendable {
    public var name = Register("", stamp: .origin)
    public var role = Register(Role.student, stamp: .origin)
    /// Sorted by id.
    public var sessions: [SessionRecord] = []
    /// Empty until the first activity write; then exactly one element. An array
    /// costs one word when empty and copies on write, like a lazy box.
    private var activityStorage: [UserActivity] = []

    public init() {}

    public var activity: UserActivity {
        get { activityStorage.first ?? .none }
        set {
            if activityStorage.isEmpty {
                if newValue == .none { return }
                activityStorage = [newValue]
            } else {
                activityStorage[0] = newValue
            }
        }
    }

    /// Changes the activity in place (allocating it on first use).
    @inline(__always)
    mutating func modifyActivity<Result>(_ body: (inout UserActivity) -> Result) -> Result {
        if activityStorage.isEmpty { activityStorage = [UserActivity()] }
        return body(&activityStorage[0])
    }

    public var hasActivity: Bool { !activityStorage.isEmpty }

    /// One field of the activity, read in place: `activity` would copy the whole
    /// struct (retaining its four dictionaries) for every register read.
    @inline(__always)
    func read<Field>(_ field: KeyPath<UserActivity, Field>, default value: Field) -> Field {
        activityStorage.isEmpty ? value : activityStorage[0][keyPath: field]
    }

    public var stage: Register<Bool> { get { read(\.stage, default: .unset) } set { modifyActivity { $0.stage = newValue } } }
    public var board: Register<Bool> { get { read(\.board, default: .unset) } set { modifyActivity { $0.board = newValue } } }
    public var cameraDevice: Register<Bool> { get { read(\.cameraDevice, default: .unset) } set { modifyActivity { $0.cameraDevice = newValue } } }
    public var cameraPrivilege: Register<Bool> { get { read(\.cameraPrivilege, default: .unset) } set { modifyActivity { $0.cameraPrivilege = newValue } } }
    public var microphoneDevice: Register<Bool> { get { read(\.microphoneDevice, default: .unset) } set { modifyActivity { $0.microphoneDevice = newValue } } }
    public var microphonePrivilege: Register<Bool> {
        get { read(\.microphonePrivilege, default: .unset) }
        set { modifyActivity { $0.microphonePrivilege = newValue } }
    }
    public var hand: Register<Bool> { get { read(\.hand, default: .unset) } set { modifyActivity { $0.hand = newValue } } }
    /// The latest kick (max-merge): sessions started before it are over.
    public var kicked: Stamp { get { read(\.kicked, default: .origin) } set { modifyActivity { $0.kicked = newValue } } }
    /// The earliest ban (min-merge). Once set, never cleared: remove wins, forever.
    public var banned: Stamp? { get { read(\.banned, default: nil) } set { modifyActivity { $0.banned = newValue } } }
    public var rewards: [RewardKey: RewardEntry] { read(\.rewards, default: [:]) }
    /// Sum of `rewards`, kept so the roster need not add them up.
    public var rewardTotal: Int64 { read(\.rewardTotal, default: 0) }
    public var properties: [String: Register<PropertyValue>] {
        get { read(\.properties, default: [:]) }
        set { modifyActivity { $0.properties = newValue } }
    }
    public var chatMuted: Register<Bool> { get { read(\.chatMuted, default: .unset) } set { modifyActivity { $0.chatMuted = newValue } } }
    public var presence: [String: Register<PresenceValue>] {
        get { read(\.presence, default: [:]) }
        set { modifyActivity { $0.presence = newValue } }
    }

    /// Whether this session counts: open, started after the last kick, not banned, and
    /// not hosted by a node incarnation known to be dead.
    public func isLive(_ session: SessionRecord, deadIncarnations: [ReplicaID: UInt64]) -> Bool {
        guard session.ended == nil, session.started != Stamp.maxedOut, !isBanned, kicked < session.started else { return false }
        if let dead = deadIncarnations[session.host], session.incarnation <= dead { return false }
        return true
    }

    public func isLive(session id: SessionID, deadIncarnations: [ReplicaID: UInt64]) -> Bool {
        sessions.contains { $0.id == id && isLive($0, deadIncarnations: deadIncarnations) }
    }

    /// The presence state shown now: keys written by a session that is still live.
    public func presenceState(deadIncarnations: [ReplicaID: UInt64]) -> [String: [UInt8]] {
        guard !activityStorage.isEmpty, !activityStorage[0].presence.isEmpty else { return [:] }
        let activity = activityStorage[0]
        var live: [SessionID: Bool] = [:]
        var state: [String: [UInt8]] = [:]
        for (key, register) in activity.presence {
            guard let bytes = register.value.bytes else { continue }
            let session = register.value.session
            if live[session] == nil { live[session] = isLive(session: session, deadIncarnations: deadIncarnations) }
            if live[session]! { state[key] = bytes }
        }
        return state
    }

    /// Offline because the node hosting its last live session was declared down.
    func isTimedOut(deadIncarnations: [ReplicaID: UInt64]) -> Bool {
        guard !isOnline(deadIncarnations: deadIncarnations), !isBanned else { return false }
        return sessions.contains { session in
            guard session.ended == nil, kicked < session.started, let dead = deadIncarnations[session.host] else { return false }
            return session.incarnation <= dead
        }
    }

    /// Whether anyone has told this replica about this user joining.
    public var isKnown: Bool { role.stamp != .origin }

    public var isBanned: Bool { banned != nil }

    @inline(__always)
    func isStageCandidate() -> Bool { stage.value && kicked < stage.stamp && banned == nil }

    @inline(__always)
    func isHandCandidate() -> Bool { hand.value && kicked < hand.stamp && banned == nil }

    public func isOnline(deadIncarnations: [ReplicaID: UInt64]) -> Bool {
        if banned != nil { return false }
        let kicked = self.kicked
        for session in sessions where session.ended == nil && kicked < session.started {
            if let dead = deadIncarnations[session.host], session.incarnation <= dead { continue }
            return true
        }
        return false
    }

    /// Adds a copy of a reward; returns how much the total changed (see `UserActivity.addReward`).
    @discardableResult
    mutating func addReward(_ key: RewardKey, _ entry: RewardEntry) -> Int64 {
        modifyActivity { $0.addReward(key, entry) }
    }

    /// Raises the reward floor of `origin` (a `foldRewards` delta); returns how much the total changed.
    @discardableResult
    mutating func foldRewards(origin: ReplicaID, _ floor: RewardFloor) -> Int64 {
        modifyActivity { $0.foldRewards(origin: origin, floor) }
    }

    /// The floors of this user's folded rewards, per origin.
    public var rewardFloors: [ReplicaID: RewardFloor] { read(\.rewardFloors, default: [:]) }

    /// Whether this session was folded away: its start is under its origin's floor.
    @inline(__always)
    public func isFolded(_ session: SessionRecord) -> Bool {
        guard !activityStorage.isEmpty, !activityStorage[0].sessionFloors.isEmpty, session.started != Stamp.maxedOut else { return false }
        return activityStorage[0].sessionFloors[session.started.clock.replica]?.covers(session.started.sequence) ?? false
    }

    /// The floors of this user's folded sessions, per origin.
    public var sessionFloors: [ReplicaID: SessionFloor] { read(\.sessionFloors, default: [:]) }

    mutating func upsertSession(_ session: SessionRecord) {
        if isFolded(session) { return }
        var low = 0, high = sessions.count
        while low < high {
            let mid = (low + high) / 2
            if sessions[mid].id < session.id { low = mid + 1 } else { high = mid }
        }
        if low < sessions.count && sessions[low].id == session.id {
            sessions[low].merge(session)
        } else {
            sessions.insert(session, at: low)
        }
    }

    mutating func endSession(_ id: SessionID, at stamp: Stamp, started: Stamp? = nil) {
        guard let index = sessions.firstIndex(where: { $0.id == id }) else {
            // The end arrived before the start: keep it so the start, when it comes, stays
            // ended. A leave that names the start (every current node's does) makes the
            // record the start will merge into, or nothing if that start was folded away.
            let start = started ?? Stamp.maxedOut
            upsertSession(SessionRecord(id: id, host: started?.clock.replica ?? ReplicaID(0), incarnation: 0, started: start, ended: stamp))
            return
        }
        if sessions[index].ended.map({ stamp < $0 }) ?? true { sessions[index].ended = stamp }
    }

    /// Joins another copy of this user's record into this one (the lattice join).
    mutating func merge(_ other: UserRecord) {
        name.merge(other.name)
        role.merge(other.role)
        // Floors first, so a session the other side folded is not taken in again.
        let floorsBefore = sessionFloors
        if let otherActivity = other.activityStorage.first { modifyActivity { $0.merge(otherActivity) } }
        for session in other.sessions { upsertSession(session) }
        if sessionFloors != floorsBefore { dropFoldedSessions() }
    }

    /// Whether anything of this record belongs to a retired origin (see `RoomState.retiredGenerations`).
    func holdsRetired(_ retired: (ReplicaID) -> Bool) -> Bool {
        sessions.contains { retired($0.host) || ($0.started != Stamp.maxedOut && retired($0.started.clock.replica)) }
            || (!activityStorage.isEmpty && activityStorage[0].holdsRetired(retired))
    }

    /// Drops what retired origins left in this record: the sessions they hosted or
    /// started (all over: their stores are gone) and their reward and session floors.
    mutating func dropRetired(_ retired: (ReplicaID) -> Bool) {
        sessions.removeAll { retired($0.host) || ($0.started != Stamp.maxedOut && retired($0.started.clock.replica)) }
        if !activityStorage.isEmpty && activityStorage[0].holdsRetired(retired) { activityStorage[0].dropRetired(retired) }
    }

    /// Raises the floor of `origin` (a `foldSessions` delta) and drops what it covers.
    mutating func fold(origin: ReplicaID, _ floor: SessionFloor) {
        modifyActivity { activity in
            if activity.sessionFloors[origin] == nil { activity.sessionFloors[origin] = floor } else { activity.sessionFloors[origin]!.merge(floor) }
        }
        dropFoldedSessions()
    }

    private mutating func dropFoldedSessions() {
        let floors = sessionFloors
        let folded = { (session: SessionRecord) -> Bool in
            session.started != Stamp.maxedOut && floors[session.started.clock.replica]?.covers(session.started.sequence) == true
        }
        guard sessions.contains(where: folded) else { return }
        sessions.removeAll(where: folded)
    }

    /// The part of this record whose writes `seen` does not cover; nil when nothing is missing.
    func missing(from seen: SeenCheck) -> UserRecord? {
        var patch = UserRecord()
        var any = false
        if !seen.contains(name.stamp.dot) { patch.name = name; any = true }
        if !seen.contains(role.stamp.dot) { patch.role = role; any = true }
        for session in sessions {
            let startMissing = !seen.contains(session.started.dot) && session.started != Stamp.maxedOut
            let endMissing = session.ended.map { !seen.contains($0.dot) } ?? false
            if startMissing || endMissing { patch.sessions.append(session); any = true }
        }
        if !activityStorage.isEmpty, let missing = activityStorage[0].missing(from: seen) {
            patch.activityStorage = [missing]
            any = true
        }
        return any ? patch : nil
    }

    /// Whether merging this record into an empty one gives it back unchanged: sessions
    /// sorted by id without repeats, and no unwritten (origin-stamped) register holding
    /// a value other than its default. Records built by Core and the wire decoder are.
    var isCanonical: Bool {
        func plain<V>(_ register: Register<V>, _ fresh: Register<V>) -> Bool { register.stamp != .origin || register == fresh }
        let fresh = UserRecord()
        guard plain(name, fresh.name), plain(role, fresh.role) else { return false }
        for index in sessions.indices.dropFirst() where !(sessions[index - 1].id < sessions[index].id) { return false }
        guard !activityStorage.isEmpty else { return true }
        if !activityStorage[0].sessionFloors.isEmpty && sessions.contains(where: isFolded) { return false }
        let activity = activityStorage[0], none = UserActivity.none
        return plain(activity.stage, none.stage) && plain(activity.board, none.board) && plain(activity.cameraDevice, none.cameraDevice)
            && plain(activity.cameraPrivilege, none.cameraPrivilege) && plain(activity.microphoneDevice, none.microphoneDevice)
            && plain(activity.microphonePrivilege, none.microphonePrivilege) && plain(activity.hand, none.hand)
            && plain(activity.chatMuted, none.chatMuted)
    }

    /// This record merged into an empty one (what a replica that never saw the user keeps).
    static func merged(_ record: UserRecord) -> UserRecord {
        var fresh = UserRecord()
        fresh.merge(record)
        return fresh
    }

    /// Whether `missing(from: .empty)` would return this record unchanged (see
    /// `RoomState.isOwnSnapshot`): every field written or at its default, every session
    /// kept, and something written (an all-default record is left out of a snapshot).
    var isOwnSnapshot: Bool {
        let fresh = UserRecord()
        guard name.isWritten(or: fresh.name), role.isWritten(or: fresh.role) else { return false }
        for session in sessions {
            let startKept = session.started.sequence != 0 && session.started != Stamp.maxedOut
            let endKept = session.ended.map { $0.sequence != 0 } ?? false
            if !startKept && !endKept { return false }
        }
        var written = name.stamp.sequence != 0 || role.stamp.sequence != 0 || !sessions.isEmpty
        if !activityStorage.isEmpty {
            guard activityStorage[0].isOwnSnapshot else { return false }
            written = written || activityStorage[0] != UserActivity.none
        }
        return written
    }

    public static func == (a: UserRecord, b: UserRecord) -> Bool {
        a.name == b.name && a.role == b.role && a.sessions == b.sessions && a.activity == b.activity
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(role)
        hasher.combine(sessions)
        hasher.combine(activity)
    }
}

extension UserActivity {
    /// Whether `missing(from: .empty)` keeps every field (or leaves out only defaults).
    var isOwnSnapshot: Bool {
        let fresh = UserActivity.none
        return stage.isWritten(or: fresh.stage) && board.isWritten(or: fresh.board)
            && cameraDevice.isWritten(or: fresh.cameraDevice) && cameraPrivilege.isWritten(or: fresh.cameraPrivilege)
            && microphoneDevice.isWritten(or: fresh.microphoneDevice) && microphonePrivilege.isWritten(or: fresh.microphonePrivilege)
            && hand.isWritten(or: fresh.hand) && (kicked.sequence != 0 || kicked == .origin)
            && (banned.map { $0.sequence != 0 } ?? true)
            && rewards.values.allSatisfy { $0.stamp.sequence != 0 }
            && properties.values.allSatisfy { $0.stamp.sequence != 0 }
            && chatMuted.isWritten(or: fresh.chatMuted)
            && presence.values.allSatisfy { $0.stamp.sequence != 0 }
            && sessionFloors.values.allSatisfy { $0.stamp.sequence != 0 }
            && rewardFloors.values.allSatisfy { $0.stamp.sequence != 0 }
    }

    func missing(from seen: SeenCheck) -> UserActivity? {
        var patch = UserActivity()
        var any = false
        func take(_ source: Register<Bool>, _ target: inout Register<Bool>) {
            if !seen.contains(source.stamp.dot) { target = source; any = true }
        }
        take(stage, &patch.stage)
        take(board, &patch.board)
        take(cameraDevice, &patch.cameraDevice)
        take(cameraPrivilege, &patch.cameraPrivilege)
        take(microphoneDevice, &patch.microphoneDevice)
        take(microphonePrivilege, &patch.microphonePrivilege)
        take(hand, &patch.hand)
        if !seen.contains(kicked.dot) { patch.kicked = kicked; any = true }
        if let ban = banned, !seen.contains(ban.dot) { patch.banned = ban; any = true }
        // A floor whose fold is missing goes first: merged, it drops the records it covers.
        for (origin, floor) in rewardFloors where !seen.contains(floor.stamp.dot) {
            patch.foldRewards(origin: origin, floor)
            any = true
        }
        for (key, entry) in rewards where !seen.contains(entry.stamp.dot) || entry.copies.contains(where: { !seen.contains($0.dot) }) {
            patch.addReward(key, entry)
            any = true
        }
        for (key, register) in properties where !seen.contains(register.stamp.dot) {
            patch.properties[key] = register
            any = true
        }
        if !seen.contains(chatMuted.stamp.dot) { patch.chatMuted = chatMuted; any = true }
        for (key, register) in presence where !seen.contains(register.stamp.dot) {
            patch.presence[key] = register
            any = true
        }
        for (origin, floor) in sessionFloors where !seen.contains(floor.stamp.dot) {
            patch.sessionFloors[origin] = floor
            any = true
        }
        return any ? patch : nil
    }
}

extension Register where Value == Bool {
    /// A flag nobody has written: false, at the origin stamp.
    static let unset = Register(false, stamp: .origin)
}

extension Stamp {
    /// Placeholder start of a session whose end arrived first: loses every min-merge.
    static let maxedOut = Stamp(clock: HybridTimestamp(packed: .max, replica: ReplicaID(.max)), sequence: .max)
}
