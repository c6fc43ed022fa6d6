import HomeroomCore
import Testing
@testable import HomeroomNode

/// Where-now's pure parts (docs/PROTOCOL.md, "Where now"): who may ask, which rooms
/// count, and the bound on an answer.
@Suite struct WhereNowTests {
    static func claims(_ user: String, _ role: Role, room: String = "*") -> TokenClaims {
        TokenClaims(app: "a", room: room, user: user, role: role, issuedAt: 0, expiresAt: 60)
    }

    @Test func aTeacherAsksAboutAnyoneAnyoneElseAboutThemselvesAndOnlyWithATokenForEveryRoom() {
        #expect(WhereNow.refusal(asker: Self.claims("tina", .teacher), about: "ada") == nil)
        #expect(WhereNow.refusal(asker: Self.claims("al", .assistant), about: "ada") == nil)
        #expect(WhereNow.refusal(asker: Self.claims("ada", .student), about: "ada") == nil)
        #expect(WhereNow.refusal(asker: Self.claims("bob", .student), about: "ada") != nil)
        #expect(WhereNow.refusal(asker: Self.claims("obs", .observer), about: "ada") != nil)
        #expect(WhereNow.refusal(asker: Self.claims("tina", .teacher, room: "maths"), about: "ada")?.contains("every room") == true)
    }

    @Test func onlyRoomsWithALiveSessionCount() {
        func stamp(_ millis: UInt64) -> Stamp { Stamp(clock: HybridTimestamp(millis: millis, logical: 0, replica: ReplicaID(1)), sequence: millis) }
        func room(_ id: String, _ sessions: [SessionRecord]) -> RoomState {
            var room = RoomState(roomID: id)
            var record = UserRecord()
            record.sessions = sessions
            room.users["ada"] = record
            return room
        }
        let open = SessionRecord(id: "s1", host: ReplicaID(1), incarnation: 1, started: stamp(5))
        let ended = SessionRecord(id: "s2", host: ReplicaID(1), incarnation: 1, started: stamp(5), ended: stamp(9))
        var deadHost = room("dead", [SessionRecord(id: "s3", host: ReplicaID(2), incarnation: 1, started: stamp(5))])
        deadHost.deadIncarnations[ReplicaID(2)] = 1
        let rooms = [room("zoo", [open]), room("art", [ended, open]), room("left", [ended]), deadHost, RoomState(roomID: "empty")]
        #expect(WhereNow.rooms(of: "ada", in: rooms) == ["art", "zoo"])
        #expect(WhereNow.rooms(of: "bob", in: rooms) == [])
    }

    @Test func answersAreMergedOnceAndCutAtTheBound() {
        let merged = WhereNow.merge([["b", "a"], ["a", "c"]])
        #expect(merged.rooms == ["a", "b", "c"] && !merged.truncated)
        let many = (0..<150).map { "room-\(1000 + $0)" }
        let cut = WhereNow.merge([Array(many[..<90]), Array(many[60...])])
        #expect(cut.rooms == Array(many.prefix(WhereNow.maxRooms)) && cut.truncated)
        #expect(WhereNow.merge([["a"]], truncatedBefore: true).truncated, "a peer's own cut is kept")
    }
}
