import HomeroomCore
import HomeroomWire

/// Hand-made deltas and rooms for the wire tests; every value is fixed, so
/// encodings are stable and can be compared with the golden vectors.
enum Fixtures {
    static let nodeA = ReplicaID(0xA1A1_0000_0000_0001)
    static let nodeB = ReplicaID(0xB2B2_0000_0000_0002)
    static let baseMillis: UInt64 = 1_764_000_000_000

    static func clock(_ step: UInt64, _ replica: ReplicaID = nodeA) -> HybridTimestamp {
        HybridTimestamp(millis: baseMillis + step / 4, logical: UInt16(step % 4), replica: replica)
    }

    /// One example of every `Operation` case.
    static let everyOperation: [(author: UserID, role: Role, operation: Operation)] = [
        ("t", .teacher, .setRoomName("Algebra 101")),
        ("t", .teacher, .setRoomType(.lectureHall)),
        ("t", .teacher, .setStageLimit(12)),
        ("t", .teacher, .setHandLimit(4)),
        ("t", .teacher, .setSchedule(Schedule(startMillis: baseMillis, durationSeconds: 3_600, closeDelaySeconds: 300))),
        ("t", .teacher, .setClassState(.during)),
        ("t", .teacher, .muteAll),
        ("t", .teacher, .setRoomProperty(key: "topic", value: Array("fractions".utf8), cause: "plan")),
        ("t", .teacher, .setRoomProperty(key: "old", value: nil, cause: "cleanup")),
        ("s1", .student, .joinSession(user: "s1", session: "s1-web", name: "Ada", role: .student, host: nodeA, incarnation: 3)),
        ("s1", .student, .leaveSession(user: "s1", session: "s1-web")),
        ("node-a", .system, .replicaDown(replica: nodeB, incarnation: 7)),
        ("s1", .student, .setName(user: "s1", name: "Ada L.")),
        ("s1", .student, .setDevice(user: "s1", device: .camera, on: true)),
        ("s1", .student, .setDevice(user: "s1", device: .microphone, on: false)),
        ("s1", .student, .setHand(user: "s1", raised: true)),
        ("t", .teacher, .setStage(user: "s1", on: true)),
        ("t", .teacher, .setBoard(user: "s1", granted: true)),
        ("t", .teacher, .setPrivilege(user: "s1", device: .microphone, allowed: true)),
        ("t", .teacher, .reward(user: "s1", amount: 5)),
        ("a", .assistant, .kick(user: "s2")),
        ("a", .assistant, .ban(user: "s3")),
        ("s1", .student, .setUserProperty(user: "s1", key: "avatar", value: [0, 1, 2, 255], cause: "")),
        ("t", .teacher, .setUserProperty(user: "s1", key: "note", value: nil, cause: "cleared")),
        ("t", .teacher, .setHand(user: "s1", raised: false)),
        ("o", .observer, .joinSession(user: "o", session: "o-1", name: "Guest", role: .observer, host: nodeB, incarnation: 1)),
        // Messaging.
        ("s1", .student, .sendMessage(type: "chat", payload: Array("hi ✓".utf8), previous: 0)),
        ("s1", .student, .sendPeerMessage(to: "t", type: "whisper", payload: [0, 255], previous: 0)),
        ("s1", .student, .sendMessage(type: "emoji", payload: [], previous: 31)),
        ("t", .teacher, .setChatMuted(user: "s2", muted: true)),
        ("t", .teacher, .setChatMuted(user: nil, muted: false)),
        ("t", .teacher, .setHistoryLimit(500)),
        ("s1", .student, .setPresenceState(user: "s1", session: "s1-web", items: [PresenceItem(key: "mood", value: Array("ok".utf8)),
                                                                                   PresenceItem(key: "typing", value: nil)])),
        ("t", .teacher, .setRoomProperty(key: "quiz", value: [9], cause: "cas",
                                         revision: PropertyRevision(condition: 4, assigned: 5,
                                                                    lineage: [Dot(origin: nodeA, sequence: 3), Dot(origin: nodeB, sequence: 1)]))),
        ("t", .teacher, .setUserProperty(user: "s1", key: "seat", value: nil, cause: "cas",
                                         revision: PropertyRevision(condition: 0, setCondition: 7, assigned: 1, lineage: []))),
        ("t", .teacher, .setRoomProperty(key: "board", value: [1], cause: "set-cas", revision: PropertyRevision(setCondition: 0, assigned: 1))),
        ("a", .assistant, .trimHistory(beforeMillis: baseMillis + 1)),
        // Lifetime: a leave that names its start, and a fold.
        ("s1", .student, .leaveSession(user: "s1", session: "s1-old", started: Stamp(clock: clock(2, nodeB), sequence: 5))),
        ("node-a", .system, .foldSessions(user: "s1", upTo: 9, keep: [])),
        ("node-a", .system, .foldSessions(user: "s5", upTo: 3, keep: [1, 2])),
    ]

