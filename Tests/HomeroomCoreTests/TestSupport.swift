@testable import HomeroomCore

/// A tiny origin for hand-written deltas: one sequencer per replica, time passed in.
struct Origin {
    var sequencer: Sequencer
    var now: UInt64 = 1_000_000
    var counter: UInt64 = 0

    init(_ replica: UInt64) { sequencer = Sequencer(replica: ReplicaID(replica)) }

    mutating func delta(_ author: UserID, _ role: Role, _ operation: Operation, advance: UInt64 = 1) -> Delta {
        now += advance
        counter += 1
        return sequencer.stamp(Write(author: author, authorRole: role, authorCounter: counter, operation: operation), nowMillis: now)
    }
}

func join(_ user: UserID, _ role: Role, session: String? = nil, via origin: inout Origin) -> Delta {
    origin.delta(user, role, .joinSession(user: user, session: session ?? "\(user)-1", name: user.uppercased(), role: role,
                                          host: origin.sequencer.replica, incarnation: 1))
}

/// A room with a teacher and the given students, all joined through replica 1.
func classroom(students: [UserID], origin: inout Origin) -> RoomState {
    var room = RoomState(roomID: "r")
    _ = room.apply(join("t", .teacher, via: &origin))
    for student in students { _ = room.apply(join(student, .student, via: &origin)) }
    return room
}

extension RoomState {
    /// The origin's preparation for tests that write no lock (a lock's fence needs the origin and the time).
    func prepare(_ write: Write) -> Write { prepare(write, origin: ReplicaID(0), nowMillis: 0) }
}
