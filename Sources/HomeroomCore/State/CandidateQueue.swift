/// Users competing for a limited number of places (stage seats, raised hands),
/// in one total order every replica agrees on: earliest stamp first, then user id.
/// The first `limit` win; the rest wait.
struct CandidateQueue: Sendable {
    struct Entry: Comparable, Sendable {
        var stamp: Stamp
        var user: UserID
        static func < (a: Entry, b: Entry) -> Bool { a.stamp != b.stamp ? a.stamp < b.stamp : a.user < b.user }
    }

    private(set) var entries: [Entry] = []
    /// Each user's current key, so removal needs no search by value.
    private var keys: [UserID: Stamp] = [:]

    var count: Int { entries.count }

    /// Puts `user` in the queue at `stamp`, or takes it out when `stamp` is nil.
    mutating func set(_ user: UserID, stamp: Stamp?) {
        if let old = keys[user] {
            if old == stamp { return }
            if let index = position(of: Entry(stamp: old, user: user)) { entries.remove(at: index) }
            keys[user] = nil
        }
        guard let stamp else { return }
        let entry = Entry(stamp: stamp, user: user)
        entries.insert(entry, at: insertionPoint(entry))
        keys[user] = stamp
    }

    func rank(of user: UserID) -> Int? {
        guard let stamp = keys[user] else { return nil }
        return position(of: Entry(stamp: stamp, user: user))
    }

    func winners(limit: Int) -> ArraySlice<Entry> { entries.prefix(max(0, limit)) }

    func waiting(limit: Int) -> ArraySlice<Entry> { entries.dropFirst(max(0, limit)) }

    private func insertionPoint(_ entry: Entry) -> Int {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid] < entry { low = mid + 1 } else { high = mid }
        }
        return low
    }

    private func position(of entry: Entry) -> Int? {
        let index = insertionPoint(entry)
        return index < entries.count && entries[index] == entry ? index : nil
    }
}
