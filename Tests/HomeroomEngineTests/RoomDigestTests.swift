import Testing
import HomeroomCore
@testable import HomeroomEngine

/// Gossip that announces only what changed: the receiver's view equals the sender's
/// rooms whenever the hashes match, a missed run of heartbeats shows as a mismatch (and
/// a complete list mends it), and the room table notes every change and no read.
@Suite struct RoomDigestTests {
    static func room(_ id: String, _ origins: [UInt64: UInt64]) -> RoomState {
        var room = RoomState(roomID: id)
        room.seen = VersionVector(contiguous: Dictionary(uniqueKeysWithValues: origins.map { (ReplicaID($0.key), $0.value) }))
        return room
    }

    static func bump(_ table: inout RoomTable, _ id: String, _ origin: ReplicaID) {
        var origins = table[id]?.seen.origins ?? [:]
        origins[origin, default: OriginProgress()].contiguous += 1
        table[id, default: RoomState(roomID: id)].seen = VersionVector(origins)
    }

    @Test func theRoomTableNotesEveryChangeAndNoRead() {
        var table = RoomTable(["a": Self.room("a", [1: 1]), "b": Self.room("b", [1: 1])])
        let initial = table.takeChanged(for: .gossip)
        #expect(initial == ["a", "b"], "rooms a table starts with are news to gossip")
        _ = table["a"]?.seen
        _ = table.values.count
        for _ in table {}
        let afterReads = table.takeChanged(for: .gossip)
        #expect(afterReads.isEmpty)
        table["a"]!.seen = VersionVector(contiguous: [ReplicaID(1): 2])
        table["c", default: RoomState(roomID: "c")].seen = VersionVector(contiguous: [ReplicaID(3): 1])
        table.removeValue(forKey: "b")
        table["d"] = Self.room("d", [2: 1])
        let changed = table.takeChanged(for: .gossip), again = table.takeChanged(for: .gossip)
        #expect(changed == ["a", "b", "c", "d"])
        #expect(again.isEmpty)
    }

    @Test func theHashIsFixedAcrossProcessesAndTellsVectorsApart() {
        // A constant: Swift's Hasher (seeded per process) would change it every run.
        let seen = VersionVector([ReplicaID(7): OriginProgress(contiguous: 3, early: [5, 9]), ReplicaID(2): OriginProgress(contiguous: 1)])
        #expect(RoomDigestHash.of(roomID: "room-1", seen: seen) == 0x3BB6_2518_3AA8_8EA0)
        #expect(RoomDigestHash.of(roomID: "room-1", seen: VersionVector()) == 0, "an empty vector counts as no room")
        let other = VersionVector([ReplicaID(7): OriginProgress(contiguous: 3, early: [5, 10]), ReplicaID(2): OriginProgress(contiguous: 1)])
        #expect(RoomDigestHash.of(roomID: "room-1", seen: other) != RoomDigestHash.of(roomID: "room-1", seen: seen))
        #expect(RoomDigestHash.of(roomID: "room-2", seen: seen) != RoomDigestHash.of(roomID: "room-1", seen: seen))
        // An origin with nothing seen is the same as no entry (the wire need not carry it).
        let padded = VersionVector([ReplicaID(7): OriginProgress(contiguous: 3, early: [5, 9]), ReplicaID(2): OriginProgress(contiguous: 1),
                                    ReplicaID(4): OriginProgress()])
        #expect(RoomDigestHash.of(roomID: "room-1", seen: padded) == RoomDigestHash.of(roomID: "room-1", seen: seen))
    }

