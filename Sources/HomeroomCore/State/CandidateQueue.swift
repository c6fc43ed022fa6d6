/// The order stage and hand candidates take: earliest stamp first, then user id.
/// Public so that a model outside Core (the chaos checker's) sorts by this very rule
/// instead of restating it.
public enum CandidateOrder {
    @inline(__always)
    public static func precedes(_ a: Stamp, _ aUser: UserID, _ b: Stamp, _ bUser: UserID) -> Bool {
        a != b ? a < b : aUser < bUser
    }
}

/// Users competing for a limited number of places (stage seats, raised hands),
/// in one total order every replica agrees on: earliest stamp first, then user id.
/// The first `limit` win; the rest wait.
///
/// Kept as sorted runs of at most `runCapacity` entries: a lecture hall can have
/// thousands of raised hands, and one sorted array shifted a third of them on every
/// hand or stage write (half of the streamed merge's time went to that memmove).
struct CandidateQueue: Sendable {
    struct Entry: Comparable, Sendable {
        var stamp: Stamp
        var user: UserID
        static func < (a: Entry, b: Entry) -> Bool { CandidateOrder.precedes(a.stamp, a.user, b.stamp, b.user) }
    }

    static let runCapacity = 128

    /// Sorted, each run non-empty, every entry of a run before every entry of the next.
    private var runs: [[Entry]] = []
    /// Each user's current key, so removal needs no search by value.
    private var keys: [UserID: Stamp] = [:]
    private(set) var count = 0

    /// Puts `user` in the queue at `stamp`, or takes it out when `stamp` is nil.
    mutating func set(_ user: UserID, stamp: Stamp?) {
        if keys.isEmpty && stamp == nil { return }
        if let old = keys[user] {
            if old == stamp { return }
            remove(Entry(stamp: old, user: user))
            keys[user] = nil
        }
        guard let stamp else { return }
        insert(Entry(stamp: stamp, user: user))
        keys[user] = stamp
    }

    /// Whether `user` is among the first `limit`.
    func isAmongFirst(_ limit: Int, _ user: UserID) -> Bool {
        guard limit > 0, let stamp = keys[user] else { return false }
        let entry = Entry(stamp: stamp, user: user)
        var before = 0
        for run in runs {
            if before >= limit { return false }
            if let last = run.last, last < entry {
                before += run.count
                continue
            }
            return before + Self.insertionPoint(entry, in: run) < limit
        }
        return false
    }

    /// The users of `winners(limit:)`, built directly (read on every stage and hand write).
    func winningUsers(limit: Int) -> [UserID] {
        guard limit > 0, let first = runs.first else { return [] }
        if first.count >= limit { return first.prefix(limit).map(\.user) }
        return winners(limit: limit).map(\.user)
    }

    func winners(limit: Int) -> [Entry] {
        var result: [Entry] = []
        for run in runs {
            if result.count >= limit { break }
            result.append(contentsOf: run.prefix(limit - result.count))
        }
        return result
    }

    func waiting(limit: Int) -> [Entry] {
        var result: [Entry] = []
        var skip = max(0, limit)
        for run in runs {
            if skip >= run.count {
                skip -= run.count
                continue
            }
            result.append(contentsOf: run.dropFirst(skip))
            skip = 0
        }
        return result
    }

    /// The run an entry belongs in: the first whose last entry is not before it (or the last run).
    private func runIndex(for entry: Entry) -> Int {
        var low = 0, high = runs.count - 1
        while low < high {
            let mid = (low + high) / 2
            if runs[mid][runs[mid].count - 1] < entry { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private mutating func insert(_ entry: Entry) {
        count += 1
        guard !runs.isEmpty else {
            runs.append([entry])
            return
        }
        let index = runIndex(for: entry)
        // The position first: a copy of the run alive during `insert` would make it copy the run.
        let position = Self.insertionPoint(entry, in: runs[index])
        runs[index].insert(entry, at: position)
        if runs[index].count > Self.runCapacity {
            let upper = Array(runs[index][(Self.runCapacity / 2)...])
            runs[index].removeSubrange((Self.runCapacity / 2)...)
            runs.insert(upper, at: index + 1)
        }
    }

    private mutating func remove(_ entry: Entry) {
        guard !runs.isEmpty else { return }
        let index = runIndex(for: entry)
        let position = Self.insertionPoint(entry, in: runs[index])
        guard position < runs[index].count, runs[index][position] == entry else { return }
        count -= 1
        runs[index].remove(at: position)
        if runs[index].isEmpty { runs.remove(at: index) }
    }

    private static func insertionPoint(_ entry: Entry, in run: [Entry]) -> Int {
        var low = 0, high = run.count
        while low < high {
            let mid = (low + high) / 2
            if run[mid] < entry { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
