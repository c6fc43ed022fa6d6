/// A room's message history: a replicated, bounded set.
///
/// - Messages are keyed by (sender, sender counter); copies of one message (a retry
///   sequenced again, perhaps by another node) keep the largest stamp. (The largest,
///   not the smallest: a replica that holds a copy above the floor must keep the
///   message even when another copy fell below it, and only the largest tells.)
/// - `floor` is max-merged: every message stamped at or below it is gone and is
///   refused if it comes again. Age retention and trims move it forward.
/// - At most `limit` messages, and at most `maxBytes` of types and payloads, are
///   kept: the oldest by stamp leave first, and the floor rises to the stamp of the
///   newest one that left. (The byte budget keeps a join's snapshot bounded: 10,000
///   messages of 32 KiB would be 320 MB, and would make the room unjoinable.)
///
/// Keeping the top `limit` by stamp of a union is the same whatever the order of
/// the unions (so is keeping the newest run of messages that fits the byte budget:
/// a message that does not fit with the newer ones of a part does not fit with the
/// newer ones of the whole either), and raising the floor to what left keeps that true when the floor
/// itself travels, so replicas that hold the same messages and floors are equal.
public struct MessageLog: Sendable {
    public private(set) var entries: [MessageKey: Message] = [:]
    public private(set) var floor: Stamp = .origin
    /// Keys ordered by (stamp, key), oldest first. Derived; not part of equality.
    private var order: [Position] = []
    /// Bytes of the kept messages' types and payloads. Derived.
    public private(set) var totalBytes = 0

    struct Position: Comparable {
        var stamp: Stamp
        var key: MessageKey
        static func < (a: Position, b: Position) -> Bool { a.stamp != b.stamp ? a.stamp < b.stamp : a.key < b.key }
    }

    public static let defaultLimit: UInt32 = 1_000
    public static let maxLimit: UInt32 = 10_000
    /// Types and payloads a room keeps at most, whatever its count limit: 8 MiB
    /// (256 messages of the largest size; about 80,000 chat lines of 100 bytes).
    public static let maxBytes = 8 << 20

    static func bytes(_ message: Message) -> Int { message.payload.count + message.type.utf8.count }

    public init() {}

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    public subscript(key: MessageKey) -> Message? { entries[key] }

    /// Oldest first, by stamp (then key).
    public var byStamp: [Message] { order.map { entries[$0.key]! } }

    public var oldest: Message? { order.first.map { entries[$0.key]! } }
    public var newest: Message? { order.last.map { entries[$0.key]! } }

    /// Whether a copy stamped `stamp` would be kept (it is above the floor).
    @inline(__always)
    public func admits(_ stamp: Stamp) -> Bool { floor < stamp }

    // MARK: - Changes (each returns what it did, so the caller can report it)

    enum Insertion: Equatable {
        /// A new message (perhaps removed at once by the limit: see `removed`).
        case added
        /// A copy of a message already here.
        case copy
        /// At or below the floor: refused.
        case belowFloor
    }

    /// Adds a message (or a copy of one), then keeps the newest `limit`.
    mutating func insert(_ message: Message, limit: UInt32, removed: inout [MessageKey]) -> Insertion {
        guard admits(message.stamp) else { return .belowFloor }
        if let existing = entries[message.key] {
            if existing.stamp < message.stamp {
                // A later copy: the message moves forward in the order.
                // The later copy wins whole: a sender that reused a counter for another
                // message still leaves every replica with the same one.
                remove(Position(stamp: existing.stamp, key: message.key))
                totalBytes += Self.bytes(message) - Self.bytes(existing)
                entries[message.key] = message
                place(Position(stamp: message.stamp, key: message.key))
                prune(limit: limit, removed: &removed)
            }
            return .copy
        }
        entries[message.key] = message
        totalBytes += Self.bytes(message)
        place(Position(stamp: message.stamp, key: message.key))
        prune(limit: limit, removed: &removed)
        return .added
    }

