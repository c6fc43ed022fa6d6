/// When a room's log is folded into a fresh snapshot (the node's compaction timing):
/// at once when its log is long or its store missed an append, and every room whose log
/// grew at each periodic pass. The shell counts what it appends and stores what is due.
public struct CompactionSchedule: Sendable, Equatable {
    /// A log this long is folded at the next tick, not at the next periodic pass.
    public static let longLog = 2_000

    /// Per room, log entries appended since its last stored snapshot.
    public private(set) var entries: [String: Int] = [:]

    public init() {}

    /// Entries in every room's log, for the metrics.
    public var logEntries: Int { entries.values.reduce(0, +) }

    /// The store took `count` entries of `room`.
    public mutating func appended(room: String, count: Int = 1) {
        entries[room, default: 0] += count
    }

    /// The rooms to compact now: every room whose log grew on a periodic pass
    /// (`everyRoom`), else those with a long log or whose store is behind (`isBehind`).
    public func due(everyRoom: Bool, isBehind: (String) -> Bool) -> [String] {
        entries.compactMap { room, count in everyRoom || count >= Self.longLog || isBehind(room) ? room : nil }.sorted()
    }

    /// A snapshot of `room` covering `covered` of its entries was stored; what was appended
    /// since its copy stays counted (it is still in the log).
    public mutating func stored(room: String, covered: Int) {
        let left = (entries[room] ?? 0) - covered
        entries[room] = left > 0 ? left : nil
    }

    /// The room left this node (handed off) or the store closed: nothing to fold.
    public mutating func forget(room: String) { entries[room] = nil }
    public mutating func forgetAll() { entries.removeAll() }
}
