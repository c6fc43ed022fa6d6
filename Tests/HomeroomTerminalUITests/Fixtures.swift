import HomeroomContext
@testable import HomeroomTerminalUI

/// Fixed snapshots for golden tests: every value is spelled out, the clock is fixed.
enum Fixtures {
    static let now: UInt64 = 1_767_000_000_000
    static let ada = UserInfo(id: "ada", name: "Ada Lovelace", role: .teacher)

    static func user(_ id: String, _ name: String, role: Role = .student) -> UserInfo { UserInfo(id: id, name: name, role: role) }

    static func snapshot(type: RoomType, name: String, stageLimit: Int, moderators: [UserRow], students: [UserRow],
                         page: (Int, Int)? = nil, hands: [UserInfo] = [], waitingHands: [UserInfo] = [],
                         classState: ClassState = .during, local: UserInfo = ada, observers: Int = 0,
                         connection: ConnectionState = .connected) -> RoomSnapshot {
        let all = moderators + students
        let stage = all.filter(\.onStage)
        let waiting = all.filter(\.waitingForStage)
        let studentPage: UserPage
        if let (index, size) = page {
            let start = index * size
            studentPage = UserPage(rows: Array(students[start..<min(students.count, start + size)]), index: index, size: size, total: students.count)
        } else {
            studentPage = UserPage(rows: students, index: 0, size: max(1, students.count), total: students.count)
        }
        return RoomSnapshot(
            room: RoomInfo(id: "maths-101", name: name, type: type, stageLimit: stageLimit, handLimit: 10),
            classInfo: ClassInfo(state: classState, sinceMillis: now - 723_000,
                                 schedule: Schedule(startMillis: now - 723_000, durationSeconds: 45 * 60, closeDelaySeconds: 600)),
            localUser: local, connection: connection, latencyMicros: 420,
            moderators: moderators, students: studentPage, stage: stage, stageWaiting: waiting,
            raisedHands: hands, waitingHands: waitingHands,
            onlineCount: all.filter(\.online).count + observers, observerCount: observers)
    }

    static let teacherRow = UserRow(info: ada, camera: .inoperable, microphone: .inoperable)
    static let teacherOnStage = UserRow(info: ada, onStage: true, camera: .live, microphone: .live)

    /// A small classroom with every column busy, a waiting student, an offline one and a wide (CJK) name.
    static var smallClassroom: RoomSnapshot {
        let students = [
            UserRow(info: user("alice", "Alice"), onStage: true, boardGranted: true, camera: .live, microphone: .privilegeOff, rewards: 3),
            UserRow(info: user("bob", "Bob"), onStage: true, camera: .deviceOff, microphone: .live, rewards: 1),
            UserRow(info: user("carol", "Carol"), waitingForStage: true, handRaised: true),
            UserRow(info: user("lilei", "李雷"), rewards: 12, handRaised: true),
            UserRow(info: user("dave", "Dave"), online: false),
        ]
        return snapshot(type: .smallClassroom, name: "Maths 101", stageLimit: 2, moderators: [teacherRow], students: students,
                        hands: [user("carol", "Carol"), user("lilei", "李雷")])
    }

    /// A lecture hall of 250 students, page 3 of 5-row pages, many hands.
    static var lectureHall: RoomSnapshot {
        let students = (1...250).map { index -> UserRow in
            let id = "s" + String(1000 + index)
            return UserRow(info: user(id, "Student \(index)"), onStage: index <= 3, camera: index <= 3 ? .live : .inoperable,
                           microphone: index == 1 ? .live : (index <= 3 ? .deviceOff : .inoperable), rewards: Int64(index % 4),
                           handRaised: index % 10 == 0)
        }
        let hands = students.filter(\.handRaised).map(\.info)
        return snapshot(type: .lectureHall, name: "Physics for everyone", stageLimit: 6, moderators: [teacherRow],
                        students: students, page: (2, 5), hands: Array(hands.prefix(10)), waitingHands: Array(hands.dropFirst(10)),
                        observers: 12)
    }

    /// One teacher, one student, both on stage; seen by the student.
    static var oneToOne: RoomSnapshot {
        let bob = UserRow(info: user("bob", "Bob Marley"), onStage: true, boardGranted: true, camera: .privilegeOff,
                          microphone: .deviceOff, rewards: 2, handRaised: true)
        return snapshot(type: .oneToOne, name: "Piano lesson", stageLimit: 2, moderators: [teacherOnStage, assistantRow], students: [bob],
                        hands: [bob.info], local: bob.info)
    }

    static let assistantRow = UserRow(info: user("tom", "Tom", role: .assistant))

    /// Offline users whose registers still say live or held (they left with the camera
    /// on): a teacher, an assistant and a student on stage; seen by a student.
    static func offline(_ type: RoomType) -> RoomSnapshot {
        let teacher = UserRow(info: ada, online: false, onStage: true, camera: .live, microphone: .privilegeOff)
        let kim = UserRow(info: user("kim", "Kim", role: .assistant), online: false)
        let students = [
            UserRow(info: user("alice", "Alice"), onStage: true, camera: .live, microphone: .live),
            UserRow(info: user("bob", "Bob")),
            UserRow(info: user("eve", "Eve"), online: false, onStage: true, camera: .live, microphone: .privilegeOff, rewards: 2),
        ]
        return snapshot(type: type, name: "Maths 101", stageLimit: 6, moderators: [teacher, assistantRow, kim], students: students,
                        local: user("bob", "Bob"))
    }

    /// One student whose camera and microphone are both in `state`.
    static func streams(_ state: StreamState) -> RoomSnapshot {
        let row = UserRow(info: user("alice", "Alice"), onStage: state != .inoperable, camera: state, microphone: state)
        return snapshot(type: .smallClassroom, name: "Maths 101", stageLimit: 6, moderators: [teacherRow], students: [row])
    }
}