    /// Moves the floor up to `stamp` (never down), removing what falls below.
    mutating func raiseFloor(to stamp: Stamp, removed: inout [MessageKey]) {
        guard floor < stamp else { return }
        floor = stamp
        var cut = 0
        while cut < order.count && !(floor < order[cut].stamp) {
            removed.append(order[cut].key)
            if let gone = entries.removeValue(forKey: order[cut].key) { totalBytes -= Self.bytes(gone) }
            cut += 1
        }
        if cut > 0 { order.removeFirst(cut) }
    }

    /// Keeps the newest `limit` messages, and the newest that fit in `maxBytes`; the
    /// floor rises to the newest one removed.
    mutating func prune(limit: UInt32, removed: inout [MessageKey]) {
        var excess = max(0, order.count - Int(limit))
        if totalBytes > Self.maxBytes {
            var bytes = totalBytes
            for index in 0..<excess { bytes -= Self.bytes(entries[order[index].key]!) }
            while bytes > Self.maxBytes && excess < order.count {
                bytes -= Self.bytes(entries[order[excess].key]!)
                excess += 1
            }
        }
        guard excess > 0 else { return }
        raiseFloor(to: order[excess - 1].stamp, removed: &removed)
    }

    /// The lattice join with another log (a patch), then the limit.
    mutating func merge(_ other: MessageLog, limit: UInt32, added: inout [MessageKey], removed: inout [MessageKey]) {
        let before = entries
        var touched: [MessageKey] = []
        raiseFloor(to: other.floor, removed: &touched)
        for message in other.entries.values {
            if insert(message, limit: UInt32.max, removed: &touched) == .added { touched.append(message.key) }
        }
        prune(limit: limit, removed: &touched)
        // Report by comparing before and after: a key may come and go within one merge.
        var reported = Set<MessageKey>()
        for key in touched where reported.insert(key).inserted {
            switch (before[key] != nil, entries[key] != nil) {
            case (false, true): added.append(key)
            case (true, false): removed.append(key)
            default: break
            }
        }
    }

    /// The part another replica lacks: messages whose stamp's dot `seen` lacks, and
    /// always the floor (one stamp).
    func missing(from seen: VersionVector) -> MessageLog {
        var patch = MessageLog()
        patch.floor = floor
        for position in order where !seen.contains(position.stamp.dot) {
            patch.entries[position.key] = entries[position.key]
            patch.totalBytes += Self.bytes(entries[position.key]!)
            patch.order.append(position)
        }
        return patch
    }

    /// Only the messages `user` may see (nil: room messages only).
    func visible(to user: UserID?) -> MessageLog {
        guard entries.values.contains(where: { !$0.isVisible(to: user) }) else { return self }
        var view = MessageLog()
        view.floor = floor
        for position in order where entries[position.key]!.isVisible(to: user) {
            view.entries[position.key] = entries[position.key]
            view.totalBytes += Self.bytes(entries[position.key]!)
            view.order.append(position)
        }
        return view
    }

    /// Builds a log from decoded parts (a patch from the wire): no limit applied.
    public init(messages: [Message], floor: Stamp) {
        self.floor = floor
        for message in messages where floor < message.stamp {
            if let existing = entries[message.key], message.stamp <= existing.stamp { continue }
            entries[message.key] = message
        }
        order = entries.values.map { Position(stamp: $0.stamp, key: $0.key) }.sorted()
        totalBytes = entries.values.reduce(0) { $0 + Self.bytes($1) }
    }

    // MARK: - The order

    private mutating func place(_ position: Position) {
        if let last = order.last, last < position {
            order.append(position)
            return
        }
        var low = 0, high = order.count
        while low < high {
            let mid = (low + high) / 2
            if order[mid] < position { low = mid + 1 } else { high = mid }
        }
        order.insert(position, at: low)
    }

    private mutating func remove(_ position: Position) {
        var low = 0, high = order.count
        while low < high {
            let mid = (low + high) / 2
            if order[mid] < position { low = mid + 1 } else { high = mid }
        }
        if low < order.count && order[low] == position { order.remove(at: low) }
    }
}

extension MessageLog: Equatable {
    public static func == (a: MessageLog, b: MessageLog) -> Bool { a.floor == b.floor && a.entries == b.entries }
}
