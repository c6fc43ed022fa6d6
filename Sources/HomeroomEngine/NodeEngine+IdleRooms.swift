import HomeroomCore

/// Rooms left empty and idle (docs/ARCHITECTURE.md, "Lifetime"): a room nobody is in,
/// with nothing written to it for the node's room retention, is removed (its rows too,
/// by the shell), so rooms opened once and abandoned do not fill `maxRooms` for ever.
///
/// Every replica of a room holds the same stamps, so its owners reach the same verdict
/// at about the same time (within their clocks' drift); a copy pulled back meanwhile
/// from an owner that has not removed it yet is as idle, and goes at its next scan. A
/// write that an owner has and this copy lacks keeps the room on that owner, and its
/// delta (or a pull) brings the room back here whole. The removal keeps the room's
/// sequence floor, as a handoff does, so a room opened again later never reuses a dot.
extension NodeEngine {
    /// Rooms a scan looks at per call: the scan goes round the rooms a slice at a time.
    public static let idleScanSlice = 64

    /// Of `candidates`, the rooms that are idle at `nowMillis`: no live session, no
    /// lease held here, no group room of theirs held here, and no stamp newer than
    /// `retentionMillis` ago. Scans each candidate whole (rooms are looked at rarely).
    public func idleRooms(among candidates: [String], nowMillis: UInt64, retentionMillis: UInt64) -> [String] {
        guard retentionMillis > 0 else { return [] }
        return candidates.filter { roomID in
            guard let room = rooms[roomID], !holdsLeases(in: roomID), !room.hasLiveSession else { return false }
            guard room.newestStampMillis &+ retentionMillis <= nowMillis else { return false }
            // A class whose groups still meet here stays: its groups' rooms are gated by it.
            return Breakout.parse(roomID: roomID) != nil || !rooms.keys.contains { Breakout.parse(roomID: $0)?.mainRoom == roomID }
        }
    }

    /// The next slice of rooms to look at after `cursor` (in id order, wrapping), and the
    /// cursor for the call after.
    public func idleScanSlice(after cursor: String?) -> (rooms: [String], next: String?) {
        let sorted = rooms.keys.sorted()
        guard !sorted.isEmpty else { return ([], nil) }
        let start = cursor.map { last in sorted.firstIndex { $0 > last } ?? sorted.endIndex } ?? sorted.startIndex
        let slice = Array(sorted[start...].prefix(Self.idleScanSlice))
        // Past the end: the next call starts again at the first room.
        return (slice, slice.count < Self.idleScanSlice ? nil : slice.last)
    }
}
