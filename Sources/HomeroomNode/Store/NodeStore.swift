import HomeroomCore
import HomeroomWire

/// A node's durable state in SQLite (WAL mode): its identity, and per room a
/// snapshot plus the log of what was applied since. An acknowledged write is in
/// the log, committed, before its acknowledgement leaves the node.
///
/// `synchronous=NORMAL` in WAL mode survives a killed process (kill -9) with no
/// loss; `--sync full` also survives power loss, at an fsync per commit.
final class NodeStore {
    private let database: SQLiteDatabase
    private let insertLog: SQLiteDatabase.Statement
    private let maxLogID: SQLiteDatabase.Statement
    let path: String
    /// Decoding what this node wrote itself: generous, but still bounded.
    static let limits: WireLimits = {
        var limits = WireLimits.default
        limits.maxMessageBytes = 1 << 30
        limits.maxDecodedBytes = 1 << 32
        limits.maxUsersPerPatch = 10_000_000
        limits.maxMapEntries = 10_000_000
        limits.maxStringTable = 40_000_000
        return limits
    }()

    enum Kind: Int64 { case deltas = 1, patch = 2 }

    init(path: String, synchronousFull: Bool = false) throws(StoreError) {
        self.path = path
        database = try SQLiteDatabase(path: path)
        // Refuse a file that is not ours rather than resetting it.
        try database.execute("PRAGMA quick_check", "check the database file")
        try database.execute("PRAGMA journal_mode=WAL", "switch to WAL mode")
        try database.execute("PRAGMA synchronous=\(synchronousFull ? "FULL" : "NORMAL")", "set synchronous")
        try database.execute("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS rooms (room TEXT PRIMARY KEY, snapshot BLOB NOT NULL, last_log_id INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, room TEXT NOT NULL, kind INTEGER NOT NULL, bytes BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS log_room ON log (room, id);
            """, "create the schema")
        insertLog = try database.prepare("INSERT INTO log (room, kind, bytes) VALUES (?, ?, ?)")
        maxLogID = try database.prepare("SELECT COALESCE(MAX(id), 0) FROM log WHERE room = ?")
    }

    // MARK: - Identity

    func meta(_ key: String) throws(StoreError) -> Int64? {
        let statement = try database.prepare("SELECT value FROM meta WHERE key = ?")
        statement.bind(1, key)
        var value: Int64?
        try statement.query("read \(key)") { (row) throws(StoreError) in value = row.int64(0) }
        return value
    }

    func setMeta(_ key: String, _ value: Int64) throws(StoreError) {
        let statement = try database.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        statement.bind(1, key)
        statement.bind(2, value)
        try statement.run("write \(key)")
    }

    // MARK: - Writing

    func append(room: String, deltas: [Delta]) throws(StoreError) {
        guard let first = deltas.first else { return }
        insertLog.bind(1, room)
        insertLog.bind(2, Kind.deltas.rawValue)
        insertLog.bind(3, WireCodec.encodeBatch(origin: first.origin, deltas: deltas))
        try insertLog.run("append deltas to room \(room)")
    }

    func append(room: String, patch: RoomState) throws(StoreError) {
        insertLog.bind(1, room)
        insertLog.bind(2, Kind.patch.rawValue)
        insertLog.bind(3, WireCodec.encodePatch(patch))
        try insertLog.run("append a patch to room \(room)")
    }

    /// Replaces a room's log by a snapshot of `state`, which must contain every logged entry.
    func compact(room: String, state: RoomState) throws(StoreError) {
        maxLogID.bind(1, room)
        var last: Int64 = 0
        try maxLogID.query("read the log position") { (row) throws(StoreError) in last = row.int64(0) }
        try database.execute("BEGIN IMMEDIATE", "begin compaction")
        do {
            let save = try database.prepare("INSERT INTO rooms (room, snapshot, last_log_id) VALUES (?, ?, ?) ON CONFLICT(room) DO UPDATE SET snapshot = excluded.snapshot, last_log_id = excluded.last_log_id")
            save.bind(1, room)
            save.bind(2, WireCodec.encodePatch(state.snapshot()))
            save.bind(3, last)
            try save.run("save the snapshot of room \(room)")
            let trim = try database.prepare("DELETE FROM log WHERE room = ? AND id <= ?")
            trim.bind(1, room)
            trim.bind(2, last)
            try trim.run("trim the log of room \(room)")
            try database.execute("COMMIT", "commit compaction")
        } catch {
            try? database.execute("ROLLBACK", "roll back compaction")
            throw error
        }
    }

    // MARK: - Reading

    /// Every room: its snapshot, then its log replayed (merge is commutative, so order is safe).
    /// Rooms as stored, and the rooms that do not load (room -> why). One bad room
    /// never keeps the others from loading: the node serves them and keeps that one
    /// out of service (quarantined), its rows left as they are.
    func loadRooms() throws(StoreError) -> (rooms: [String: RoomState], quarantined: [String: String]) {
        var rooms: [String: RoomState] = [:]
        var quarantined: [String: String] = [:]
        var problem: StoreError?
        let snapshots = try database.prepare("SELECT room, snapshot FROM rooms")
        try snapshots.query("read snapshots") { (row) throws(StoreError) in
            let room = row.text(0)
            do {
                rooms[room] = try WireCodec.decodePatch(row.blob(1), limits: Self.limits)
            } catch {
                quarantined[room] = "its snapshot does not decode: \(error)"
            }
        }
        let log = try database.prepare("SELECT room, kind, bytes FROM log ORDER BY id")
        try log.query("read the log") { (row) throws(StoreError) in
            let room = row.text(0)
            if quarantined[room] != nil { return }
            var state = rooms.removeValue(forKey: room) ?? RoomState(roomID: room)
            defer { rooms[room] = state }
            do {
                switch Kind(rawValue: row.int64(1)) {
                case .deltas:
                    for delta in try WireCodec.decodeBatch(row.blob(2), limits: Self.limits).deltas { _ = state.apply(delta) }
                case .patch:
                    let patch = try WireCodec.decodePatch(row.blob(2), limits: Self.limits)
                    if patch.roomID == room { state.merge(patch) }
                case nil:
                    problem = StoreError(code: 11, message: "unknown log entry kind \(row.int64(1)): written by a newer Homeroom?", operation: "load", path: path)
                }
            } catch {
                quarantined[room] = "a log entry does not decode: \(error)"
            }
        }
        if let problem { throw problem }
        for room in quarantined.keys { rooms[room] = nil }
        return (rooms, quarantined)
    }

    func logLength() throws(StoreError) -> Int64 {
        let statement = try database.prepare("SELECT COUNT(*) FROM log")
        var count: Int64 = 0
        try statement.query("count the log") { (row) throws(StoreError) in count = row.int64(0) }
        return count
    }
}
