/// An invitation to the stage (Flexible Classroom's `invitePodium(user, duration)`): a
/// teacher or an assistant invites a student for `seconds`; the student accepts (and is
/// then on stage, as after a teacher's stage add) or declines; unanswered, it times out.
///
/// Whether an answer came in time is decided from stamps alone, so every replica decides
/// the same: an answer counts only if its own stamp's wall-clock reading is at most
/// `seconds` after the invitation's (`isOpen(at:)`). The answer carries the invitation's
/// stamp and duration (its origin fills them in), so a replica decides it even before the
/// invitation itself reaches it. A replica's clock only labels a pending one "expired"
/// for display (`status(nowMillis:)`).
///
/// Merge (a join, per invited user): the invitation with the larger stamp replaces an
/// earlier one and its answer; of two answers to one invitation an accept beats a decline
/// (an accept in time has put the student on stage on every replica), then the earlier.
public struct StageInvitation: Hashable, Sendable, CustomStringConvertible {
    /// The invitation's own stamp: its issue time and identity.
    public var issued: Stamp
    /// How long it stays open (`durationRange`).
    public var seconds: UInt32
    /// Who invited; empty while only an answer has reached this replica.
    public var inviter: UserID
    /// The answer that counts, if any.
    public var answer: Answer?

    public struct Answer: Hashable, Sendable {
        public var at: Stamp
        public var accepted: Bool

        public init(at: Stamp, accepted: Bool) {
            self.at = at
            self.accepted = accepted
        }

        /// An accept wins over a decline; of two of a kind, the earlier.
        func supersedes(_ other: Answer) -> Bool {
            accepted != other.accepted ? accepted : at < other.at
        }
    }

    /// What a client sees.
    public enum Status: String, Hashable, Sendable {
        case pending, accepted, declined, expired
    }

    /// The durations a write may carry; the CLI's default is 30 s.
    public static let durationRange: ClosedRange<UInt32> = 5...600
    public static let defaultSeconds: UInt32 = 30

    public init(issued: Stamp, seconds: UInt32, inviter: UserID, answer: Answer? = nil) {
        self.issued = issued
        self.seconds = seconds
        self.inviter = inviter
        self.answer = answer
    }

    /// The last wall-clock millisecond (Unix) at which an answer counts.
    public var expiresAtMillis: UInt64 { issued.clock.millis &+ UInt64(seconds) * 1000 }

    /// Whether an answer stamped `stamp` comes in time (stamps only: the same on every replica).
    public func isOpen(at stamp: Stamp) -> Bool {
        issued < stamp && stamp.clock.millis <= expiresAtMillis
    }

    /// Answered, or pending, or (unanswered and past its duration by `nowMillis`) expired.
    public func status(nowMillis: UInt64) -> Status {
        if let answer { return answer.accepted ? .accepted : .declined }
        return nowMillis > expiresAtMillis ? .expired : .pending
    }

    /// The lattice join; true when it changed this one.
    @discardableResult
    public mutating func merge(_ other: StageInvitation) -> Bool {
        if issued < other.issued {
            self = other
            return true
        }
        guard issued == other.issued else { return false }
        var changed = false
        if inviter.isEmpty && !other.inviter.isEmpty {
            inviter = other.inviter
            changed = true
        }
        if let theirs = other.answer, answer.map(theirs.supersedes) ?? true {
            answer = theirs
            changed = true
        }
        return changed
    }

    /// Every stamp it holds (for retirement and clock floors).
    var stamps: [Stamp] { [issued] + (answer.map { [$0.at] } ?? []) }

    public var description: String {
        "invited at \(issued) by \(inviter.isEmpty ? "?" : inviter) for \(seconds) s"
            + (answer.map { $0.accepted ? ", accepted at \($0.at)" : ", declined at \($0.at)" } ?? "")
    }
}
