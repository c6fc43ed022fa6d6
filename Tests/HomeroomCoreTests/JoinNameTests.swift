import Testing
@testable import HomeroomCore

/// A rejoin that gives no name keeps the one the user has (issue 42: rejoining without
/// --name reset "Cai" to "cai"), on every replica whatever order they merge in.
@Suite struct JoinNameTests {
    @Test func aJoinWithoutANameKeepsTheUsersNameOnEveryReplica() {
        var origin = Origin(1)
        let named = join("cai", .student, session: "cai-1", via: &origin)   // name "CAI"
        let rename = origin.delta("cai", .student, .setName(user: "cai", name: "Cai Lun"))
        let rejoin = origin.delta("cai", .student, .joinSession(user: "cai", session: "cai-2", name: "", role: .student,
                                                                  host: ReplicaID(1), incarnation: 1))
        var inOrder = RoomState(roomID: "r")
        for delta in [named, rename, rejoin] { _ = inOrder.apply(delta) }
        #expect(inOrder.users["cai"]?.name.value == "Cai Lun")
        #expect(inOrder.users["cai"]?.sessions.count == 2)
        // The rejoin first, then the rest: the same name (the empty join wrote nothing).
        var reversed = RoomState(roomID: "r")
        for delta in [rejoin, rename, named] { _ = reversed.apply(delta) }
        #expect(reversed.users["cai"]?.name.value == "Cai Lun")
        // A new user joining without a name has none: readers show its id.
        var fresh = RoomState(roomID: "r")
        _ = fresh.apply(origin.delta("dee", .student, .joinSession(user: "dee", session: "dee-1", name: "", role: .student,
                                                                    host: ReplicaID(1), incarnation: 1)))
        #expect(fresh.users["dee"]?.name.value == "")
        // A named join still renames (the register's last writer wins).
        _ = inOrder.apply(origin.delta("cai", .student, .joinSession(user: "cai", session: "cai-3", name: "Cai", role: .student,
                                                                      host: ReplicaID(1), incarnation: 1)))
        #expect(inOrder.users["cai"]?.name.value == "Cai")
    }
}
