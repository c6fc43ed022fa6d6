import HomeroomCore

/// A node's rooms by id, noting which ones changed, separately for each pass that looks
/// at rooms over and over (`Pass`): gossip announces only the rooms whose vector moved
/// (`OwnRoomDigest`), and the periodic passes look only at rooms that changed since
/// their last turn, so an idle room costs them nothing. Every mutation goes through a
/// subscript or `removeValue`, so none can be missed; a read marks nothing. Mutations
/// happen in place (`_modify`): a lecture hall is never copied to change one user.
public struct RoomTable: Sendable, Sequence {
    /// The passes that each take the rooms changed since their own last turn.
    public enum Pass: Int, CaseIterable, Sendable {
        /// What heartbeats announce (`OwnRoomDigest`).
        case gossip
        /// Live session copies whose original ended (`NodeEngine.orphanedCopies`).
        case orphanedCopies
        /// Marks declaring this node's incarnation down (`NodeEngine.refutation`).
        case refutation
        /// Rooms naming older stores of this node, or retiring this one (the node's retirement passes).
        case retirement
        /// Rooms holding message history to trim by age.
        case history
    }

    public private(set) var all: [String: RoomState]
    /// Per pass, the rooms written, replaced or removed since its last `takeChanged`. At
    /// most one entry per room id, so bounded by the rooms (`maxRooms`) and their removals.
    private var changedFor: [Set<String>]

    public init(_ rooms: [String: RoomState] = [:]) {
        all = rooms
        // Rooms a table starts with are news to every pass.
        changedFor = Array(repeating: Set(rooms.keys), count: Pass.allCases.count)
    }

    public subscript(id: String) -> RoomState? {
        get { all[id] }
        set {
            mark(id)
            all[id] = newValue
        }
        _modify {
            mark(id)
            yield &all[id]
        }
    }

    public subscript(id: String, default fallback: @autoclosure () -> RoomState) -> RoomState {
        get { all[id] ?? fallback() }
        _modify {
            mark(id)
            yield &all[id, default: fallback()]
        }
    }

    @discardableResult
    public mutating func removeValue(forKey id: String) -> RoomState? {
        mark(id)
        return all.removeValue(forKey: id)
    }

    /// The rooms changed since `pass` last asked, and a fresh start for it.
    public mutating func takeChanged(for pass: Pass) -> Set<String> {
        defer { changedFor[pass.rawValue] = [] }
        return changedFor[pass.rawValue]
    }

    private mutating func mark(_ id: String) {
        for index in changedFor.indices { changedFor[index].insert(id) }
    }

    public var keys: Dictionary<String, RoomState>.Keys { all.keys }
    public var values: Dictionary<String, RoomState>.Values { all.values }
    public var count: Int { all.count }
    public var isEmpty: Bool { all.isEmpty }
    public func mapValues<T>(_ transform: (RoomState) throws -> T) rethrows -> [String: T] { try all.mapValues(transform) }
    public func makeIterator() -> Dictionary<String, RoomState>.Iterator { all.makeIterator() }
}
