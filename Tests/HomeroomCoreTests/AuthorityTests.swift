import Testing
@testable import HomeroomCore

@Suite struct AuthorityTests {
    typealias Case = (role: Role, author: UserID, operation: Operation, allowed: Bool)

    static let cases: [Case] = [
        (.teacher, "t", .setStage(user: "s", on: true), true),
        (.assistant, "a", .setStage(user: "s", on: true), true),
        (.student, "s", .setStage(user: "s", on: true), false),
        (.observer, "o", .setStage(user: "s", on: true), false),
        (.teacher, "t", .setBoard(user: "s", granted: true), true),
        (.student, "s", .setBoard(user: "s", granted: true), false),
        (.teacher, "t", .setPrivilege(user: "s", device: .camera, allowed: true), true),
        (.student, "s", .setPrivilege(user: "s", device: .microphone, allowed: true), false),
        (.teacher, "t", .reward(user: "s", amount: 1), true),
        (.student, "s", .reward(user: "s", amount: 100), false),
        (.teacher, "t", .reward(user: "s", amount: 0), false),
        (.teacher, "t", .reward(user: "s", amount: -5), false),
        (.teacher, "t", .kick(user: "s"), true),
        (.student, "s", .kick(user: "x"), false),
        (.teacher, "t", .ban(user: "s"), true),
        (.assistant, "a", .ban(user: "s"), true),
        (.student, "s", .ban(user: "x"), false),
        (.teacher, "t", .setHand(user: "s", raised: false), true),
        (.teacher, "t", .setHand(user: "s", raised: true), false),
        (.student, "s", .setHand(user: "s", raised: true), true),
        (.student, "s", .setHand(user: "x", raised: false), false),
        (.teacher, "t", .muteAll, true),
        (.student, "s", .muteAll, false),
        (.teacher, "t", .setClassState(.during), true),
        (.student, "s", .setClassState(.after), false),
        (.assistant, "a", .setRoomName("Maths"), true),
        (.student, "s", .setRoomName("Hacked"), false),
        (.teacher, "t", .setStageLimit(8), true),
        (.teacher, "t", .setStageLimit(1_000_000), false),
        (.student, "s", .setDevice(user: "s", device: .camera, on: true), true),
        (.student, "s", .setDevice(user: "x", device: .camera, on: true), false),
        (.teacher, "t", .setDevice(user: "s", device: .camera, on: true), false),
        (.student, "s", .setName(user: "s", name: "Sam"), true),
        (.student, "s", .setName(user: "x", name: "Sam"), false),
        (.student, "s", .setUserProperty(user: "s", key: "k", value: [1], cause: ""), true),
        (.student, "s", .setUserProperty(user: "x", key: "k", value: [1], cause: ""), false),
        (.teacher, "t", .setUserProperty(user: "x", key: "k", value: [1], cause: ""), true),
        (.student, "s", .setRoomProperty(key: "k", value: [1], cause: ""), false),
        (.teacher, "t", .setRoomProperty(key: "k", value: [1], cause: ""), true),
        (.student, "s", .joinSession(user: "s", session: "1", name: "S", role: .student, host: ReplicaID(1), incarnation: 1), true),
        (.student, "s", .joinSession(user: "s", session: "1", name: "S", role: .teacher, host: ReplicaID(1), incarnation: 1), false),
        (.student, "s", .joinSession(user: "x", session: "1", name: "X", role: .student, host: ReplicaID(1), incarnation: 1), false),
        (.observer, "o", .joinSession(user: "o", session: "1", name: "O", role: .observer, host: ReplicaID(1), incarnation: 1), true),
        (.observer, "o", .setDevice(user: "o", device: .camera, on: true), false),
        (.student, "s", .leaveSession(user: "s", session: "1"), true),
        (.student, "s", .leaveSession(user: "x", session: "1"), false),
        (.teacher, "t", .replicaDown(replica: ReplicaID(1), incarnation: 1), false),
        (.system, "node-1", .replicaDown(replica: ReplicaID(1), incarnation: 1), true),
    ]

    @Test(arguments: 0..<AuthorityTests.cases.count)
    func rule(_ index: Int) {
        let c = Self.cases[index]
        let rejection = Authority.check(author: c.author, role: c.role, operation: c.operation)
        #expect((rejection == nil) == c.allowed, "\(c.role) \(c.author) \(c.operation.name): \(rejection?.description ?? "allowed")")
    }

    @Test func forgedDeltaIsRejectedIdenticallyEverywhereAndRecordedAsSeen() {
        var origin = Origin(1)
        var a = classroom(students: ["s", "bob"], origin: &origin)
        var b = a
        let forged = origin.delta("s", .student, .setStage(user: "bob", on: true))
        let outcomeA = a.apply(forged)
        let outcomeB = b.apply(forged)
        #expect(outcomeA == outcomeB)
        guard case let .rejected(reason) = outcomeA else { Issue.record("forged delta was applied"); return }
        #expect(reason.code == "requires-moderator")
        #expect(a.seen.contains(forged.dot))
        #expect(!a.isOnStage("bob"))
        let again = a.apply(forged)
        #expect(again == .duplicate)
    }

    @Test func admissionGivesStateDependentCodes() {
        var origin = Origin(1)
        var room = classroom(students: ["s1", "s2", "s3"], origin: &origin)
        _ = room.apply(origin.delta("t", .teacher, .setStageLimit(2)))
        _ = room.apply(origin.delta("t", .teacher, .setStage(user: "s1", on: true)))
        _ = room.apply(origin.delta("t", .teacher, .setStage(user: "s2", on: true)))
        let full = room.admit(Write(author: "t", authorRole: .teacher, authorCounter: 9, operation: .setStage(user: "s3", on: true)), nowMillis: origin.now)
        #expect(full?.code == "stage-full")
        let ghost = room.admit(Write(author: "t", authorRole: .teacher, authorCounter: 9, operation: .reward(user: "nobody", amount: 1)), nowMillis: origin.now)
        #expect(ghost?.code == "user-not-found")
        _ = room.apply(origin.delta("t", .teacher, .setClassState(.during)))
        let back = room.admit(Write(author: "t", authorRole: .teacher, authorCounter: 9, operation: .setClassState(.before)), nowMillis: origin.now)
        #expect(back?.code == "class-state-backwards")
        let forged = room.admit(Write(author: "s1", authorRole: .student, authorCounter: 9, operation: .reward(user: "s1", amount: 100)), nowMillis: origin.now)
        #expect(forged?.code == "not-allowed")
        _ = room.apply(origin.delta("t", .teacher, .setClassState(.after)))
        let closed = room.admit(Write(author: "s1", authorRole: .student, authorCounter: 9, operation: .setHand(user: "s1", raised: true)),
                                nowMillis: origin.now + 11 * 60 * 1000)
        #expect(closed?.code == "room-closed")
    }
}
