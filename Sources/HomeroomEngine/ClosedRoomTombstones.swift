import HomeroomCore

/// Rooms this node removed after their class closed (docs/ARCHITECTURE.md, "Closed
/// classes"): only the id and when it went, so the id is never opened again and a late
/// peer message (a delta, a patch, a pull) does not bring the room back.
///
/// Bounded two ways, so a node that closes rooms for years keeps a fixed cost: at most
/// `maxCount` tombstones (the oldest go first), each kept at most `maxAgeMillis`. A room
/// whose tombstone went is forgotten: its id may be opened again, as a new room.
public struct ClosedRoomTombstones: Sendable, Equatable {
    /// The default bound on tombstones a node keeps (a few hundred KiB of ids).
    public static let defaultMaxCount = 10_000
    /// The default age past which a tombstone goes: 30 days (any copy of the room a peer
    /// still held has been removed there long before).
    public static let defaultMaxAgeMillis: UInt64 = 30 * 86_400 * 1_000

    public let maxCount: Int
    public let maxAgeMillis: UInt64
    /// Room id -> when it was removed (Unix ms).
    public private(set) var removedAt: [String: UInt64] = [:]

    public init(maxCount: Int = defaultMaxCount, maxAgeMillis: UInt64 = defaultMaxAgeMillis) {
        self.maxCount = max(1, maxCount)
        self.maxAgeMillis = maxAgeMillis
    }

    public var count: Int { removedAt.count }

    public func contains(_ room: String) -> Bool { removedAt[room] != nil }

    /// Whether `room` was removed. Only the id itself: a room merely named like a group
    /// of a removed class (`<class>:<id>`, no such group made) is an ordinary room, and a
    /// real group's room has a tombstone of its own (`NodeEngine.closedRoomsToRemove`).
    public func covers(_ room: String) -> Bool {
        contains(room)
    }

    /// Records a removal; returns the rooms whose tombstones went to stay within `maxCount`
    /// (oldest first, ties by id, so every run drops the same ones).
    @discardableResult
    public mutating func bury(_ room: String, atMillis: UInt64) -> [String] {
        removedAt[room] = max(removedAt[room] ?? 0, atMillis)
        guard removedAt.count > maxCount else { return [] }
        let excess = removedAt.count - maxCount
        let dropped = removedAt.sorted { ($0.value, $0.key) < ($1.value, $1.key) }.prefix(excess).map(\.key)
        for room in dropped { removedAt[room] = nil }
        return dropped
    }

    /// Drops tombstones older than `maxAgeMillis` at `nowMillis`; returns them.
    @discardableResult
    public mutating func expire(nowMillis: UInt64) -> [String] {
        let dropped = removedAt.filter { $0.value &+ maxAgeMillis <= nowMillis }.keys.sorted()
        for room in dropped { removedAt[room] = nil }
        return dropped
    }
}
