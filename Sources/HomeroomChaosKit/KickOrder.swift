import HomeroomCore

/// The kicks of the run, from the history alone, with their stamps. Core keeps a user's
/// largest kick stamp (max-merge), and a session, a promotion or a raised hand counts
/// only when its own stamp is later (docs/PROTOCOL.md, "Deriving the roster"). An
/// acknowledgement carries only the dot, so the stamps come from what the observers saw
/// on the nodes (`Observatory.Tracking.stamps`), as for `RegisterOrder`.
struct KickOrder {
    struct Kick {
        var author: UserID
        var mark: KickMark
        var user: UserID { mark.user }
        var dot: Dot
        /// Nil when no sample caught it (a later kick of the same user overwrote it everywhere first).
        var stamp: Stamp?
    }

    /// The acknowledged kicks, in history order.
    private(set) var acknowledged: [Kick] = []
    /// Each user's largest acknowledged kick stamp seen.
    private(set) var latest: [UserID: Stamp] = [:]
    /// Users with a kick that got no answer or was refused (an earlier, timed-out try may
    /// have landed): a replica may hold a later kick of theirs than the history knows.
    private(set) var uncertain: Set<UserID> = []
    private var userOfDot: [Dot: UserID] = [:]

    init(history: [WriteRecord] = [], stamps: [Dot: Stamp] = [:]) {
        for record in history {
            guard let mark = record.kick else { continue }
            let user = mark.user
            guard case let .acknowledged(dot) = record.outcome else {
                uncertain.insert(user)
                continue
            }
            let stamp = stamps[dot]
            acknowledged.append(Kick(author: record.client, mark: mark, dot: dot, stamp: stamp))
            userOfDot[dot] = user
            if let stamp, latest[user].map({ $0 < stamp }) ?? true { latest[user] = stamp }
        }
    }

    /// The kick stamp the model says `user`'s record ends with, given the one a replica
    /// holds: the largest acknowledged one, unless the replica holds a later kick the
    /// history accounts for (an acknowledged kick of that user no sample caught, or one
    /// whose answer was lost). A later kick nobody made is ignored, so the model stands.
    func expected(_ user: UserID, held: Stamp) -> Stamp {
        let model = latest[user] ?? .origin
        guard model < held, held.sequence != 0 else { return model }
        return userOfDot[held.dot] == user || uncertain.contains(user) ? held : model
    }
}
