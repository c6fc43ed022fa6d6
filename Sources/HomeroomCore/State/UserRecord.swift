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
        if other.started < started {
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
    /// The smallest stamp among the copies of this reward (min-merge).
    public var stamp: Stamp
}

/// Everything the room knows about one user, each field with its own lattice.
public struct UserRecord: Hashable, Sendable {
    public var name = Register("", stamp: .origin)
    public var role = Register(Role.student, stamp: .origin)
    public var stage = Register(false, stamp: .origin)
    public var board = Register(false, stamp: .origin)
    public var cameraDevice = Register(false, stamp: .origin)
    public var cameraPrivilege = Register(false, stamp: .origin)
    public var microphoneDevice = Register(false, stamp: .origin)
    public var microphonePrivilege = Register(false, stamp: .origin)
    public var hand = Register(false, stamp: .origin)
    /// The latest kick (max-merge): sessions started before it are over.
    public var kicked: Stamp = .origin
    /// The earliest ban (min-merge). Once set, never cleared: remove wins, forever.
    public var banned: Stamp?
    /// Sorted by id.
    public var sessions: [SessionRecord] = []
    public var rewards: [RewardKey: RewardEntry] = [:]
    /// Sum of `rewards`, kept so the roster need not add them up.
    public private(set) var rewardTotal: Int64 = 0
    public var properties: [String: Register<PropertyValue>] = [:]

    public init() {}

    /// Whether anyone has told this replica about this user joining.
    public var isKnown: Bool { role.stamp != .origin }

    public var isBanned: Bool { banned != nil }

    @inline(__always)
    func isStageCandidate() -> Bool { stage.value && kicked < stage.stamp && banned == nil }

    @inline(__always)
    func isHandCandidate() -> Bool { hand.value && kicked < hand.stamp && banned == nil }

    func isOnline(deadIncarnations: [ReplicaID: UInt64]) -> Bool {
        guard banned == nil else { return false }
        for session in sessions where session.ended == nil && kicked < session.started {
            if let dead = deadIncarnations[session.host], session.incarnation <= dead { continue }
            return true
        }
        return false
    }

    /// Adds a reward; returns the amount actually added (0 for a copy already counted).
    @discardableResult
    mutating func addReward(_ key: RewardKey, _ entry: RewardEntry) -> Int32 {
        if let existing = rewards[key] {
            if entry.stamp < existing.stamp { rewards[key]!.stamp = entry.stamp }
            return 0
        }
        rewards[key] = entry
        rewardTotal += Int64(entry.amount)
        return entry.amount
    }

    mutating func upsertSession(_ session: SessionRecord) {
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

    mutating func endSession(_ id: SessionID, at stamp: Stamp) {
        guard let index = sessions.firstIndex(where: { $0.id == id }) else {
            // The end arrived before the start: keep it so the start, when it comes, stays ended.
            upsertSession(SessionRecord(id: id, host: ReplicaID(0), incarnation: 0, started: Stamp.maxedOut, ended: stamp))
            return
        }
        if sessions[index].ended.map({ stamp < $0 }) ?? true { sessions[index].ended = stamp }
    }

    /// Joins another copy of this user's record into this one (the lattice join).
    mutating func merge(_ other: UserRecord) {
        name.merge(other.name)
        role.merge(other.role)
        stage.merge(other.stage)
        board.merge(other.board)
        cameraDevice.merge(other.cameraDevice)
        cameraPrivilege.merge(other.cameraPrivilege)
        microphoneDevice.merge(other.microphoneDevice)
        microphonePrivilege.merge(other.microphonePrivilege)
        hand.merge(other.hand)
        if kicked < other.kicked { kicked = other.kicked }
        if let otherBan = other.banned, banned.map({ otherBan < $0 }) ?? true { banned = otherBan }
        for session in other.sessions { upsertSession(session) }
        for (key, entry) in other.rewards { addReward(key, entry) }
        for (key, register) in other.properties {
            if properties[key] == nil { properties[key] = register } else { properties[key]!.merge(register) }
        }
    }

    /// The part of this record whose writes `seen` does not cover; nil when nothing is missing.
    func missing(from seen: VersionVector) -> UserRecord? {
        var patch = UserRecord()
        var any = false
        func take<V>(_ source: Register<V>, _ target: inout Register<V>) {
            if !seen.contains(source.stamp.dot) { target = source; any = true }
        }
        take(name, &patch.name)
        take(role, &patch.role)
        take(stage, &patch.stage)
        take(board, &patch.board)
        take(cameraDevice, &patch.cameraDevice)
        take(cameraPrivilege, &patch.cameraPrivilege)
        take(microphoneDevice, &patch.microphoneDevice)
        take(microphonePrivilege, &patch.microphonePrivilege)
        take(hand, &patch.hand)
        if !seen.contains(kicked.dot) { patch.kicked = kicked; any = true }
        if let ban = banned, !seen.contains(ban.dot) { patch.banned = ban; any = true }
        for session in sessions {
            let startMissing = !seen.contains(session.started.dot) && session.started != Stamp.maxedOut
            let endMissing = session.ended.map { !seen.contains($0.dot) } ?? false
            if startMissing || endMissing { patch.sessions.append(session); any = true }
        }
        for (key, entry) in rewards where !seen.contains(entry.stamp.dot) {
            patch.addReward(key, entry)
            any = true
        }
        for (key, register) in properties where !seen.contains(register.stamp.dot) {
            patch.properties[key] = register
            any = true
        }
        return any ? patch : nil
    }
}

extension Stamp {
    /// Placeholder start of a session whose end arrived first: loses every min-merge.
    static let maxedOut = Stamp(clock: HybridTimestamp(packed: .max, replica: ReplicaID(.max)), sequence: .max)
}
