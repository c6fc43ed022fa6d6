import Foundation
import Testing
import HomeroomCore
import HomeroomEngine
import HomeroomWire
@testable import HomeroomNode

/// Placement with real nodes and clients (docs/PROTOCOL.md, "Placement"): a room lives
/// on its owners only; a client that asks another node is sent to them; a new member
/// takes over its rooms and the old copies go only once it holds them; a forgotten
/// owner's rooms get a new owner; nothing acknowledged is lost in any move.
/// The waits are async (`settles`): they hold no thread other suites need.
@Suite(.serialized) struct PlacementNodeTests {
    static func owners(_ room: String, _ cluster: TestCluster, replicas: Int) -> Set<String> {
        Set(Placement(replicas: replicas, members: cluster.nodes.map(\.name)).owners(of: room))
    }

    /// Where the room is held, and whether every holder has every dot.
    static func placed(_ room: String, _ cluster: TestCluster, replicas: Int, dots: [Dot]) -> Bool {
        let owners = owners(room, cluster, replicas: replicas)
        return cluster.nodes.allSatisfy { node in
            guard let copy = node.room(room) else { return !owners.contains(node.name) }
            return owners.contains(node.name) && dots.allSatisfy { copy.seen.contains($0) }
        }
    }

    /// In-process nodes with placement and a short settle period.
    static func placedCluster(size: Int, label: String, replicas: Int) throws -> TestCluster {
        try TestCluster(size: size, label: label, heartbeatMillis: 50) { _, config in
            config.replicas = replicas
            config.handoffSettleMillis = 300
        }
    }

    static func meshed(_ cluster: TestCluster) async -> Bool {
        await settles(within: 15) { cluster.nodes.allSatisfy { $0.alivePeers.count == cluster.nodes.count - 1 } }
    }

    /// Joins through `node` and writes one property: the acknowledged dots.
    static func classroom(_ room: String, through node: Int, _ cluster: TestCluster) throws -> (client: RoomClient, dots: [Dot]) {
        let client = cluster.client("teacher", .teacher, node: node, room: room)
        try client.connect()
        let dot = try client.write(.setRoomProperty(key: "topic", value: Array(room.utf8), cause: "placement test"))
        return (client, [dot])
    }

    /// `classroom` for each room, through node 0: the clients (closed if one fails) and
    /// each room's acknowledged dots.
    static func classrooms(_ rooms: [String], _ cluster: TestCluster) throws -> (clients: [RoomClient], dots: [String: [Dot]]) {
        var clients: [RoomClient] = []
        var dots: [String: [Dot]] = [:]
        do {
            for room in rooms {
                let (client, acknowledged) = try classroom(room, through: 0, cluster)
                clients.append(client)
                dots[room] = acknowledged
            }
        } catch {
            for client in clients { client.close() }
            throw error
        }
        return (clients, dots)
    }