    /// The deltas of `everyOperation`, sequenced by node A from `firstSequence`.
    static func deltas(firstSequence: UInt64 = 1) -> [Delta] {
        var counters: [UserID: UInt64] = [:]
        return everyOperation.enumerated().map { index, entry in
            counters[entry.author, default: 0] += 1
            return Delta(sequence: firstSequence + UInt64(index), clock: clock(UInt64(index) * 3), author: entry.author,
                         authorRole: entry.role, authorCounter: counters[entry.author]!, operation: entry.operation)
        }
    }

    /// A room exercising every part of `RoomState`, built by applying deltas
    /// (from two nodes) in the given order.
    static func room(order: [Int]? = nil) -> RoomState {
        var all = deltas()
        var sequenceB: UInt64 = 0
        func fromB(_ author: UserID, _ role: Role, _ counter: UInt64, _ operation: Operation) -> Delta {
            sequenceB += 1
            return Delta(sequence: sequenceB, clock: clock(200 + sequenceB, nodeB), author: author, authorRole: role,
                         authorCounter: counter, operation: operation)
        }
        all.append(fromB("t2", .teacher, 1, .joinSession(user: "t2", session: "t2-app", name: "Grace", role: .teacher, host: nodeB, incarnation: 2)))
        all.append(fromB("t2", .teacher, 2, .reward(user: "s1", amount: 3)))
        all.append(fromB("t", .teacher, 9, .reward(user: "s1", amount: 5)))  // another reward by t: a new counter
        all.append(fromB("s2", .student, 1, .joinSession(user: "s2", session: "s2-1", name: "Bob", role: .student, host: nodeB, incarnation: 2)))
        all.append(fromB("s2", .student, 2, .leaveSession(user: "s2", session: "s2-0")))  // end before start
        all.append(fromB("s2", .student, 3, .setUserProperty(user: "s2", key: "lang", value: Array("fr".utf8), cause: "pref")))
        all.append(fromB("t2", .teacher, 3, .setStage(user: "s2", on: true)))
        all.append(fromB("t2", .teacher, 4, .setRoomProperty(key: "topic", value: Array("decimals".utf8), cause: "changed")))
        all.append(fromB("s2", .student, 4, .sendPeerMessage(to: "s1", type: "whisper", payload: Array("psst".utf8), previous: 0)))
        all.append(fromB("s2", .student, 5, .sendMessage(type: "chat", payload: Array("later".utf8), previous: 3)))
        all.append(fromB("s2", .student, 6, .setPresenceState(user: "s2", session: "s2-1", items: [PresenceItem(key: "hand", value: [1])])))
        // A gap from node B: sequence 12 arrives, 10 and 11 never do (an early entry in `seen`).
        sequenceB += 2
        all.append(fromB("s4", .student, 1, .joinSession(user: "s4", session: "s4-1", name: "Éowyn ✓", role: .student, host: nodeB, incarnation: 2)))
        let indexes = order ?? Array(all.indices)
        var room = RoomState(roomID: "room-42")
        for index in indexes { _ = room.apply(all[index]) }
        return room
    }

    static var roomDeltaCount: Int { everyOperation.count + 12 }
}
