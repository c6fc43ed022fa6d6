import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Synchronization

/// A node's durable state in SQLite (WAL mode): its identity, and per room a
/// snapshot plus the log of what was applied since. An acknowledged write is in
/// the log, committed, before its acknowledgement leaves the node.
///
/// `synchronous=NORMAL` in WAL mode survives a killed process (kill -9) with no
/// loss; `--sync full` also survives power loss, at an fsync per commit.
///
/// Safe across threads: one connection behind the store's own lock. Appends that arrive
/// while another commits are committed together (`GroupCommit`). The node appends
/// outside its state lock, holding the room's write gate (`RoomWriteGates`) from the
/// append to the apply (a client write is stored, then applied; a remote delta or patch
/// is applied, then stored). Snapshots are encoded and stored outside the state lock: a
/// snapshot names the log position it covers (`logMark`, read under the room's gate) and
/// the compaction trims only up to that.
final class NodeStore: Sendable {
    private let connection: Mutex<Connection>
    private let appends = GroupCommit<Append>()
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

    /// One log entry waiting for its commit.
    struct Append: Sendable {
        var room: String
        var kind: Kind
        var bytes: [UInt8]
        var operation: String
    }

    /// Commits so far, and log entries they held (group commit: entries per commit).
    var commitCounts: (commits: UInt64, entries: UInt64) {
        (appends.batches.load(ordering: .relaxed), appends.entries.load(ordering: .relaxed))
    }

    /// The connection and what only the lock holder touches.
    private final class Connection {
        let database: SQLiteDatabase
        let insertLog: SQLiteDatabase.Statement
        let saveSnapshot: SQLiteDatabase.Statement
        let trimLog: SQLiteDatabase.Statement
        /// Per room, the id of its last log entry, or of the last entry its snapshot covers
        /// (from the load, then every append): a compaction's upper bound.
        var lastLogID: [String: Int64] = [:]
        /// Set when a roll-back failed: every later append fails with it.
        var broken: StoreError?

        init(database: SQLiteDatabase) throws(StoreError) {
            self.database = database
            insertLog = try database.prepare("INSERT INTO log (room, kind, bytes) VALUES (?, ?, ?)")
            // A snapshot never replaces one that covers more of the log.
            saveSnapshot = try database.prepare("""
                INSERT INTO rooms (room, snapshot, last_log_id) VALUES (?, ?, ?)
                ON CONFLICT(room) DO UPDATE SET snapshot = excluded.snapshot, last_log_id = excluded.last_log_id
                WHERE excluded.last_log_id >= rooms.last_log_id
                """)
            trimLog = try database.prepare("DELETE FROM log WHERE room = ? AND id <= ?")
        }

        func insert(room: String, kind: Kind, bytes: [UInt8], _ operation: String) throws(StoreError) {
            insertLog.bind(1, room)
            insertLog.bind(2, kind.rawValue)
            insertLog.bind(3, bytes)
            try insertLog.run(operation)
            lastLogID[room] = database.lastInsertRowID
        }
    }

