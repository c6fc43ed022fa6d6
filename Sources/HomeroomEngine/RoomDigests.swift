import HomeroomCore

/// Gossip that costs what changes, not what a node holds (docs/PROTOCOL.md, "Heartbeats").
/// A heartbeat lists only the rooms whose version vector moved in the last few
/// heartbeats, with a hash of every room's vector; the receiver keeps its view of the
/// sender's rooms, applies the changes, and compares hashes. Equal: its view is the
/// sender's rooms at that heartbeat (a missed heartbeat's changes come again in the next
/// ones). Different: it asks the sender for the complete list (a hello), as it does after
/// a restart or a partition. A complete list also goes out now and then, unasked.

/// A room's vector as 64 bits, the same in every process (Swift's `Hasher` is seeded per
/// process). 0 stands for no room (or an empty vector): a room's hash is never 0.
public enum RoomDigestHash {
    public static func of(roomID: String, seen: VersionVector) -> UInt64 {
        var hash = of(roomID: roomID)
        var origins = 0
        for (origin, progress) in seen.origins.sorted(by: { $0.key.rawValue < $1.key.rawValue })
        where progress.contiguous > 0 || !progress.early.isEmpty {
            origins += 1
            hash = mix(mix(mix(hash, origin.rawValue), progress.contiguous), UInt64(progress.early.count))
            for sequence in progress.early { hash = mix(hash, sequence) }
        }
        if origins == 0 { return 0 }
        return hash == 0 ? 1 : hash
    }

    /// A room id alone (placement scores start from it): the finaliser over the id's
    /// length, then its UTF-8 bytes eight at a time, big-endian, the last word holding
    /// what is left.
    public static func of(roomID: String) -> UInt64 {
        var hash = mix(0x686F_6D65_726F_6F6D, UInt64(roomID.utf8.count))
        var word: UInt64 = 0, filled = 0
        for byte in roomID.utf8 {
            word = word << 8 | UInt64(byte)
            filled += 1
            if filled == 8 { hash = mix(hash, word); word = 0; filled = 0 }
        }
        if filled > 0 { hash = mix(hash, word) }
        return hash
    }

    /// splitmix64's finaliser over the running hash and one word.
    static func mix(_ hash: UInt64, _ word: UInt64) -> UInt64 {
        var z = (hash ^ word) &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What this node announces of its own rooms, heartbeat by heartbeat.
public struct OwnRoomDigest: Sendable {
    /// Each room's hash (rooms with an empty vector are left out).
    public private(set) var hashes: [String: UInt64] = [:]
    /// The wrapping sum of `hashes`: the hash of every room, kept as rooms change.
    public private(set) var total: UInt64 = 0
    /// Rooms whose vector moved, per published heartbeat, newest last (at most `repeats`).
    private var recent: [Set<String>] = []
    private var sinceLastHeartbeat: Set<String> = []
    public private(set) var heartbeatsAnnounced: UInt64 = 0

    /// How many heartbeats in a row list a change: a receiver that missed fewer than this
    /// many in a row still ends up with the sender's rooms, without asking.
    public static let repeats = 3
    /// Every this many heartbeats (and the first `repeats`), the complete list goes out
    /// unasked: 30 s at the default 200 ms heartbeat.
    public static let completeEvery: UInt64 = 150

    public init() {}

    /// Takes in the rooms changed since the last call (`RoomTable.takeChanged`), before
    /// every heartbeat or hello.
    public mutating func refresh(changed: Set<String>, in rooms: RoomTable) {
        for id in changed {
            let new = rooms[id].map { RoomDigestHash.of(roomID: id, seen: $0.seen) } ?? 0
            let old = hashes[id] ?? 0
            guard new != old else { continue }
            total = total &- old &+ new
            hashes[id] = new == 0 ? nil : new
            sinceLastHeartbeat.insert(id)
        }
    }

    public struct Announcement: Equatable, Sendable {
        /// True: `rooms` is every room the sender holds. False: only the changed ones,
        /// some of which it may no longer hold (announced with an empty vector).
        public var complete: Bool
        /// Sorted.
        public var rooms: [String]
        /// The hash of every room the sender holds (`total`).
        public var hash: UInt64
    }

    /// What the next published heartbeat lists (after `refresh`).
    public mutating func nextHeartbeat() -> Announcement {
        recent.append(sinceLastHeartbeat)
        sinceLastHeartbeat = []
        if recent.count > Self.repeats { recent.removeFirst(recent.count - Self.repeats) }
        defer { heartbeatsAnnounced &+= 1 }
        if heartbeatsAnnounced < UInt64(Self.repeats) || heartbeatsAnnounced % Self.completeEvery == 0 {
            return Announcement(complete: true, rooms: hashes.keys.sorted(), hash: total)
        }
        return Announcement(complete: false, rooms: recent.reduce(into: Set<String>()) { $0.formUnion($1) }.sorted(), hash: total)
    }
}

/// One node's view of another's rooms, from its heartbeats.
public struct PeerRoomView: Equatable, Sendable {
    /// The sender's vector per room, as last announced.
    public private(set) var rooms: [String: VersionVector] = [:]
    private var hashes: [String: UInt64] = [:]
    public private(set) var total: UInt64 = 0
    /// The sender's clock (wall ms) at the latest heartbeat this view was checked
    /// against, if the view has not changed unchecked since: `rooms` is then exactly
    /// what the sender held then. Nil after a mismatch, until the next match.
    public private(set) var verifiedAtMillis: UInt64?

    public init() {}

    /// A complete list: the view becomes it.
    public mutating func replace(with digests: [(roomID: String, seen: VersionVector)], sentAtMillis: UInt64) {
        rooms = [:]
        hashes = [:]
        total = 0
        for digest in digests { set(digest.roomID, digest.seen) }
        verifiedAtMillis = sentAtMillis == 0 ? nil : sentAtMillis
    }

    /// The rooms that changed, then the sender's hash of all of them: true when the view
    /// now matches it.
    @discardableResult
    public mutating func apply(changes digests: [(roomID: String, seen: VersionVector)], senderHash: UInt64, sentAtMillis: UInt64) -> Bool {
        for digest in digests { set(digest.roomID, digest.seen) }
        let matches = total == senderHash
        verifiedAtMillis = matches && sentAtMillis != 0 ? sentAtMillis : nil
        return matches
    }

    private mutating func set(_ roomID: String, _ seen: VersionVector) {
        let new = RoomDigestHash.of(roomID: roomID, seen: seen)
        total = total &- (hashes[roomID] ?? 0) &+ new
        if new == 0 {
            hashes[roomID] = nil
            rooms[roomID] = nil
        } else {
            hashes[roomID] = new
            rooms[roomID] = seen
        }
    }
}
