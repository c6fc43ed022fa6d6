import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Testing
@testable import HomeroomNode

/// A published heartbeat lists only the rooms that changed lately, so a reward fold in a
/// quiet room takes its peer's checkpoint from the peer's whole view instead: a view the
/// heartbeat's hash confirms is the peer's rooms at that time, listed or not. A view the
/// hash does not confirm marks nothing.
@Suite struct GossipCheckpointTests {
    static let b = ExpectedPeerTests.b
    static let quiet = "quiet"
    static let busy = "busy"

    static func vector(_ count: UInt64) -> VersionVector { VersionVector(contiguous: [b: count]) }

    static func heartbeat(sentAt: UInt64, rooms: [(String, VersionVector)], partialHash: UInt64? = nil) -> WireMessage.Heartbeat {
        var heartbeat = WireMessage.Heartbeat(node: b, incarnation: 3, address: "tcp://10.0.0.2:7100",
                                              rooms: rooms.map { WireMessage.RoomDigest(roomID: $0.0, seen: $0.1) },
                                              publishAddress: "tcp://10.0.0.2:7101", sentAtMillis: sentAt)
        if let partialHash {
            heartbeat.roomsPartial = true
            heartbeat.roomsHash = partialHash
        }
        return heartbeat
    }

    static func hash(_ rooms: [(String, VersionVector)]) -> UInt64 {
        rooms.reduce(UInt64(0)) { $0 &+ RoomDigestHash.of(roomID: $1.0, seen: $1.1) }
    }

    @Test func aConfirmedViewIsACheckpointForARoomItsHeartbeatDidNotList() {
        var table = PeerTable()
        _ = table.heard(Self.heartbeat(sentAt: 10_000, rooms: [(Self.quiet, Self.vector(4)), (Self.busy, Self.vector(1))]), nowMillis: 1)
        let seen = Self.vector(4)
        #expect(table.rewardsCompleteBefore(room: Self.quiet, seen: seen, nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == 7_000)
        // Later heartbeats list only the busy room; their hash confirms the view.
        let later = [(Self.quiet, Self.vector(4)), (Self.busy, Self.vector(2))]
        _ = table.heard(Self.heartbeat(sentAt: 20_000, rooms: [(Self.busy, Self.vector(2))], partialHash: Self.hash(later)), nowMillis: 2)
        #expect(table.entries[Self.b]?.viewMismatched == false)
        #expect(table.rewardsCompleteBefore(room: Self.quiet, seen: seen, nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == 17_000,
                "the quiet room's checkpoint moves with the confirmed view")
        // A heartbeat whose hash the view does not match (a change was missed) marks nothing.
        _ = table.heard(Self.heartbeat(sentAt: 30_000, rooms: [(Self.busy, Self.vector(3))], partialHash: Self.hash(later) &+ 1), nowMillis: 3)
        #expect(table.entries[Self.b]?.viewMismatched == true)
        #expect(table.rewardsCompleteBefore(room: Self.quiet, seen: seen, nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == 17_000,
                "an unconfirmed view is no checkpoint")
    }

    @Test func aCheckpointWaitsForTheWritesTheConfirmedViewShows() {
        var table = PeerTable()
        let rooms = [(Self.quiet, Self.vector(9))]
        _ = table.heard(Self.heartbeat(sentAt: 10_000, rooms: rooms), nowMillis: 1)
        #expect(table.rewardsCompleteBefore(room: Self.quiet, seen: Self.vector(8), nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == nil,
                "b had 9 writes in the room then; this node has seen 8")
        #expect(table.rewardsCompleteBefore(room: Self.quiet, seen: Self.vector(9), nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == 7_000)
    }
}

/// A gap a peer's heartbeat showed is asked again at every tick until it is closed: the
/// peer's partial heartbeats no longer list a quiet room, so nothing else would ask.
@Suite struct OpenGapTests {
    @Test func anOpenGapIsQueuedAgainUntilThisNodeHoldsWhatThePeerShows() {
        let b = GossipCheckpointTests.b
        var state = NodeState(engine: NodeEngine(replica: ReplicaID(node: "a", generation: 1)))
        var room = RoomState(roomID: "quiet")
        room.seen = VersionVector(contiguous: [b: 1])
        state.rooms["quiet"] = room
        _ = state.peers.heard(GossipCheckpointTests.heartbeat(sentAt: 10_000, rooms: [("quiet", GossipCheckpointTests.vector(3))]), nowMillis: 1)
        let key = NodeState.SyncKey(peer: b, room: "quiet")
        state.pulls.wantUntilClosed(key)
        // The pull was lost (a short cut): the key left the wanted pulls without a repair.
        for _ in 0..<3 {
            #expect(state.pulls.startBatches { _ in true }.map(\.keys) == [[key]])
            state.pulls.finished(peer: b)
            #expect(state.pulls.pending.isEmpty)
            state.requeueOpenGaps()
            #expect(state.pulls.pending == [key], "an open gap is asked again")
        }
        room.seen = VersionVector(contiguous: [b: 3])
        state.rooms["quiet"] = room
        state.requeueOpenGaps()
        _ = state.pulls.startBatches { _ in true }
        state.pulls.finished(peer: b)
        state.requeueOpenGaps()
        #expect(state.pulls.pending.isEmpty && state.pulls.openGaps.isEmpty, "closed: nothing more to ask")
        // A gap whose peer is gone is dropped too.
        state.pulls.wantUntilClosed(NodeState.SyncKey(peer: ReplicaID(node: "gone", generation: 1), room: "quiet"))
        state.requeueOpenGaps()
        #expect(state.pulls.openGaps.isEmpty)
    }
}
