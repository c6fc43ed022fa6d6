/// Lifetime bounds (docs/ARCHITECTURE.md, "Lifetime"): what keeps a room that lives a
/// whole semester as small as the class it holds, with no coordination between nodes.
extension RoomState {
    /// Live sessions one user may hold in a room; a join beyond it is refused
    /// `too-many-sessions` at the origin (each node counts what it knows, so a split
    /// cluster may admit this many per side).
    public static let maxOpenSessionsPerUser = 32
    /// An origin folds a user's sessions once this many of those it started are over,
    public static let sessionFoldThreshold = 8
    /// ... or once every one of them has been over for this long (the room at rest
    /// holds no ended session at all).
    public static let sessionFoldQuietMillis: UInt64 = 5_000

    // Bounds kept at the origin, each at most half the matching decoder limit
    // (`WireLimits`), so writes admitted concurrently at several nodes still decode.
    /// Reward records per user not folded yet (the decoder allows 200,000 map entries).
    public static let maxRewardsPerUser = 100_000
    /// How far from a node's clock a reward's `issuedAtMillis` may be (`--reward-window-ms`).
    public static let defaultRewardWindowMillis: UInt64 = 60_000
    /// An origin folds a user's rewards once this many of those it sequenced are foldable,
    public static let rewardFoldThreshold = 8
    /// ... or once every one of them is foldable and the newest was issued this long ago.
    public static let rewardFoldQuietMillis: UInt64 = 5_000
    /// Room property keys, deleted ones included.
    public static let maxRoomPropertyKeys = 10_000
    /// Property keys of one user, deleted ones included.
    public static let maxUserPropertyKeys = 1_000
    /// Presence keys one user has written, removed ones included.
    public static let maxPresenceEntriesPerUser = 1_024

    /// The `foldSessions` write `origin` should make for `user` now, or nil while fewer
    /// than `threshold` of the sessions it started for the user are over and the
    /// last of them ended less than `quietMillis` before `nowMillis` (wall clock).
    ///
    /// A session is over when it ended, when its group ended (a refutation's or a
    /// reclaim's copies share the client's session id before `SessionIDs.copyMark`),
    /// when a later copy of it exists and its own node incarnation is dead, when it
    /// started before the user's last kick, or when the user is banned. Only sessions
    /// whose start `origin` sequenced at or below what this replica has seen without a
    /// gap are folded, so the floor never covers a session this replica cannot see.
    public func sessionFold(for user: UserID, origin: ReplicaID, nowMillis: UInt64, threshold: Int = RoomState.sessionFoldThreshold,
                            quietMillis: UInt64 = RoomState.sessionFoldQuietMillis) -> Operation? {
        if case let .due(fold) = sessionFoldPlan(for: user, origin: origin, nowMillis: nowMillis, threshold: threshold, quietMillis: quietMillis) {
            return fold
        }
        return nil
    }

    /// What `sessionFold` decides, in one pass: fold now, later (sessions are over but
    /// the fold is not due yet), or never (nothing is over).
    public enum SessionFoldPlan: Equatable, Sendable {
        case nothingOver
        case notYet
        case due(Operation)
    }

