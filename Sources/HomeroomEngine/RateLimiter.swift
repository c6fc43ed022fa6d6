/// Token buckets per key (a user): messages and bytes per second, with a burst.
/// Pure apart from the time passed in (`AdmissionLimits` holds the node's).
public struct RateLimiter: Sendable {
    struct Bucket: Sendable {
        var messages: Double
        var bytes: Double
        var lastMillis: UInt64
    }

    let messagesPerSecond: Double
    let bytesPerSecond: Double
    let burstSeconds: Double
    private var buckets: [String: Bucket] = [:]

    public init(messagesPerSecond: Int, bytesPerSecond: Int, burstSeconds: Double = 2) {
        self.messagesPerSecond = Double(messagesPerSecond)
        self.bytesPerSecond = Double(bytesPerSecond)
        self.burstSeconds = burstSeconds
    }

    /// Takes one message of `size` bytes from `key`'s bucket; false when over the limit.
    public mutating func allow(_ key: String, size: Int, nowMillis: UInt64) -> Bool {
        let capacityMessages = messagesPerSecond * burstSeconds
        let capacityBytes = bytesPerSecond * burstSeconds
        var bucket = buckets[key] ?? Bucket(messages: capacityMessages, bytes: capacityBytes, lastMillis: nowMillis)
        let elapsed = Double(nowMillis &- bucket.lastMillis) / 1000
        bucket.messages = min(capacityMessages, bucket.messages + elapsed * messagesPerSecond)
        bucket.bytes = min(capacityBytes, bucket.bytes + elapsed * bytesPerSecond)
        bucket.lastMillis = nowMillis
        defer { buckets[key] = bucket }
        guard bucket.messages >= 1, bucket.bytes >= Double(size) else { return false }
        bucket.messages -= 1
        bucket.bytes -= Double(size)
        return true
    }

    /// Takes `bytes` from `key`'s byte budget after the fact (a reply whose size was
    /// known only once built); the budget may go below zero, and then `allow` refuses
    /// until it has refilled.
    public mutating func charge(_ key: String, bytes: Int, nowMillis: UInt64) {
        let capacityMessages = messagesPerSecond * burstSeconds
        let capacityBytes = bytesPerSecond * burstSeconds
        var bucket = buckets[key] ?? Bucket(messages: capacityMessages, bytes: capacityBytes, lastMillis: nowMillis)
        let elapsed = Double(nowMillis &- bucket.lastMillis) / 1000
        bucket.messages = min(capacityMessages, bucket.messages + elapsed * messagesPerSecond)
        bucket.bytes = min(capacityBytes, bucket.bytes + elapsed * bytesPerSecond) - Double(bytes)
        bucket.lastMillis = nowMillis
        buckets[key] = bucket
    }

    /// Keys with a bucket now (tests, diagnostics).
    public var count: Int { buckets.count }

    /// Forgets buckets that have refilled, so the table does not grow with every user ever seen.
    public mutating func prune(nowMillis: UInt64) {
        let full = burstSeconds * 1000
        buckets = buckets.filter { Double(nowMillis &- $0.value.lastMillis) < full }
    }
}

/// How fast clients may ask (`EnginePolicy.rates`, from the node's flags).
public struct AdmissionRates: Sendable, Hashable {
    public var writesPerSecond = 60
    public var writeBytesPerSecond = 256 * 1024
    public var joinsPerSecond = 20
    public var hellosPerSecond = 20
    public var syncsPerSecond = 20
    public var syncBytesPerSecond = 8 << 20
    /// Rooms a node opens per second (a join of a room it does not hold), with a 10 s
    /// burst; each user opens at most `roomCreationsPerUserPerSecond` of them, same burst.
    public var roomCreationsPerSecond = 10
    public var roomCreationsPerUserPerSecond = 1

    public init() {}
}

/// The node's rate limits, one bucket table per kind of request.
public struct AdmissionLimits: Sendable {
    /// Client writes per author: messages and bytes.
    public var writes: RateLimiter
    /// Joins (new sessions) per user and room: each costs a snapshot, and a session record.
    public var joins: RateLimiter
    /// Client hellos per REP connection (they need no token, so no user to count).
    public var hellos: RateLimiter
    /// Syncs and digests per user and room, and the bytes their replies carry.
    public var syncs: RateLimiter
    /// Rooms opened here: one bucket for the node ("node"), and one per user.
    public var roomCreations: RateLimiter
    public var roomCreationsByUser: RateLimiter
    static let roomCreationBurstSeconds: Double = 10

    public init(_ rates: AdmissionRates) {
        writes = RateLimiter(messagesPerSecond: rates.writesPerSecond, bytesPerSecond: rates.writeBytesPerSecond)
        joins = RateLimiter(messagesPerSecond: rates.joinsPerSecond, bytesPerSecond: 1 << 30, burstSeconds: 3)
        hellos = RateLimiter(messagesPerSecond: rates.hellosPerSecond, bytesPerSecond: 1 << 30, burstSeconds: 3)
        syncs = RateLimiter(messagesPerSecond: rates.syncsPerSecond, bytesPerSecond: rates.syncBytesPerSecond, burstSeconds: 3)
        roomCreations = RateLimiter(messagesPerSecond: rates.roomCreationsPerSecond, bytesPerSecond: 1 << 30, burstSeconds: Self.roomCreationBurstSeconds)
        roomCreationsByUser = RateLimiter(messagesPerSecond: rates.roomCreationsPerUserPerSecond, bytesPerSecond: 1 << 30,
                                          burstSeconds: Self.roomCreationBurstSeconds)
    }

    /// Whether `user` may open one more room here now (a join of a room this node does
    /// not hold); why not, when not. Takes from both buckets only when both allow.
    public mutating func allowRoomCreation(by user: String, nowMillis: UInt64) -> String? {
        if !roomCreationsByUser.allow(user, size: 0, nowMillis: nowMillis) {
            return "\(user) opens rooms faster than this node allows for one user (a burst of \(Int(Self.roomCreationBurstSeconds * roomCreationsByUser.messagesPerSecond)), then \(Int(roomCreationsByUser.messagesPerSecond)) a second): join rooms that exist, or wait"
        }
        if !roomCreations.allow("node", size: 0, nowMillis: nowMillis) {
            return "this node opens no more than \(Int(roomCreations.messagesPerSecond)) rooms a second (\(Int(Self.roomCreationBurstSeconds * roomCreations.messagesPerSecond)) at once): retry in a few seconds"
        }
        return nil
    }

    /// Forgets the buckets that have refilled: the tables would otherwise hold every user
    /// (and room) that ever wrote or joined here.
    public mutating func prune(nowMillis: UInt64) {
        writes.prune(nowMillis: nowMillis)
        joins.prune(nowMillis: nowMillis)
        hellos.prune(nowMillis: nowMillis)
        syncs.prune(nowMillis: nowMillis)
        roomCreations.prune(nowMillis: nowMillis)
        roomCreationsByUser.prune(nowMillis: nowMillis)
    }
}
