import HomeroomCore

/// Per closed room, the epoch of its topic keys (a node that requires tokens seals client
/// topics): raised when someone is kicked, banned or revoked (in the room or, for a
/// group's room, in its main room), when someone leaves a breakout group, so their keys
/// open nothing published afterwards, and when the earliest token given the current
/// keys expires.
public struct TopicKeyEpochs: Sendable, Equatable {
    /// Whether this node seals client topics: only then are epochs kept.
    public let seals: Bool
    public private(set) var epochs: [String: UInt64] = [:]
    /// Rooms whose keys rotated since the metric last counted them (`takeRotations`).
    public private(set) var rotations: UInt64 = 0
    /// Per room, the earliest expiry (Unix seconds) of the tokens given the current
    /// epoch's keys: once it passes, the keys rotate, so an expired token's keys open
    /// nothing published after its expiry (members' next sync brings the new keys; the
    /// expired token's sync is refused).
    public private(set) var expiries: [String: Int64] = [:]

    public init(seals: Bool) { self.seals = seals }

    public func epoch(of room: String) -> UInt64 { epochs[room] ?? 0 }

    public mutating func rotate(room: String) {
        guard seals else { return }
        epochs[room, default: 0] += 1
        rotations += 1
        expiries[room] = nil
    }

    /// A token expiring at `expiry` was given the room's current keys.
    public mutating func gave(room: String, expiringAt expiry: Int64) -> UInt64 {
        guard seals else { return 0 }
        expiries[room] = min(expiries[room] ?? .max, expiry)
        return epoch(of: room)
    }

    /// Rotates the keys of every room whose earliest holder's token expired by `nowSeconds`;
    /// how many rotated (counted here, not again by `takeRotations`).
    public mutating func rotateExpired(nowSeconds: Int64) -> Int {
        guard seals else { return 0 }
        let due = expiries.filter { $0.value <= nowSeconds }.map(\.key).sorted()
        for room in due { rotate(room: room) }
        rotations -= UInt64(due.count)
        return due.count
    }

    /// A kick or a ban among these deltas rotates the room's keys and those of its
    /// breakout groups' rooms (the removed user may have been given a group's keys);
    /// a change of who is in which group (a move, a group removed, the groups ended)
    /// rotates the groups' keys, so a student who left a group keeps nothing that opens
    /// what it says afterwards. Only rooms whose current keys were given out rotate.
    public mutating func noteRemovals(room: String, _ deltas: [Delta]) {
        for delta in deltas {
            switch delta.operation {
            case .kick, .ban:
                rotate(room: room)
                rotateGroups(of: room)
            case .assignBreakoutGroup, .endBreakout:
                rotateGroups(of: room)
            case let .setBreakoutGroup(id, nil):
                let groupRoom = Breakout.roomID(of: id, in: room)
                if expiries[groupRoom] != nil { rotate(room: groupRoom) }
            default:
                break
            }
        }
    }

    /// Rotates the keys of `mainRoom`'s group rooms that were given out at their current epoch.
    public mutating func rotateGroups(of mainRoom: String) {
        guard seals else { return }
        let given = expiries.keys.filter { Breakout.parse(roomID: $0)?.mainRoom == mainRoom }.sorted()
        for groupRoom in given { rotate(room: groupRoom) }
    }

    /// Rotations since the last call, for the metrics.
    public mutating func takeRotations() -> UInt64 {
        defer { rotations = 0 }
        return rotations
    }
}