    @Test func aRoomLivesOnItsOwnersOnlyAndClientsAreSentThere() async throws {
        let replicas = 2
        let cluster = try Self.placedCluster(size: 4, label: "placed", replicas: replicas)
        #expect(await Self.meshed(cluster))
        let rooms = (0..<8).map { "placed-\($0)" }
        var clients: [RoomClient] = []
        defer { for client in clients { client.close() } }
        var dots: [String: [Dot]] = [:]
        for room in rooms {
            let (client, acknowledged) = try Self.classroom(room, through: 0, cluster)
            clients.append(client)
            dots[room] = acknowledged
            let attached = cluster.nodes.first { $0.replica == client.attachedNode }?.name ?? "?"
            #expect(Self.owners(room, cluster, replicas: replicas).contains(attached),
                    "the client of \(room) is attached to \(client.attachedNode), not one of its owners")
        }
        let notOwned = rooms.filter { !Self.owners($0, cluster, replicas: replicas).contains(cluster.nodes[0].name) }
        #expect(!notOwned.isEmpty, "node 0 owns all 8 rooms: pick other room names")
        #expect(cluster.nodes[0].metrics["requests_rejected_total{reason=\"not-owner\"}"] >= UInt64(notOwned.count))
        #expect(await settles(within: 15) { rooms.allSatisfy { Self.placed($0, cluster, replicas: replicas, dots: dots[$0]!) } },
                "some room is not on exactly its owners: \(rooms.map { room in cluster.nodes.filter { $0.room(room) != nil }.count })")
        // The not-owner reply names the owners, with addresses to ask.
        let room = try #require(notOwned.first)
        let hello = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                                 message: .joinRequest(WireMessage.JoinRequest(user: "probe", role: .student, session: "probe-1", name: "Probe")))
        let reply = try WireCodec.decode(cluster.nodes[0].handleRequest(WireCodec.encode(hello)))
        guard case let .error(refusal) = reply.message else { Issue.record("a join at a non-owner got \(reply.message.kind)"); return }
        #expect(refusal.code == "not-owner")
        #expect(Set(refusal.owners.map(\.nodeName)) == Self.owners(room, cluster, replicas: replicas))
        let addresses = Set(cluster.nodes.filter { Self.owners(room, cluster, replicas: replicas).contains($0.name) }.map(\.listenAddress))
        #expect(Set(refusal.owners.map(\.address)) == addresses)
    }

    /// `owns` answers without building the member list while every member owns every
    /// room; it must say what the full placement says, whatever the peer table holds
    /// (names twice, unnamed, draining, expected origins). Seeded tables.
    @Test func theFastOwnershipAnswerIsThePlacements() {
        var checked = 0, fast = 0
        for seed in UInt64(0)..<300 {
            var rng = SplitMix64(seed: seed)
            var state = NodeState(engine: NodeEngine(replica: ReplicaID(name: "self")))
            state.replicas = Int.random(in: 1...5, using: &rng)
            state.draining = Int.random(in: 0..<10, using: &rng) == 0
            if Int.random(in: 0..<5, using: &rng) == 0 { state.roomReplicas = ["r1": Int.random(in: 0...6, using: &rng)] }
            for index in 0..<Int.random(in: 0...6, using: &rng) {
                var heartbeat = WireMessage.Heartbeat(node: ReplicaID(name: "peer-\(index)"), incarnation: 1, address: "tcp://10.0.0.\(index):7100")
                let names = ["n1", "n2", "n3", "n4", "n1", ""]
                heartbeat.nodeName = names[Int.random(in: 0..<names.count, using: &rng)]
                heartbeat.draining = Int.random(in: 0..<6, using: &rng) == 0
                _ = state.peers.heard(heartbeat, nowMillis: 0)
            }
            if Int.random(in: 0..<3, using: &rng) == 0 { state.peers.expect([ReplicaID(name: "expected")], nowMillis: 0) }
            if state.everyMemberOwnsEverything { fast += 1 }
            for room in (0..<12).map({ "r\($0)" }) {
                let placement = state.placement(ownName: "self")
                #expect(state.owns(room, ownName: "self") == placement.owns("self", room: room), "seed \(seed), \(room)")
                #expect(state.keptApart(room, ownName: "self") == (placement.copies(room) != 0), "seed \(seed), \(room)")
                checked += 1
            }
        }
        #expect(checked == 3_600 && fast > 30, "\(fast) tables took the fast answer")
    }

    /// A pinned count needs placement, a valid main room's id, and 0 to 64 copies.
    @Test func pinnedCountsAreChecked() throws {
        var config = NodeConfig(name: "x", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0")
        config.replicas = 2
        config.roomReplicas = ["hall": 5, "everywhere": 0]
        #expect(throws: Never.self) { try config.validate() }
        for bad in [["hall:g1": 5], ["hall": 65], ["hall": -1], ["no spaces": 3]] {
            config.roomReplicas = bad
            #expect(throws: NodeConfigError.self, "\(bad)") { try config.validate() }
        }
        config.roomReplicas = ["hall": 5]
        config.replicas = 0
        #expect(throws: NodeConfigError.self, "pinned without placement") { try config.validate() }
    }

    /// `--room-replicas`: a lecture hall pinned to every node of four, beside rooms on 2.
    @Test func aPinnedHallLivesOnMoreNodesThanTheDefault() async throws {
        let cluster = try TestCluster(size: 4, label: "pinned", heartbeatMillis: 50) { _, config in
            config.replicas = 2
            config.roomReplicas = ["pinned-hall": 4]
            config.handoffSettleMillis = 300
        }
        #expect(await Self.meshed(cluster))
        let (clients, dots) = try Self.classrooms(["pinned-hall", "pinned-class-0", "pinned-class-1"], cluster)
        defer { for client in clients { client.close() } }
        #expect(await settles(within: 15) { cluster.nodes.allSatisfy { $0.room("pinned-hall").map { copy in dots["pinned-hall"]!.allSatisfy { copy.seen.contains($0) } } == true } },
                "the hall is not on all 4 nodes: \(cluster.nodes.filter { $0.room("pinned-hall") != nil }.count)")
        for room in ["pinned-class-0", "pinned-class-1"] {
            #expect(await settles(within: 15) { Self.placed(room, cluster, replicas: 2, dots: dots[room]!) },
                    "\(room) is not on exactly its 2 owners: \(cluster.nodes.filter { $0.room(room) != nil }.map(\.name))")
        }
    }

    /// Four nodes, 3 copies: one owner drains, so the fourth becomes an owner of rooms it
    /// never held, with every member an owner from then on. Until it holds what the
    /// others show, it must not answer a join from an empty room (a banned user would
    /// get in, roles would be checked against nothing): every join it answers carries the
    /// acknowledged writes.
    @Test func anOwnerByAShrinkServesARoomOnlyOnceItHoldsIt() async throws {
        let cluster = try Self.placedCluster(size: 4, label: "shrink", replicas: 3)
        #expect(await Self.meshed(cluster))
        let rooms = (0..<32).map { "shrink-\($0)" }
        let (clients, dots) = try Self.classrooms(rooms, cluster)
        defer { for client in clients { client.close() } }
        #expect(await settles(within: 15) { rooms.allSatisfy { Self.placed($0, cluster, replicas: 3, dots: dots[$0]!) } })
        // Node 3 drains: node k, which kept none of `moving`, owns them all now.
        let drained = cluster.nodes[3]
        let heir = try #require(cluster.nodes.prefix(3).first { node in rooms.contains { !Self.owners($0, cluster, replicas: 3).contains(node.name) } })
        let moving = rooms.filter { !Self.owners($0, cluster, replicas: 3).contains(heir.name) }
        #expect(!moving.isEmpty && moving.allSatisfy { heir.room($0) == nil })
        #expect(drained.drain())
        var served: [String: Bool] = [:]
        var emptyAnswers: [String] = []
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline && served.count < moving.count {
            for room in moving where served[room] == nil {
                let join = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        message: .joinRequest(WireMessage.JoinRequest(user: "probe-\(room)", role: .observer, session: "p-\(room)", name: "P")))
                let reply = try WireCodec.decode(heir.handleRequest(WireCodec.encode(join)), limits: .largeReplies)
                guard case let .joinResponse(response) = reply.message else { continue }
                served[room] = true
                if !dots[room]!.allSatisfy({ response.state.seen.contains($0) }) { emptyAnswers.append(room) }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(served.count == moving.count, "the heir served \(served.count) of \(moving.count) rooms it now owns")
        #expect(emptyAnswers.isEmpty, "the heir answered joins of \(emptyAnswers) without their acknowledged writes")
    }

    @Test func aNewMemberTakesOverItsRoomsAndOldCopiesGoOnlyOnceItHoldsThem() async throws {
        let replicas = 2
        let cluster = try Self.placedCluster(size: 3, label: "takeover", replicas: replicas)
        #expect(await Self.meshed(cluster))
        let rooms = (0..<24).map { "takeover-\($0)" }
        var clients: [RoomClient] = []
        defer { for client in clients { client.close() } }
        var dots: [String: [Dot]] = [:]
        for (index, room) in rooms.enumerated() {
            let (client, acknowledged) = try Self.classroom(room, through: index % 3, cluster)
            clients.append(client)
            dots[room] = acknowledged
        }
        #expect(await settles(within: 15) { rooms.allSatisfy { Self.placed($0, cluster, replicas: replicas, dots: dots[$0]!) } })
        let before = rooms.map { Self.owners($0, cluster, replicas: replicas) }
        // A new member, met through node 2 only: nodes 0 and 1 refuse it (they learn of it
        // from node 2's peer list), so it cannot take the rooms they own yet.
        let newcomer = try cluster.add(name: "takeover-3", heartbeatMillis: 50) { config in
            config.replicas = replicas
            config.handoffSettleMillis = 300
            config.seeds = [cluster.nodes[2].listenAddress]
        }
        var cut = FaultPolicy()
        cut.blocked = [newcomer.replica]
        cluster.nodes[0].faults = cut
        cluster.nodes[1].faults = cut
        let stuck = rooms.indices.filter { before[$0] == [cluster.nodes[0].name, cluster.nodes[1].name]
            && Self.owners(rooms[$0], cluster, replicas: replicas).contains(newcomer.name) }.map { rooms[$0] }
        #expect(!stuck.isEmpty, "no room moves from nodes 0 and 1 to the new member: pick other room names")
        // Meanwhile the old owners keep every copy: each acknowledged write stays on two nodes.
        var thin: Set<String> = []
        let deadline = WallClock.monotonicMillis() + 3_000
        while WallClock.monotonicMillis() < deadline {
            for room in stuck where cluster.nodes.filter({ node in dots[room]!.allSatisfy { node.room(room)?.seen.contains($0) == true } }).count < replicas {
                thin.insert(room)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(thin.isEmpty, "copies went before the new owner held them: \(thin.sorted())")
        // Nor does the new member serve them from what it has (nothing, or the few deltas
        // that reached it): their clients, sent to it, go on to the other owner.
        #expect(stuck.allSatisfy { room in !dots[room]!.allSatisfy { newcomer.room(room)?.seen.contains($0) == true } },
                "the new member got writes from nodes it was cut from")
        let join = WireEnvelope(roomID: stuck[0], sender: ReplicaID(0), sequence: 0, clock: .zero,
                                message: .joinRequest(WireMessage.JoinRequest(user: "late", role: .student, session: "late-1", name: "Late")))
        let answer = try WireCodec.decode(newcomer.handleRequest(WireCodec.encode(join)))
        if case let .error(refusal) = answer.message {
            #expect(refusal.code == "unavailable", "\(refusal.code): \(refusal.message)")
        } else {
            Issue.record("the new member answered a join in a room it does not hold yet with \(answer.message.kind)")
        }
        cluster.nodes[0].faults = FaultPolicy()
        cluster.nodes[1].faults = FaultPolicy()
        #expect(await settles(within: 30) { rooms.allSatisfy { Self.placed($0, cluster, replicas: replicas, dots: dots[$0]!) } },
                "the rooms did not settle on their owners among 4 nodes")
        let moved = rooms.indices.filter { before[$0] != Self.owners(rooms[$0], cluster, replicas: replicas) }.count
        let handedOff = cluster.nodes.map { $0.metrics["rooms_handed_off_total"] }.reduce(0, +)
        #expect(moved > 0 && handedOff >= UInt64(moved), "\(handedOff) copies handed off for \(moved) rooms moved")
        // The clients of moved rooms follow them and keep writing.
        for (index, room) in rooms.enumerated() {
            let dot = try clients[index].write(.setRoomProperty(key: "after", value: [1], cause: "placement test"))
            #expect(await settles(within: 10) { Self.placed(room, cluster, replicas: replicas, dots: dots[room]! + [dot]) },
                    "a write after the move did not reach the owners of \(room)")
        }
    }

    @Test func aForgottenOwnersRoomsGetANewOwner() async throws {
        let replicas = 2
        let cluster = try TestCluster(size: 3, label: "forgotten", heartbeatMillis: 50) { _, config in
            config.replicas = replicas
            config.handoffSettleMillis = 300
            config.permanentDownMillis = 2_000
        }
        #expect(await Self.meshed(cluster))
        let rooms = (0..<9).map { "forgotten-\($0)" }
        var dots: [String: [Dot]] = [:]
        for (index, room) in rooms.enumerated() {
            let (client, acknowledged) = try Self.classroom(room, through: index % 3, cluster)
            client.close()
            dots[room] = acknowledged
        }
        #expect(await settles(within: 15) { rooms.allSatisfy { Self.placed($0, cluster, replicas: replicas, dots: dots[$0]!) } })
        let gone = cluster.nodes[2]
        let lost = rooms.filter { Self.owners($0, cluster, replicas: replicas).contains(gone.name) }
        #expect(!lost.isEmpty)
        gone.stop()
        cluster.nodes.removeLast()
        // Down after 1 s, forgotten after 2 s more: then both remaining nodes own every room.
        #expect(await settles(within: 20) {
            rooms.allSatisfy { room in cluster.nodes.allSatisfy { node in dots[room]!.allSatisfy { node.room(room)?.seen.contains($0) == true } } }
        }, "rooms the stopped node owned did not reach their new owner")
    }

    /// A handed-off room leaves the store, and its sequence floor stays there.
    @Test func aHandoffRemovesTheRowsAndKeepsTheFloor() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hr-placement-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/homeroom.sqlite3"
        var engine = NodeEngine(replica: ReplicaID(5))
        let join = Write(author: "t", authorRole: .teacher, authorCounter: 1,
                         operation: .joinSession(user: "t", session: "t#1", name: "T", role: .teacher, host: ReplicaID(5), incarnation: 1))
        guard case let .persist(stamped) = engine.decide(room: "moving", join, nowMillis: 1_800_000_000_000) else {
            Issue.record("the join was refused")
            return
        }
        do {
            let store = try NodeStore(path: path)
            try store.append(room: "moving", deltas: [stamped.delta])
            try store.append(room: "staying", deltas: [stamped.delta])
            try store.handOff(room: "moving", floor: SequenceFloor(sequence: 9, privateSequence: 2, clock: 5_000))
            try store.handOff(room: "moving", floor: SequenceFloor(sequence: 4, privateSequence: 1, clock: 7_000))
        }
        let reopened = try NodeStore(path: path)
        let loaded = try reopened.loadRooms()
        #expect(loaded.rooms["moving"] == nil && loaded.rooms["staying"] != nil)
        #expect(try reopened.loadFloors() == ["moving": SequenceFloor(sequence: 9, privateSequence: 2, clock: 7_000)], "a floor never goes down")
    }
}
