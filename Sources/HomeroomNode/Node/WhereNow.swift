import HomeroomCore

/// Where a user is now (Signaling's `whereNow`; docs/PROTOCOL.md, "Where now"): the
/// rooms in which the user holds a live session, bounded. Pure: the node's shell passes
/// the rooms it owns and merges its peers' answers.
public enum WhereNow {
    /// The most rooms one answer lists (sorted, so the same ones every time); the rest
    /// are only counted as `truncated`.
    public static let maxRooms = 100

    /// The rooms among `rooms` in which `user` has a live session, sorted.
    public static func rooms(of user: UserID, in rooms: some Sequence<RoomState>) -> [String] {
        rooms.filter { room in
            guard let record = room.users[user] else { return false }
            return record.sessions.contains { record.isLive($0, deadIncarnations: room.deadIncarnations) }
        }.map(\.roomID).sorted()
    }

    /// Answers merged (a room kept on several nodes counts once) and cut to `maxRooms`.
    public static func merge(_ answers: [[String]], truncatedBefore: Bool = false) -> (rooms: [String], truncated: Bool) {
        let all = Set(answers.joined()).sorted()
        return (Array(all.prefix(maxRooms)), truncatedBefore || all.count > maxRooms)
    }

    /// Who may ask about `user`, by the asker's token: one for every room ("*"); a
    /// teacher or assistant about anyone, others about themselves. Nil when allowed.
    public static func refusal(asker claims: TokenClaims, about user: UserID) -> String? {
        guard claims.room == "*" else {
            return "where-now needs a token for every room (`homeroom token create --room '*'`); this one is for room \(claims.room)"
        }
        guard claims.user == user || claims.parsedRole?.moderates == true else {
            return "a \(claims.role) may ask where-now only about themselves (\(claims.user)); a teacher's or assistant's token asks about anyone"
        }
        return nil
    }
}