    /// `deadBelowIncarnation`: sessions `origin` hosted on a dead incarnation below this one
    /// are over too. The origin passes its current incarnation once a client of an earlier
    /// one has had time to reclaim its session (`NodeEngine.dueSessionFolds`); a client
    /// gone with its node never ends its session, and without this it would stay for ever.
    public func sessionFoldPlan(for user: UserID, origin: ReplicaID, nowMillis: UInt64, threshold: Int = RoomState.sessionFoldThreshold,
                                quietMillis: UInt64 = RoomState.sessionFoldQuietMillis,
                                deadBelowIncarnation: UInt64 = 0) -> SessionFoldPlan {
        guard let record = users[user], !record.sessions.isEmpty else { return .nothingOver }
        let upTo = seen.contiguous(origin)
        guard upTo > 0 else { return .nothingOver }
        var endedGroups = Set<SessionID>()
        var latestInGroup: [SessionID: Stamp] = [:]
        for session in record.sessions where session.started != Stamp.maxedOut {
            let group = SessionIDs.base(session.id)
            if session.ended != nil { endedGroups.insert(group) }
            if latestInGroup[group].map({ $0 < session.started }) ?? true { latestInGroup[group] = session.started }
        }
        var over = 0
        var lastEndMillis: UInt64 = 0
        var keep: [UInt64] = []
        for session in record.sessions
        where session.started != Stamp.maxedOut && session.started.clock.replica == origin && session.started.sequence <= upTo {
            let group = SessionIDs.base(session.id)
            let onDeadIncarnation = deadIncarnations[session.host].map { session.incarnation <= $0 } ?? false
            let superseded = onDeadIncarnation && latestInGroup[group].map { session.started < $0 } == true
            let orphaned = onDeadIncarnation && session.host == origin && session.incarnation < deadBelowIncarnation
            if session.ended != nil || endedGroups.contains(group) || superseded || orphaned || record.isBanned || !(record.kicked < session.started) {
                over += 1
                if let ended = session.ended { lastEndMillis = max(lastEndMillis, ended.clock.millis) }
            } else {
                keep.append(session.started.sequence)
            }
        }
        guard over > 0, keep.count <= SessionFloor.maxKept else { return .nothingOver }
        let quiet = nowMillis >= lastEndMillis &+ quietMillis
        guard over >= max(threshold, 1) || quiet else { return .notYet }
        return .due(.foldSessions(user: user, upTo: upTo, keep: keep.sorted()))
    }

    /// Whether `user` has sessions `origin` started that are over but not folded yet
    /// (a fold that is not due now may be due later).
    public func hasSessionsToFold(for user: UserID, origin: ReplicaID, deadBelowIncarnation: UInt64 = 0) -> Bool {
        sessionFoldPlan(for: user, origin: origin, nowMillis: 0, quietMillis: .max, deadBelowIncarnation: deadBelowIncarnation) != .nothingOver
    }
}

extension RoomState {
    /// What `rewardFoldPlan` decides: fold now, later (rewards wait to be complete or
    /// for the threshold), or nothing to fold.
    public enum RewardFoldPlan: Equatable, Sendable {
        case nothing
        case notYet
        case due(Operation)
    }

