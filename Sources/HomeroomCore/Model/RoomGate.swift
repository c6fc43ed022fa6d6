/// A room-wide switch that teachers close and open again, and that decides which of the
/// students' own writes count: the room's camera mute and microphone mute (Flexible
/// Classroom's `muteVideo` / `muteAudio`), and hand raising switched off.
///
/// Closings, openings and the students' writes race across partitions; every replica
/// decides them by stamps alone, so they agree once they hold the same deltas:
/// - The gate is closed from its latest closing (`closedAt`, max-merged) until an opening
///   that names that closing (`opening.ends`). An opening ends only the closing its
///   origin saw, so a closing concurrent with an opening wins: the room stays closed.
/// - A student's write the gate governs (a device turned on, a hand raised) counts only
///   while the gate is open, and only if it is later than the opening that ended the
///   latest closing (`opening.at`; of several, the earliest). A write from before the
///   closing is over, and one stamped while it was closed (its origin had not seen the
///   closing yet) never counts, not even after the opening: the student writes again.
/// - Opening a gate that was never closed, or one already open, changes nothing (the
///   opening names no closing, or one an earlier opening ended already).
public struct RoomGate: Hashable, Sendable, CustomStringConvertible {
    /// The latest closing; the origin when the gate was never closed.
    public private(set) var closedAt: Stamp = .origin
    /// The opening that counts: the one naming the latest closing, the earliest of those.
    public private(set) var opening: Opening?

    /// An opening: `at` is its own stamp, `ends` the closing it ends.
    public struct Opening: Hashable, Sendable {
        public var ends: Stamp
        public var at: Stamp

        public init(ends: Stamp, at: Stamp) {
            self.ends = ends
            self.at = at
        }

        /// The join's order: an opening of a later closing wins; for one closing, the earlier opening.
        func supersedes(_ other: Opening) -> Bool {
            ends != other.ends ? other.ends < ends : at < other.at
        }
    }

    public init() {}

    public init(closedAt: Stamp, opening: Opening?) {
        self.closedAt = closedAt
        self.opening = opening.flatMap { $0.ends == .origin ? nil : $0 }
    }

    /// Closed by its latest closing, with no opening naming it (or a later one) yet.
    public var isClosed: Bool {
        closedAt != .origin && (opening.map { $0.ends < closedAt } ?? true)
    }

    /// The moment from which governed writes count: nil while closed, the origin when never closed.
    public var openSince: Stamp? {
        isClosed ? nil : (opening?.at ?? .origin)
    }

    /// Whether a governed write stamped `stamp` counts.
    @inline(__always)
    public func admits(_ stamp: Stamp) -> Bool {
        guard let since = openSince else { return false }
        return since < stamp
    }

    /// A closing at `stamp`; true when it changed the gate.
    @discardableResult
    public mutating func close(at stamp: Stamp) -> Bool {
        guard closedAt < stamp else { return false }
        closedAt = stamp
        return true
    }

    /// An opening at `stamp` of the closing `ends` (the origin: none, nothing to open); true when it changed the gate.
    @discardableResult
    public mutating func open(ending ends: Stamp, at stamp: Stamp) -> Bool {
        guard ends != .origin else { return false }
        let candidate = Opening(ends: ends, at: stamp)
        guard opening.map(candidate.supersedes) ?? true else { return false }
        opening = candidate
        return true
    }

    /// The lattice join; true when it changed this gate.
    @discardableResult
    public mutating func merge(_ other: RoomGate) -> Bool {
        let closed = close(at: other.closedAt)
        let opened = other.opening.map { open(ending: $0.ends, at: $0.at) } ?? false
        return closed || opened
    }

    /// What of this gate a replica whose deltas `contains` says it holds lacks.
    func missing(_ contains: (Dot) -> Bool) -> RoomGate {
        var patch = RoomGate()
        if closedAt != .origin && !contains(closedAt.dot) { patch.closedAt = closedAt }
        if let opening, !contains(opening.at.dot) { patch.opening = opening }
        return patch
    }

    /// Every stamp it holds (for retirement and clock floors).
    var stamps: [Stamp] { [closedAt] + (opening.map { [$0.ends, $0.at] } ?? []) }

    public var description: String {
        if closedAt == .origin && opening == nil { return "never closed" }
        return (isClosed ? "closed at \(closedAt)" : "open") + (opening.map { ", opened at \($0.at) (ending \($0.ends))" } ?? "")
    }
}
