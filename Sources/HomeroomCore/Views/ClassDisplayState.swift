/// How a UI names the class's state: the wire's three (`ClassState`), plus `closed`,
/// derived (Agora's class state 3): `after`, and the schedule's close delay passed since.
/// Never sent: a v1 client sees `after` as ever, and every replica derives the same
/// `closed` from the same registers (the class-state stamp and the schedule).
public enum ClassDisplayState: String, Hashable, Sendable, CustomStringConvertible {
    case before, during, after, closed

    /// `sinceMillis`: when the class entered `state` (its stamp's wall time; 0 if never).
    public init(state: ClassState, sinceMillis: UInt64, schedule: Schedule, nowMillis: UInt64) {
        switch state {
        case .before: self = .before
        case .during: self = .during
        case .after:
            let closesAt = sinceMillis &+ UInt64(schedule.closeDelaySeconds) * 1000
            self = sinceMillis > 0 && nowMillis >= closesAt ? .closed : .after
        }
    }

    public var description: String { rawValue }
}

extension Roster {
    /// The class's state as a UI shows it at `nowMillis` (`closed` once the room closed).
    public func classDisplay(nowMillis: UInt64) -> ClassDisplayState {
        ClassDisplayState(state: classState, sinceMillis: classStateSinceMillis, schedule: schedule, nowMillis: nowMillis)
    }
}
