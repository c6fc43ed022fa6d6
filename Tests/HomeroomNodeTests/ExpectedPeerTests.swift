import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Testing
@testable import HomeroomNode

/// A node that starts knows no peer, but its rooms name every node that wrote in them.
/// Reward folds wait for those until heard or forgotten: a node restarted cut off from
/// the others must not take its rewards as complete while a copy of one may sit at a
/// node it has not heard from (the simulation found it counted twice otherwise).
@Suite struct ExpectedPeerTests {
    static let room = "room"
    static let b = ReplicaID(node: "b", generation: 7)

    static func heartbeat(sentAt: UInt64, seenOfB: UInt64) -> WireMessage.Heartbeat {
        WireMessage.Heartbeat(node: b, incarnation: 3, address: "tcp://10.0.0.2:7100",
                              rooms: [WireMessage.RoomDigest(roomID: room, seen: VersionVector(contiguous: [b: seenOfB]))],
                              publishAddress: "tcp://10.0.0.2:7101", sentAtMillis: sentAt)
    }

    /// An engine whose one room holds writes of itself (a), of b, and of b's private-topic
    /// origin, and whose own older store wrote too.
    static func engine() -> NodeEngine {
        let own = ReplicaID(node: "a", generation: 9)
        let older = ReplicaID(node: "a", generation: 2)
        var state = RoomState(roomID: room)
        state.seen = VersionVector(contiguous: [own: 4, older: 2, b: 5, b.privateForm: 1, own.privateForm: 3])
        return NodeEngine(replica: own, rooms: [room: state])
    }

    @Test func theWritersARoomNamesAreTheOtherNodesOrigins() {
        #expect(Self.engine().writersToHearFrom() == [Self.b, Self.b.privateForm], "not itself, its private form or its older store")
    }

    /// Which origin is whose private form cannot be told from an id (ids from before
    /// structured ids have any bits, these two both of the top ones): once a node is
    /// known, the expected origin that is its private form goes, and is not expected again.
    @Test func anExpectedPrivateFormGoesOnceItsNodeIsKnown() {
        let legacy = ReplicaID(0xC123_4567_89AB_CDEF)
        var table = PeerTable()
        table.expect([legacy, legacy.privateForm], nowMillis: 0)
        #expect(table.entries.count == 2)
        _ = table.heard(WireMessage.Heartbeat(node: legacy, incarnation: 2, address: "tcp://10.0.0.3:7100", publishAddress: "tcp://10.0.0.3:7101"),
                        nowMillis: 10)
        #expect(table.entries[legacy.privateForm] == nil, "its writes come with the node's heartbeats")
        table.expect([legacy, legacy.privateForm], nowMillis: 20)
        #expect(table.entries[legacy.privateForm] == nil)
        #expect(table.entries.count == 1)
    }

    @Test func rewardFoldsWaitForAnExpectedNodeUntilItsHeartbeatIsConfirmed() {
        var table = PeerTable()
        table.expect([Self.b], nowMillis: 1_000)
        let seen = VersionVector(contiguous: [Self.b: 5])
        #expect(table.rewardsCompleteBefore(room: Self.room, seen: seen, nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == nil,
                "b may hold a copy of a reward this node has not seen")
        // Its silence declares nothing down: no incarnation of it is known to end.
        let declared = table.sweep(nowMillis: 10_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(declared.isEmpty)
        #expect(table.entries[Self.b]?.status == .dead)
        // Heard: its heartbeat is confirmed once this node has b's writes up to it.
        let cameBack = table.heard(Self.heartbeat(sentAt: 50_000, seenOfB: 5), nowMillis: 11_000)
        #expect(cameBack, "heard: connected")
        #expect(table.rewardsCompleteBefore(room: Self.room, seen: seen, nowMillis: 100_000, windowMillis: 3_000, driftMillis: 0) == 47_000)
    }

