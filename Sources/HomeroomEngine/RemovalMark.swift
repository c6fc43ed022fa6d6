import HomeroomCore

/// One user's removal marks: a merge that changes them kicked or banned someone (a closed
/// room then rotates its topic keys).
struct RemovalMark: Equatable {
    var user: UserID
    var kicked: Stamp
    var banned: Stamp?
}

extension RoomState {
    /// This room's kick and ban stamps of the users `patch` kicks or bans.
    func removals(in patch: RoomState) -> [RemovalMark] {
        var marks: [RemovalMark] = []
        for (user, record) in patch.users where record.kicked != .origin || record.isBanned {
            let mine = users[user]
            marks.append(RemovalMark(user: user, kicked: mine?.kicked ?? .origin, banned: mine?.banned))
        }
        return marks
    }
}
