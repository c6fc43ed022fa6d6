/// The room-wide bound on property bytes (docs/ARCHITECTURE.md, "Lifetime"). Key counts
/// are bounded per user, so each student may store 1,000 values of 32 KiB: eight of them
/// would make the join reply too large to send. The origin refuses a property write that
/// would take the whole room past `maxPropertyBytesPerRoom`; the merge takes everything
/// (replicas must agree), so `propertyBytes` is a running total kept by every change of
/// a property register: `apply`, `merge`, and `rebuildIndexes` after a decode.
extension RoomState {
    /// Bytes of property keys, values and causes the room may hold, its own and every
    /// user's together (a deleted key keeps its key and cause in the room, so those
    /// count). A quarter of the join reply's limit (256 MiB, `WireLimits.largeReplies`
    /// in HomeroomNode), so writes admitted at several nodes at once still fit in it.
    public static let maxPropertyBytesPerRoom = 64 << 20

    /// What one property costs against `maxPropertyBytesPerRoom` (0: no such key).
    @inline(__always)
    public static func propertyBytes(key: String, _ register: Register<PropertyValue>?) -> Int {
        guard let register else { return 0 }
        return propertyBytes(key: key, value: register.value.bytes, cause: register.value.cause)
    }

    @inline(__always)
    static func propertyBytes(key: String, value: [UInt8]?, cause: String) -> Int {
        key.utf8.count + cause.utf8.count + (value?.count ?? 0)
    }

    /// `mergeProperty`, adding to `bytes` how the table's cost changed.
    @discardableResult
    static func mergeProperty(_ table: inout [String: Register<PropertyValue>], _ key: String, _ incoming: Register<PropertyValue>,
                              bytes: inout Int) -> Bool {
        let before = propertyBytes(key: key, table[key])
        guard mergeProperty(&table, key, incoming) else { return false }
        bytes += propertyBytes(key: key, incoming) - before
        return true
    }

    /// The cost of `keys` in `table` (keys it lacks cost nothing).
    static func propertyBytes<Keys: Sequence>(of keys: Keys, in table: [String: Register<PropertyValue>]) -> Int where Keys.Element == String {
        keys.reduce(0) { $0 + propertyBytes(key: $1, table[$1]) }
    }

    /// `propertyBytes` counted from scratch, a pass over every property of the room:
    /// what the running total must equal (tests and the simulation check it).
    public func recountPropertyBytes() -> Int {
        var total = Self.propertyBytes(of: properties.keys, in: properties)
        for record in users.values where record.hasActivity {
            let table = record.properties
            total += Self.propertyBytes(of: table.keys, in: table)
        }
        return total
    }

    /// Why a property write of `value` and `cause` to `key`, which holds `current` now,
    /// may not be made, if it may not: it would take the room past its bytes bound. A
    /// write that does not grow the room (a delete, a smaller value) is always taken, so
    /// a room at the bound can still be cleaned up.
    func propertyBytesRefusal(key: String, value: [UInt8]?, cause: String, current: Register<PropertyValue>?) -> WriteError? {
        let growth = Self.propertyBytes(key: key, value: value, cause: cause) - Self.propertyBytes(key: key, current)
        guard growth > 0, propertyBytes + growth > Self.maxPropertyBytesPerRoom else { return nil }
        return .limitReached("the room's properties (its own and every user's: keys, values and causes) hold \(propertyBytes) bytes; "
            + "this write would take them past \(Self.maxPropertyBytesPerRoom >> 20) MiB, the most a room keeps so that it stays joinable: "
            + "delete or shrink a property first (a smaller write is taken)")
    }
}