    /// The `foldRewards` write `origin` should make for `user` now.
    ///
    /// `completeBeforeMillis` is the caller's promise that this replica holds every copy
    /// of every reward issued before it, and that no node will make another: every node
    /// it knows has sent a heartbeat more than the reward window after that time, and
    /// this replica has seen that node's writes up to that heartbeat (a node admits a
    /// reward only within the window of its issue time). The fold covers the longest
    /// prefix of `origin`'s sequences whose rewards (those whose earliest copy `origin`
    /// sequenced) were all issued before it, so the sum is exact on every replica.
    public func rewardFoldPlan(for user: UserID, origin: ReplicaID, completeBeforeMillis: UInt64, nowMillis: UInt64,
                               threshold: Int = RoomState.rewardFoldThreshold,
                               quietMillis: UInt64 = RoomState.rewardFoldQuietMillis) -> RewardFoldPlan {
        guard let record = users[user], !record.rewards.isEmpty else { return .nothing }
        let contiguous = seen.contiguous(origin)
        let floor = record.rewardFloors[origin]
        let previousUpTo = floor?.upTo ?? 0
        // Rewards whose earliest copy this origin sequenced: its fold counts them once
        // complete (issued before `completeBeforeMillis`) and ready (a copy retried
        // through another node is covered by that node's fold first, so a replica that
        // holds only that copy never counts the reward twice).
        var candidates: [(sequence: UInt64, amount: Int32, issued: UInt64, foldable: Bool)] = []
        // Copies this origin made that lost to an earlier copy elsewhere: its fold only
        // covers them (a replica holding just that copy drops it; the earlier copy's
        // origin counts the reward).
        var lost: [UInt64] = []
        for entry in record.rewards.values {
            if entry.stamp.clock.replica == origin {
                guard entry.stamp.sequence <= contiguous else { continue }
                let ready = entry.copies.allSatisfy { record.rewardFloors[$0.clock.replica]?.covers(sequence: $0.sequence) == true }
                candidates.append((entry.stamp.sequence, entry.amount, entry.issuedAtMillis, ready && entry.issuedAtMillis < completeBeforeMillis))
            } else if let copy = entry.copies.first(where: { $0.clock.replica == origin }), copy.sequence <= contiguous,
                      floor?.covers(sequence: copy.sequence) != true {
                lost.append(copy.sequence)
            }
        }
        guard !candidates.isEmpty || !lost.isEmpty else { return .nothing }
        // The prefix ends before the first reward not complete yet (one that is complete
        // but waits for another node's fold is kept instead), at what this origin sequenced.
        let firstIncomplete = candidates.lazy.filter { $0.sequence > previousUpTo && $0.issued >= completeBeforeMillis }.map(\.sequence).min()
        var upTo = max(previousUpTo, firstIncomplete.map { min($0 - 1, contiguous) } ?? contiguous)
        var kept = candidates.filter { $0.sequence <= upTo && !$0.foldable }.map(\.sequence).sorted()
        if kept.count > RewardFloor.maxKept {
            upTo = max(previousUpTo, kept[RewardFloor.maxKept] - 1)
            kept = kept.filter { $0 <= upTo }
            guard kept.count <= RewardFloor.maxKept else { return .notYet }
        }
        let foldable = candidates.filter { $0.foldable && $0.sequence <= upTo }
        let lostCovered = lost.filter { $0 <= upTo }.count
        guard !foldable.isEmpty || lostCovered > 0 else { return .notYet }
        let newest = foldable.map(\.issued).max() ?? 0
        let quiet = foldable.count + kept.count == candidates.count && lostCovered == lost.count && nowMillis >= newest &+ quietMillis
        guard foldable.count + lostCovered >= max(threshold, 1) || quiet else { return .notYet }
        let sum = foldable.reduce(floor?.sum ?? 0) { $0 + Int64($1.amount) }
        return .due(.foldRewards(user: user, upTo: upTo, sum: sum, keep: kept))
    }
}

/// Session ids as nodes derive them: a copy that a refutation or a reclaim makes of a
/// client's session is the client's id, `copyMark`, then the new incarnation.
public enum SessionIDs {
    public static let copyMark = "~r"

    /// The id of a copy of `id`'s client session under `incarnation` (refutation, reclaim).
    public static func copy(of id: SessionID, incarnation: UInt64) -> SessionID {
        base(id) + copyMark + String(incarnation)
    }

    /// The client's own session id (the id itself when it is not a copy).
    public static func base(_ id: SessionID) -> SessionID {
        guard let start = copyMarkStart(in: id) else { return id }
        return String(decoding: id.utf8[..<start], as: UTF8.self)
    }

    /// Where the copy mark starts in a session id, if it has one.
    public static func copyMarkStart(in id: SessionID) -> String.Index? {
        let utf8 = id.utf8
        let mark = copyMark.utf8
        guard utf8.count >= mark.count else { return nil }
        var index = utf8.startIndex
        while index != utf8.endIndex {
            if utf8[index...].starts(with: mark) { return index }
            index = utf8.index(after: index)
        }
        return nil
    }
}

extension RoomState {
    /// Whether anyone is in the room: a live session of any user.
    public var hasLiveSession: Bool {
        users.values.contains { record in record.sessions.contains { record.isLive($0, deadIncarnations: deadIncarnations) } }
    }

    /// The wall-clock time (ms) of the newest stamp the room holds: when it was last
    /// written, as every replica of it agrees (0 for a room with no write).
    public var newestStampMillis: UInt64 {
        var newest: UInt64 = 0
        forEachStamp { newest = max(newest, $0.clock.millis) }
        return newest
    }
}
