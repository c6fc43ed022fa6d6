import HomeroomCore

/// A node's rooms by id, noting which ones changed: gossip announces only the rooms
/// whose version vector moved (`OwnRoomDigest`), so it must learn every change without
/// looking at every room. Every mutation goes through a subscript or `removeValue`, so
/// none can be missed; a read marks nothing. Mutations happen in place (`_modify`): a
/// lecture hall is never copied to change one user.
public struct RoomTable: Sendable, Sequence {
    public private(set) var all: [String: RoomState]
    /// Rooms written, replaced or removed since the last `takeChanged()`. At most one
    /// entry per room id ever held, so bounded by the rooms (`maxRooms`) and their removals.
    public private(set) var changed: Set<String> = []

    public init(_ rooms: [String: RoomState] = [:]) {
        all = rooms
        changed = Set(rooms.keys)
    }

    public subscript(id: String) -> RoomState? {
        get { all[id] }
        set {
            changed.insert(id)
            all[id] = newValue
        }
        _modify {
            changed.insert(id)
            yield &all[id]
        }
    }

    public subscript(id: String, default fallback: @autoclosure () -> RoomState) -> RoomState {
        get { all[id] ?? fallback() }
        _modify {
            changed.insert(id)
            yield &all[id, default: fallback()]
        }
    }

    @discardableResult
    public mutating func removeValue(forKey id: String) -> RoomState? {
        changed.insert(id)
        return all.removeValue(forKey: id)
    }

    /// The rooms changed since the last call, and a fresh start.
    public mutating func takeChanged() -> Set<String> {
        defer { changed = [] }
        return changed
    }

    public var keys: Dictionary<String, RoomState>.Keys { all.keys }
    public var values: Dictionary<String, RoomState>.Values { all.values }
    public var count: Int { all.count }
    public var isEmpty: Bool { all.isEmpty }
    public func mapValues<T>(_ transform: (RoomState) throws -> T) rethrows -> [String: T] { try all.mapValues(transform) }
    public func makeIterator() -> Dictionary<String, RoomState>.Iterator { all.makeIterator() }
}