    /// A sender's rooms change at random; its heartbeats are lost at random. Whenever
    /// the receiver's hash matches, its view is exactly the sender's rooms; a mismatch is
    /// answered with the complete list.
    @Test(arguments: [UInt64(20261203), 1, 2, 3, 4, 5, 6, 7])
    func aViewThatMatchesIsTheSendersRooms(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        var table = RoomTable()
        var digest = OwnRoomDigest()
        var view = PeerRoomView()
        var matches = 0, mismatches = 0, partials = 0
        var lostInARow = 0
        for round in 0..<2_000 {
            // Some rooms move; some are created; now and then one is removed.
            for _ in 0..<Int(rng.next() % 4) {
                let id = "room-\(rng.next() % 40)"
                if rng.next() % 10 == 0 {
                    table.removeValue(forKey: id)
                } else {
                    Self.bump(&table, id, ReplicaID(1 + rng.next() % 3))
                }
            }
            digest.refresh(changed: table.takeChanged(for: .gossip), in: table)
            let announcement = digest.nextHeartbeat()
            // Runs of up to five losses.
            let lost = lostInARow < 5 && rng.next() % 4 == 0
            lostInARow = lost ? lostInARow + 1 : 0
            if lost { continue }
            let listed = announcement.rooms.map { (roomID: $0, seen: table[$0]?.seen ?? VersionVector()) }
            let sender = table.all.compactMapValues { $0.seen.origins.isEmpty ? nil : $0.seen }
            let sentAt = UInt64(1_000 + round)
            if announcement.complete {
                view.replace(with: listed, sentAtMillis: sentAt)
                #expect(view.rooms == sender, "seed \(seed): a complete list is the sender's rooms")
                continue
            }
            partials += 1
            if view.apply(changes: listed, senderHash: announcement.hash, sentAtMillis: sentAt) {
                matches += 1
                #expect(view.rooms == sender, "seed \(seed), round \(round): the hashes match but the view differs; replay: swift test --filter RoomDigestTests")
                #expect(view.verifiedAtMillis == sentAt)
            } else {
                mismatches += 1
                #expect(view.verifiedAtMillis == nil, "seed \(seed): an unchecked view is no reward mark")
                // The receiver asks; the answer is the complete list.
                view.replace(with: table.all.keys.sorted().map { (roomID: $0, seen: table[$0]!.seen) }, sentAtMillis: sentAt)
                #expect(view.rooms == sender)
            }
        }
        // Runs of up to two losses pass unnoticed; longer ones with changes in them do not.
        #expect(partials > 1_000 && matches > 900 && mismatches > 0, "seed \(seed): \(partials) partial heartbeats, \(matches) matched, \(mismatches) mismatched")
    }

    @Test func fewerLostHeartbeatsThanTheRepeatsNeedNoCompleteList() {
        var table = RoomTable()
        var digest = OwnRoomDigest()
        var view = PeerRoomView()
        for round in 0..<600 {
            let id = "room-\(round % 7)"
            Self.bump(&table, id, ReplicaID(1))
            digest.refresh(changed: table.takeChanged(for: .gossip), in: table)
            let announcement = digest.nextHeartbeat()
            // Every third heartbeat arrives: two lost in a row, always.
            guard round % 3 == 0 else { continue }
            let listed = announcement.rooms.map { (roomID: $0, seen: table[$0]?.seen ?? VersionVector()) }
            if announcement.complete {
                view.replace(with: listed, sentAtMillis: 1)
            } else {
                let matched = view.apply(changes: listed, senderHash: announcement.hash, sentAtMillis: 1)
                #expect(matched, "round \(round)")
                #expect(announcement.rooms.count <= OwnRoomDigest.repeats, "only what moved in the last heartbeats is listed")
            }
        }
    }

    @Test func aCompleteListGoesOutAtTheStartAndNowAndThen() {
        var table = RoomTable((0..<50).reduce(into: [:]) { $0["room-\($1)"] = Self.room("room-\($1)", [1: 1]) })
        var digest = OwnRoomDigest()
        var complete: [Int] = []
        for round in 0..<400 {
            digest.refresh(changed: table.takeChanged(for: .gossip), in: table)
            let announcement = digest.nextHeartbeat()
            if announcement.complete {
                complete.append(round)
                #expect(announcement.rooms.count == 50)
            } else {
                #expect(announcement.rooms.isEmpty, "idle rooms cost a partial heartbeat nothing")
            }
        }
        #expect(complete == [0, 1, 2, 150, 300])
    }
}
