import Testing
import HomeroomCore
@testable import HomeroomEngine

/// Placement (docs/PROTOCOL.md, "Placement"): rendezvous hashing picks the same owners
/// everywhere, spreads rooms evenly, and moves only what a joining or leaving member
/// gains or loses; a copy goes only once every owner holds it, and its numbers stay.
@Suite struct PlacementTests {
    static let members = (1...6).map { "node-\($0)" }
    static let rooms = (0..<6_000).map { "class-\($0)" }

    @Test func ownersAreDistinctMembersAndTheSameInAnyOrder() {
        let placement = Placement(replicas: 3, members: Self.members)
        let shuffled = Placement(replicas: 3, members: Self.members.reversed() + Self.members)
        for room in Self.rooms.prefix(500) {
            let owners = placement.owners(of: room)
            #expect(owners.count == 3 && Set(owners).count == 3 && Set(owners).isSubset(of: Set(Self.members)))
            #expect(shuffled.owners(of: room) == owners)
            for member in Self.members { #expect(placement.owns(member, room: room) == owners.contains(member)) }
        }
        // More copies than members, or 0: every member owns every room.
        for replicas in [0, 6, 9] {
            let everywhere = Placement(replicas: replicas, members: Self.members)
            #expect(everywhere.everywhere && everywhere.owners(of: "any") == Self.members.sorted())
        }
    }

    /// A pinned room (a lecture hall) has its own number of copies, its groups' rooms
    /// follow it, and every other room keeps the default; pinned 0, or more copies than
    /// members, is every member. Owners of a pinned room extend the default's (the same
    /// scores, more of them), so pinning moves no room away from a default owner.
    @Test func aPinnedRoomHasItsOwnNumberOfCopies() {
        let placement = Placement(replicas: 2, members: Self.members, pinned: ["hall": 5, "everywhere": 0, "huge": 9])
        let plain = Placement(replicas: 2, members: Self.members)
        #expect(placement.owners(of: "hall").count == 5)
        #expect(placement.owners(of: "hall:g1") == placement.owners(of: "hall"))
        #expect(Array(placement.owners(of: "hall").prefix(2)) == plain.owners(of: "hall"))
        #expect(placement.owners(of: "everywhere") == Self.members.sorted())
        #expect(placement.owners(of: "huge") == Self.members.sorted())
        #expect(placement.copies("hall") == 5 && placement.copies("huge") == 0 && placement.copies("class-1") == 2)
        for room in Self.rooms.prefix(300) { #expect(placement.owners(of: room) == plain.owners(of: room)) }
        #expect(!placement.everywhere)
        #expect(Placement(replicas: 0, members: Self.members, pinned: ["hall": 0]).everywhere)
        #expect(!Placement(replicas: 0, members: Self.members, pinned: ["hall": 2]).everywhere)
    }

    /// A group's room is checked against its main room: they live on the same owners.
    @Test func aBreakoutGroupsRoomLivesWithItsMainRoom() {
        let placement = Placement(replicas: 2, members: Self.members)
        var apart = 0
        for index in 0..<200 {
            let main = "class-\(index)"
            #expect(placement.owners(of: "\(main):g1") == placement.owners(of: main))
            #expect(placement.owners(of: "\(main):team-b") == placement.owners(of: main))
            if placement.owners(of: "\(main)-g1") != placement.owners(of: main) { apart += 1 }
        }
        #expect(apart > 100, "rooms that are not groups are placed by their own ids")
    }

    /// A constant, as another implementation computes it from docs/PROTOCOL.md.
    @Test func theScoreIsFixedAcrossProcesses() {
        #expect(RoomDigestHash.of(roomID: "maths") == RoomDigestHash.mix(RoomDigestHash.mix(0x686F_6D65_726F_6F6D, 5), 0x6D_6174_6873))
        #expect(ReplicaID(name: "a").rawValue == 0xAF63_DC4C_8601_EC8C)
        #expect(Placement.score(RoomDigestHash.of(roomID: "maths"), "a") == 0x344F_2C86_446A_E351, "computed in Python from the spelled-out algorithm")
    }

    @Test func roomsSpreadEvenly() {
        let placement = Placement(replicas: 3, members: Self.members)
        var owned: [String: Int] = [:]
        for room in Self.rooms { for owner in placement.owners(of: room) { owned[owner, default: 0] += 1 } }
        let fair = Self.rooms.count * 3 / Self.members.count
        for member in Self.members {
            let count = owned[member] ?? 0
            #expect(abs(count - fair) < fair / 10, "\(member) owns \(count) rooms; a fair share is \(fair)")
        }
    }

    @Test func aJoiningOrLeavingMemberMovesOnlyWhatItGainsOrLoses() {
        let before = Placement(replicas: 3, members: Self.members)
        let newcomer = "node-7"
        let grown = Placement(replicas: 3, members: Self.members + [newcomer])
        var moved = 0
        for room in Self.rooms {
            let old = Set(before.owners(of: room)), new = Set(grown.owners(of: room))
            if old != new {
                moved += 1
                // Exactly one owner gave its place to the newcomer; nothing moved between others.
                #expect(new.contains(newcomer) && old.subtracting(new).count == 1 && new.subtracting(old) == [newcomer])
            }
        }
        let expected = Self.rooms.count * 3 / 7
        #expect(abs(moved - expected) < expected / 5, "\(moved) rooms moved; about \(expected) should")
        let leaving = Self.members[2]
        let shrunk = Placement(replicas: 3, members: Self.members.filter { $0 != leaving })
        for room in Self.rooms {
            let old = Set(before.owners(of: room)), new = Set(shrunk.owners(of: room))
            if old.contains(leaving) {
                #expect(new.isSuperset(of: old.subtracting([leaving])) && new.count == 3)
            } else {
                #expect(old == new, "room \(room) moved though its owners all stayed")
            }
        }
    }

    @Test func aCopyGoesOnlyOnceEveryOtherOwnerHoldsAllOfIt() {
        let own = ReplicaID(1), first = ReplicaID(2)
        var engine = NodeEngine(replica: own)
        var room = RoomState(roomID: "r")
        room.seen = VersionVector(contiguous: [own: 4, first: 2])
        engine.rooms["r"] = room
        let all = VersionVector(contiguous: [own: 4, first: 2])
        let short = VersionVector(contiguous: [own: 3, first: 2])
        #expect(engine.coveredByOwners(room: "r", views: [all, all]))
        #expect(!engine.coveredByOwners(room: "r", views: [all, short]))
        #expect(!engine.coveredByOwners(room: "r", views: [all, nil]))
        // No other owner: never covered (it is this node's to keep).
        #expect(!engine.coveredByOwners(room: "r", views: []))
    }

    @Test func aRoomHandedOffAndOwnedAgainNumbersAboveWhatItGaveBefore() throws {
        let own = ReplicaID(7)
        var engine = NodeEngine(replica: own)
        let join = NodeEngineTests.join("t", .teacher, at: engine)
        for counter in 1...3 {
            var write = join
            write.authorCounter = UInt64(counter)
            let committed = NodeEngineTests.write(write, at: &engine, room: "r")
            #expect(committed != nil)
        }
        #expect(engine.roomSequences["r"] == 3)
        let handedOff = engine.handOff(room: "r")
        let floor = try #require(handedOff)
        #expect(floor.sequence == 3 && floor.privateSequence == 0 && floor.clock == engine.sequencer.clock.last)
        #expect(engine.rooms["r"] == nil && engine.handOff(room: "r") == nil)
        // Owned again before the room came back: the next write is number 4, not 1.
        let again = NodeEngineTests.write(join, at: &engine, room: "r")
        #expect(again?.delta.sequence == 4)
        // The same after a restart, from the stored floor.
        var restarted = NodeEngine(replica: own)
        restarted.restore(floors: ["r": floor])
        // The clock is restored too: a restart stamps above what it wrote there, however
        // early its own clock reads now.
        let afterRestart = NodeEngineTests.write(join, at: &restarted, room: "r", now: 1)
        #expect(afterRestart?.delta.sequence == 4)
        #expect((afterRestart?.delta.clock.packed ?? 0) > floor.clock)
    }
}