    @Test func aNodeForgottenIsNotExpectedAgainUntilHeard() {
        var table = PeerTable()
        let writers: Set<ReplicaID> = [Self.b]
        table.expect(writers, nowMillis: 0)
        _ = table.sweep(nowMillis: 5_000, suspectMillis: 1_000, downMillis: 2_000)
        // Down peers never forgotten (--permanent-down-ms 0): an expected origin still is.
        let gone = table.forget(downForMillis: nil, expectedForMillis: 300_000, nowMillis: 300_000)
        #expect(gone.map(\.node) == [Self.b])
        table.expect(writers, nowMillis: 300_001)
        #expect(table.entries[Self.b] == nil, "forgotten: folds no longer wait for it")
        #expect(table.rewardsCompleteBefore(room: Self.room, seen: VersionVector(), nowMillis: 400_000, windowMillis: 3_000, driftMillis: 0) == 397_000)
        _ = table.heard(Self.heartbeat(sentAt: 1, seenOfB: 0), nowMillis: 400_000)
        #expect(table.entries[Self.b]?.status == .alive)
    }

    /// Knowing no peer (just restarted), a node's own clock stands in for the nodes it has
    /// not heard of, whose clocks may lag it by the drift limit: its rewards are complete
    /// only that much earlier, so none of them can still admit a copy it folds.
    @Test func withNoPeerKnownRewardsAreCompleteOnlyADriftLimitEarlier() {
        var table = PeerTable()
        let before = table.rewardsCompleteBefore(room: Self.room, seen: VersionVector(), nowMillis: 100_000, windowMillis: 3_000, driftMillis: 2_500)
        #expect(before == 94_500)
        // A node whose clock lags by less than the limit admits a reward only within its
        // window: issued at or after 99,000 - 3,000 = 96,000 for a lag of 1,000.
        let laggingNodesEarliestAdmission: UInt64 = 100_000 - 1_000 - 3_000
        #expect(before.map { $0 <= laggingNodesEarliestAdmission } == true)
        // Early on, before a window and a drift limit have passed, nothing is complete.
        #expect(table.rewardsCompleteBefore(room: Self.room, seen: VersionVector(), nowMillis: 4_000, windowMillis: 3_000, driftMillis: 2_500) == 0)
    }

    @Test func anExpectedNodeTakesTheAddressesAnotherNodeListsForIt() {
        var table = PeerTable()
        table.expect([Self.b], nowMillis: 0)
        let listed = WireMessage.Peer(node: Self.b, address: "tcp://10.0.0.2:7100", incarnation: 3, status: .alive,
                                      publishAddress: "tcp://10.0.0.2:7101")
        let learned = table.learn(listed, nowMillis: 1_900)
        #expect(learned, "learned: the caller connects to it")
        let early = table.sweep(nowMillis: 2_100, suspectMillis: 1_000, downMillis: 2_000)
        #expect(early.isEmpty, "its silence counts from when it was learned, not from when it was expected")
        #expect(table.entries[Self.b]?.address == "tcp://10.0.0.2:7100")
        #expect(table.entries[Self.b]?.incarnation == 3)
        #expect(table.entries[Self.b]?.status == .suspect, "a list never marks a node alive")
        // Now its silence is a down of incarnation 3.
        let down = table.sweep(nowMillis: 3_900, suspectMillis: 1_000, downMillis: 2_000)
        #expect(down.map(\.incarnation) == [3])
    }

    @Test func withoutPermanentDownANodeHeardAndDownStays() {
        var table = PeerTable()
        let c = ReplicaID(name: "c")
        _ = table.heard(WireMessage.Heartbeat(node: c, incarnation: 1, address: "tcp://10.0.0.4:7100", publishAddress: "tcp://10.0.0.4:7101"),
                        nowMillis: 0)
        _ = table.sweep(nowMillis: 5_000, suspectMillis: 1_000, downMillis: 2_000)
        let gone = table.forget(downForMillis: nil, expectedForMillis: 300_000, nowMillis: 900_000)
        #expect(gone.isEmpty)
        #expect(table.entries[c]?.status == .dead)
    }
}
