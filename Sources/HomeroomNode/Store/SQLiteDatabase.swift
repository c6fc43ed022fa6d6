import CSQLite
import Synchronization

/// An error from SQLite, with the result code, SQLite's text and what was being done.
public struct StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    public var code: Int32
    public var message: String
    public var operation: String
    public var path: String

    public var isCorrupt: Bool {
        let primary = code & 0xFF
        return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
    }

    public var description: String {
        if isCorrupt {
            return "the store \(path) is corrupt or not a Homeroom database (\(message) while \(operation)); "
                + "nothing was changed: move the file (and its -wal and -shm files) aside and restart to rebuild this node from its peers, or restore a backup"
        }
        if code & 0xFF == SQLITE_CANTOPEN {
            return "cannot open the store \(path) (\(message)): check that the directory exists and is writable"
        }
        if code & 0xFF == SQLITE_BUSY || code & 0xFF == SQLITE_LOCKED {
            return "the store \(path) is locked by another process (\(message)): is another node using the same data directory?"
        }
        if code & 0xFF == SQLITE_FULL {
            return "the disk holding \(path) is full (\(message)): free space and restart"
        }
        return "store \(path): \(operation) failed: \(message) (SQLite code \(code))"
    }
}

/// One SQLite connection, owned by this object and closed in deinit. Not shared
/// across threads without the caller's lock (`NodeStore` holds its own).
final class SQLiteDatabase {
    private var handle: OpaquePointer?
    let path: String

    init(path: String) throws(StoreError) {
        self.path = path
        var db: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &db, flags, nil)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite3_close(db)
            throw StoreError(code: status, message: message, operation: "open", path: path)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 2_000)
    }

    deinit { sqlite3_close_v2(handle) }

    /// Whether no transaction is open (SQLite's autocommit mode).
    var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    func execute(_ sql: String, _ operation: String) throws(StoreError) {
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &error)
        if status != SQLITE_OK {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(handle))
            sqlite3_free(error)
            throw StoreError(code: status, message: message, operation: operation, path: path)
        }
    }

    func prepare(_ sql: String) throws(StoreError) -> Statement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw StoreError(code: status, message: String(cString: sqlite3_errmsg(handle)), operation: "prepare \(sql.prefix(40))", path: path)
        }
        return Statement(statement, database: self)
    }

    /// The row id of the last row this connection inserted.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last statement this connection ran.
    var changes: Int32 { sqlite3_changes(handle) }

    func failure(_ status: Int32, _ operation: String) -> StoreError {
        StoreError(code: status, message: String(cString: sqlite3_errmsg(handle)), operation: operation, path: path)
    }

    /// One prepared statement; reset after each use.
    final class Statement {
        private let statement: OpaquePointer
        private unowned let database: SQLiteDatabase

        init(_ statement: OpaquePointer, database: SQLiteDatabase) {
            self.statement = statement
            self.database = database
        }

        deinit { sqlite3_finalize(statement) }

        func bind(_ index: Int32, _ value: Int64) { sqlite3_bind_int64(statement, index, value) }

        func bind(_ index: Int32, _ value: String) {
            // SQLITE_TRANSIENT: SQLite copies the text.
            sqlite3_bind_text(statement, index, value, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        }

        func bind(_ index: Int32, _ bytes: [UInt8]) {
            bytes.withUnsafeBytes { buffer in
                _ = sqlite3_bind_blob(statement, index, buffer.baseAddress, Int32(buffer.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            }
        }

        /// Runs a statement that returns no rows.
        func run(_ operation: String) throws(StoreError) {
            defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
            let status = sqlite3_step(statement)
            guard status == SQLITE_DONE || status == SQLITE_ROW else { throw database.failure(status, operation) }
        }

        /// Runs a query, calling `row` for each result row.
        func query(_ operation: String, _ row: (Row) throws(StoreError) -> Void) throws(StoreError) {
            defer { sqlite3_reset(statement); sqlite3_clear_bindings(statement) }
            while true {
                let status = sqlite3_step(statement)
                if status == SQLITE_DONE { return }
                guard status == SQLITE_ROW else { throw database.failure(status, operation) }
                try row(Row(statement: statement))
            }
        }
    }

    struct Row {
        let statement: OpaquePointer
        func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
        func text(_ column: Int32) -> String {
            guard let pointer = sqlite3_column_text(statement, column) else { return "" }
            return String(cString: pointer)
        }
        func blob(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count > 0, let pointer = sqlite3_column_blob(statement, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: pointer, count: count))
        }
    }
}