    init(path: String, synchronousFull: Bool = false) throws(StoreError) {
        self.path = path
        let database = try SQLiteDatabase(path: path)
        // Refuse a file that is not ours rather than resetting it.
        try database.execute("PRAGMA quick_check", "check the database file")
        try database.execute("PRAGMA journal_mode=WAL", "switch to WAL mode")
        try database.execute("PRAGMA synchronous=\(synchronousFull ? "FULL" : "NORMAL")", "set synchronous")
        try database.execute("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS rooms (room TEXT PRIMARY KEY, snapshot BLOB NOT NULL, last_log_id INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS log (id INTEGER PRIMARY KEY AUTOINCREMENT, room TEXT NOT NULL, kind INTEGER NOT NULL, bytes BLOB NOT NULL);
            CREATE INDEX IF NOT EXISTS log_room ON log (room, id);
            CREATE TABLE IF NOT EXISTS handed_off (room TEXT PRIMARY KEY, sequence INTEGER NOT NULL, private_sequence INTEGER NOT NULL, clock INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS closed_rooms (room TEXT PRIMARY KEY, removed_at INTEGER NOT NULL);
            """, "create the schema")
        // A handed_off table from before it kept the clock (never released, but cheap to mend).
        var hasClock = false
        let columns = try database.prepare("PRAGMA table_info(handed_off)")
        try columns.query("read the handed_off columns") { (row) throws(StoreError) in if row.text(1) == "clock" { hasClock = true } }
        if !hasClock { try database.execute("ALTER TABLE handed_off ADD COLUMN clock INTEGER NOT NULL DEFAULT 0", "add the clock to handed_off") }
        connection = Mutex(try Connection(database: database))
    }

    // MARK: - Identity

    func meta(_ key: String) throws(StoreError) -> Int64? {
        try connection.withLock { (connection) throws(StoreError) -> Int64? in
            let statement = try connection.database.prepare("SELECT value FROM meta WHERE key = ?")
            statement.bind(1, key)
            var value: Int64?
            try statement.query("read \(key)") { (row) throws(StoreError) in value = row.int64(0) }
            return value
        }
    }

    func setMeta(_ key: String, _ value: Int64) throws(StoreError) {
        try connection.withLock { (connection) throws(StoreError) in
            let statement = try connection.database.prepare("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            statement.bind(1, key)
            statement.bind(2, value)
            try statement.run("write \(key)")
        }
    }

    // MARK: - Writing

    func append(room: String, deltas: [Delta]) throws(StoreError) {
        guard let first = deltas.first else { return }
        let bytes = WireCodec.encodeBatch(origin: first.origin, deltas: deltas)
        try appends.submit(Append(room: room, kind: .deltas, bytes: bytes, operation: "append deltas to room \(room)"), commit: commit)
    }

    /// A patch encoded with `WireCodec.encodePatch` (by the caller, outside its locks).
    func append(room: String, encodedPatch bytes: [UInt8]) throws(StoreError) {
        try appends.submit(Append(room: room, kind: .patch, bytes: bytes, operation: "append a patch to room \(room)"), commit: commit)
    }

    /// Stores a batch of log entries in one transaction (alone, one is its own). A batch
    /// that fails as a whole is rolled back and tried entry by entry, so one bad entry (too
    /// large, say) fails only its own writer. A roll-back that fails leaves the connection
    /// in an unknown transaction: the store is then broken, and every later append fails
    /// (nothing more is acknowledged; a restart recovers from the WAL).
    private func commit(_ batch: [Append]) -> [Result<Void, StoreError>] {
        connection.withLock { connection -> [Result<Void, StoreError>] in
            if let broken = connection.broken { return batch.map { _ in .failure(broken) } }
            if batch.count == 1, let only = batch.first { return [Self.insertAlone(only, into: connection)] }
            let database = connection.database
            var before: [(room: String, id: Int64?)] = []
            do throws(StoreError) {
                try database.execute("BEGIN IMMEDIATE", "begin a group of appends")
            } catch {
                return batch.map { _ in .failure(error) }
            }
            do throws(StoreError) {
                for entry in batch {
                    before.append((entry.room, connection.lastLogID[entry.room]))
                    try connection.insert(room: entry.room, kind: entry.kind, bytes: entry.bytes, entry.operation)
                }
                try database.execute("COMMIT", "commit a group of appends")
                return batch.map { _ in .success(()) }
            } catch {
                // Nothing of the batch is stored: the log positions go back too.
                for (room, id) in before.reversed() { connection.lastLogID[room] = id }
                do throws(StoreError) {
                    try database.execute("ROLLBACK", "roll back a group of appends")
                } catch let rollback {
                    if !database.isAutocommit {
                        connection.broken = StoreError(code: rollback.code, message: "the store could not roll back a failed commit (\(rollback.message)): restart the node",
                                                       operation: "append", path: database.path)
                        return batch.map { _ in .failure(connection.broken!) }
                    }
                }
                return batch.map { Self.insertAlone($0, into: connection) }
            }
        }
    }

    private static func insertAlone(_ entry: Append, into connection: Connection) -> Result<Void, StoreError> {
        do throws(StoreError) {
            try connection.insert(room: entry.room, kind: entry.kind, bytes: entry.bytes, entry.operation)
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// The room's log position now. Read under the room's write gate, where every append
    /// of the room is also applied: it names what a snapshot of the state copied under
    /// the same gate covers.
    func logMark(room: String) -> Int64 {
        connection.withLock { $0.lastLogID[room] ?? 0 }
    }

    /// Replaces the room's log up to `mark` by `snapshot` (an encoded snapshot of the
    /// room's state as it was when `mark` was read). Entries after `mark` stay: they
    /// are replayed over the snapshot on load. False when a snapshot covering more is
    /// already stored (this one is older: nothing is changed).
    /// `clock` is the node's clock when the room was copied (at least every reading its
    /// trimmed deltas carry): kept with the trim, so a restart never stamps below them.
    @discardableResult
    func compact(room: String, snapshot: [UInt8], upTo mark: Int64, clock: UInt64) throws(StoreError) -> Bool {
        try connection.withLock { (connection) throws(StoreError) -> Bool in
            let database = connection.database
            try database.execute("BEGIN IMMEDIATE", "begin compaction")
            do throws(StoreError) {
                connection.saveSnapshot.bind(1, room)
                connection.saveSnapshot.bind(2, snapshot)
                connection.saveSnapshot.bind(3, mark)
                try connection.saveSnapshot.run("save the snapshot of room \(room)")
                guard database.changes > 0 else {
                    try database.execute("COMMIT", "end a compaction that changed nothing")
                    return false
                }
                let keepClock = try database.prepare("""
                    INSERT INTO meta (key, value) VALUES ('clock', ?) ON CONFLICT(key) DO UPDATE SET value = max(value, excluded.value)
                    """)
                // Packed clocks stay below 2^63 for thousands of years: compared as signed.
                keepClock.bind(1, Int64(bitPattern: clock))
                try keepClock.run("keep the clock of a compaction")
                connection.trimLog.bind(1, room)
                connection.trimLog.bind(2, mark)
                try connection.trimLog.run("trim the log of room \(room)")
                try database.execute("COMMIT", "commit compaction")
                return true
            } catch {
                try? database.execute("ROLLBACK", "roll back compaction")
                throw error
            }
        }
    }

    /// Removes a room this node handed off (its snapshot and log) and keeps its
    /// sequence floor, in one transaction: a restart never numbers below what this node
    /// gave there (docs/PROTOCOL.md, "Placement"). One row per room handed off.
    func handOff(room: String, floor: SequenceFloor) throws(StoreError) {
        try connection.withLock { (connection) throws(StoreError) in
            let database = connection.database
            try database.execute("BEGIN IMMEDIATE", "begin a handoff")
            do throws(StoreError) {
                let rooms = try database.prepare("DELETE FROM rooms WHERE room = ?")
                rooms.bind(1, room)
                try rooms.run("remove the snapshot of room \(room)")
                let log = try database.prepare("DELETE FROM log WHERE room = ?")
                log.bind(1, room)
                try log.run("remove the log of room \(room)")
                let keep = try database.prepare("""
                    INSERT INTO handed_off (room, sequence, private_sequence, clock) VALUES (?, ?, ?, ?)
                    ON CONFLICT(room) DO UPDATE SET sequence = max(sequence, excluded.sequence),
                        private_sequence = max(private_sequence, excluded.private_sequence), clock = max(clock, excluded.clock)
                    """)
                keep.bind(1, room)
                keep.bind(2, Int64(bitPattern: floor.sequence))
                keep.bind(3, Int64(bitPattern: floor.privateSequence))
                // Packed clocks stay below 2^63 for thousands of years: compared as signed.
                keep.bind(4, Int64(bitPattern: floor.clock))
                try keep.run("keep the sequence floor of room \(room)")
                try database.execute("COMMIT", "commit a handoff")
                connection.lastLogID[room] = nil
            } catch {
                try? database.execute("ROLLBACK", "roll back a handoff")
                throw error
            }
        }
    }

    /// Removes a room whose class closed (its snapshot, log and sequence floor) and keeps
    /// its tombstone, in one transaction; `dropped` are tombstones that went to keep the
    /// bound (`ClosedRoomTombstones`), deleted in the same transaction. A restart keeps
    /// refusing the room (`loadTombstones`).
    /// Removes a closed room's snapshot and log and keeps its tombstone and its sequence
    /// floor (as a handoff does), so an id opened again, once its tombstone is gone, never
    /// numbers a write with a dot it used before.
    func bury(room: String, floor: SequenceFloor, removedAtMillis: UInt64, dropped: [String]) throws(StoreError) {
        try connection.withLock { (connection) throws(StoreError) in
            let database = connection.database
            try database.execute("BEGIN IMMEDIATE", "begin removing a closed room")
            do throws(StoreError) {
                for table in ["rooms", "log"] {
                    let delete = try database.prepare("DELETE FROM \(table) WHERE room = ?")
                    delete.bind(1, room)
                    try delete.run("remove the \(table) rows of closed room \(room)")
                }
                let floorRow = try database.prepare("""
                    INSERT INTO handed_off (room, sequence, private_sequence, clock) VALUES (?, ?, ?, ?)
                    ON CONFLICT(room) DO UPDATE SET sequence = max(sequence, excluded.sequence),
                        private_sequence = max(private_sequence, excluded.private_sequence), clock = max(clock, excluded.clock)
                    """)
                floorRow.bind(1, room)
                floorRow.bind(2, Int64(bitPattern: floor.sequence))
                floorRow.bind(3, Int64(bitPattern: floor.privateSequence))
                floorRow.bind(4, Int64(bitPattern: floor.clock))
                try floorRow.run("keep the sequence floor of closed room \(room)")
                let keep = try database.prepare("""
                    INSERT INTO closed_rooms (room, removed_at) VALUES (?, ?)
                    ON CONFLICT(room) DO UPDATE SET removed_at = max(removed_at, excluded.removed_at)
                    """)
                keep.bind(1, room)
                keep.bind(2, Int64(bitPattern: removedAtMillis))
                try keep.run("keep the tombstone of closed room \(room)")
                for old in dropped {
                    let forget = try database.prepare("DELETE FROM closed_rooms WHERE room = ?")
                    forget.bind(1, old)
                    try forget.run("forget the tombstone of room \(old)")
                }
                try database.execute("COMMIT", "commit removing a closed room")
                connection.lastLogID[room] = nil
            } catch {
                try? database.execute("ROLLBACK", "roll back removing a closed room")
                throw error
            }
        }
    }

    /// Forgets tombstones past their age (`ClosedRoomTombstones.expire`).
    func forgetTombstones(_ rooms: [String]) throws(StoreError) {
        guard !rooms.isEmpty else { return }
        try connection.withLock { (connection) throws(StoreError) in
            for room in rooms {
                let forget = try connection.database.prepare("DELETE FROM closed_rooms WHERE room = ?")
                forget.bind(1, room)
                try forget.run("forget the tombstone of room \(room)")
            }
        }
    }

    /// Every tombstone of a room removed after its class closed: room -> when (Unix ms).
    func loadTombstones() throws(StoreError) -> [String: UInt64] {
        try connection.withLock { (connection) throws(StoreError) -> [String: UInt64] in
            let statement = try connection.database.prepare("SELECT room, removed_at FROM closed_rooms")
            var tombstones: [String: UInt64] = [:]
            try statement.query("read the closed rooms' tombstones") { (row) throws(StoreError) in
                tombstones[row.text(0)] = UInt64(bitPattern: row.int64(1))
            }
            return tombstones
        }
    }

    /// How many rows of a room's state the store holds (snapshot and log): 0 once removed.
    /// Its sequence floor (`loadFloors`) is not state: it outlives the room.
    func rowCount(room: String) throws(StoreError) -> Int64 {
        try connection.withLock { (connection) throws(StoreError) -> Int64 in
            var total: Int64 = 0
            for table in ["rooms", "log"] {
                let statement = try connection.database.prepare("SELECT COUNT(*) FROM \(table) WHERE room = ?")
                statement.bind(1, room)
                try statement.query("count the \(table) rows of room \(room)") { (row) throws(StoreError) in total += row.int64(0) }
            }
            return total
        }
    }

    /// The sequence floors of every room handed off (`handOff`).
    func loadFloors() throws(StoreError) -> [String: SequenceFloor] {
        try connection.withLock { (connection) throws(StoreError) -> [String: SequenceFloor] in
            let statement = try connection.database.prepare("SELECT room, sequence, private_sequence, clock FROM handed_off")
            var floors: [String: SequenceFloor] = [:]
            try statement.query("read the sequence floors") { (row) throws(StoreError) in
                floors[row.text(0)] = SequenceFloor(sequence: UInt64(bitPattern: row.int64(1)), privateSequence: UInt64(bitPattern: row.int64(2)),
                                                    clock: UInt64(bitPattern: row.int64(3)))
            }
            return floors
        }
    }

    // MARK: - Reading

    /// Every room: its snapshot, then its log replayed (merge is commutative, so order is safe).
    /// Rooms as stored, and the rooms that do not load (room -> why). One bad room
    /// never keeps the others from loading: the node serves them and keeps that one
    /// out of service (quarantined), its rows left as they are.
    /// The rooms, those that do not load, and the highest clock reading the store vouches
    /// for (the log's deltas, and what compactions kept of the clock: `NodeEngine.restoreClock`).
    func loadRooms() throws(StoreError) -> (rooms: [String: RoomState], quarantined: [String: String], clock: UInt64) {
        let clock = try meta("clock").map { UInt64(bitPattern: $0) } ?? 0
        let loaded = try connection.withLock { (connection) throws(StoreError) in try Self.load(connection) }
        return (loaded.rooms, loaded.quarantined, max(clock, loaded.clock))
    }

    private static func load(_ connection: Connection) throws(StoreError) -> (rooms: [String: RoomState], quarantined: [String: String], clock: UInt64) {
        let database = connection.database
        let path = database.path
        let limits = Self.limits
        var rooms: [String: RoomState] = [:]
        var quarantined: [String: String] = [:]
        var clock: UInt64 = 0
        var problem: StoreError?
        let snapshots = try database.prepare("SELECT room, snapshot, last_log_id FROM rooms")
        try snapshots.query("read snapshots") { (row) throws(StoreError) in
            let room = row.text(0)
            connection.lastLogID[room] = max(connection.lastLogID[room] ?? 0, row.int64(2))
            do {
                rooms[room] = try WireCodec.decodePatch(row.blob(1), limits: limits)
            } catch {
                quarantined[room] = "its snapshot does not decode: \(error)"
            }
        }
        let log = try database.prepare("SELECT room, kind, bytes, id FROM log ORDER BY id")
        try log.query("read the log") { (row) throws(StoreError) in
            let room = row.text(0)
            // Quarantined rooms' entries too: a room recovered later trims its broken rows.
            connection.lastLogID[room] = max(connection.lastLogID[room] ?? 0, row.int64(3))
            if quarantined[room] != nil {
                // Out of service, but its deltas' clock readings still count: a restart never
                // stamps below them, when the room is rebuilt from a peer later.
                if Kind(rawValue: row.int64(1)) == .deltas, let batch = try? WireCodec.decodeBatch(row.blob(2), limits: limits) {
                    for delta in batch.deltas { clock = max(clock, delta.clock.packed) }
                }
                return
            }
            var state = rooms.removeValue(forKey: room) ?? RoomState(roomID: room)
            defer { rooms[room] = state }
            do {
                switch Kind(rawValue: row.int64(1)) {
                case .deltas:
                    for delta in try WireCodec.decodeBatch(row.blob(2), limits: limits).deltas {
                        clock = max(clock, delta.clock.packed)
                        _ = state.apply(delta)
                    }
                case .patch:
                    let patch = try WireCodec.decodePatch(row.blob(2), limits: limits)
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
        return (rooms, quarantined, clock)
    }

    func logLength() throws(StoreError) -> Int64 {
        try connection.withLock { (connection) throws(StoreError) -> Int64 in
            let statement = try connection.database.prepare("SELECT COUNT(*) FROM log")
            var count: Int64 = 0
            try statement.query("count the log") { (row) throws(StoreError) in count = row.int64(0) }
            return count
        }
    }
}
