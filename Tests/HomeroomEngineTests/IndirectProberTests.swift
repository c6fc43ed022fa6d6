import Testing
import HomeroomCore
@testable import HomeroomEngine

/// SWIM's probes in the engine: who is probed, through whom, how often; and what a
/// probe's answer does to a peer's liveness.
@Suite struct IndirectProberTests {
    static let a = ReplicaID(name: "probe-a"), b = ReplicaID(name: "probe-b"), c = ReplicaID(name: "probe-c"),
               d = ReplicaID(name: "probe-d"), e = ReplicaID(name: "probe-e")

    /// Peers heard at `heardAt` (all at 0 but those given).
    static func peers(_ heardAt: [ReplicaID: UInt64], now: UInt64) -> [ReplicaID: PeerLiveness] {
        var peers: [ReplicaID: PeerLiveness] = [:]
        for (node, at) in heardAt {
            var liveness = PeerLiveness.heard(incarnation: 5, nowMillis: at)
            _ = liveness.sweep(nowMillis: now, suspectMillis: 1_000, downMillis: 2_000)
            peers[node] = liveness
        }
        return peers
    }

    @Test func onlyAPeerNotHeardForTheSuspectPeriodIsProbedThroughPeersHeardLately() {
        var prober = IndirectProber(fanout: 2, everyMillis: 400, seed: 1)
        let now: UInt64 = 10_000
        // b silent 1.2 s (suspect), c, d, e heard just now; a heard 900 ms ago (alive, not probed).
        let peers = Self.peers([Self.a: 9_100, Self.b: 8_800, Self.c: 9_990, Self.d: 9_990, Self.e: 9_990], now: now)
        let rounds = prober.due(peers: peers, reachable: Set(peers.keys), nowMillis: now, suspectMillis: 1_000)
        #expect(rounds.map(\.target) == [Self.b])
        let round = rounds[0]
        #expect(round.direct)
        #expect(round.helpers.count == 2)
        #expect(!round.helpers.contains(Self.b))
        #expect(Set(round.helpers).isSubset(of: [Self.a, Self.c, Self.d, Self.e]))
        // Not again before `everyMillis`; again after.
        #expect(prober.due(peers: peers, reachable: Set(peers.keys), nowMillis: now + 399, suspectMillis: 1_000).isEmpty)
        #expect(prober.due(peers: peers, reachable: Set(peers.keys), nowMillis: now + 400, suspectMillis: 1_000).map(\.target) == [Self.b])
    }

    @Test func aCutPeerIsAskedAboutNotAskedAndNeitherAreDeadOrExpectedOnes() {
        var prober = IndirectProber(fanout: 3, everyMillis: 400, seed: 2)
        let now: UInt64 = 20_000
        var peers = Self.peers([Self.b: 18_700, Self.c: 19_990, Self.d: 17_000], now: now)   // d: silent 3 s, dead
        peers[Self.e] = .expected(nowMillis: 0)
        #expect(peers[Self.d]?.health == .dead)
        // This node's link to b is cut: b is asked about, through c only.
        let rounds = prober.due(peers: peers, reachable: [Self.c, Self.d], nowMillis: now, suspectMillis: 1_000)
        #expect(rounds == [IndirectProber.Round(target: Self.b, direct: false, helpers: [Self.c])])
        // Nobody to ask at all: no round (and it is due again at once when someone is).
        var alone = IndirectProber(fanout: 3, everyMillis: 400, seed: 2)
        #expect(alone.due(peers: peers, reachable: [], nowMillis: now, suspectMillis: 1_000).isEmpty)
        #expect(alone.due(peers: peers, reachable: [Self.c], nowMillis: now + 1, suspectMillis: 1_000).map(\.target) == [Self.b])
    }

    @Test func helpersAreDrawnFromTheSeedAndSpreadOverThePeers() {
        let now: UInt64 = 50_000
        let helpers = (0..<12).map { ReplicaID(name: "helper-\($0)") }
        var heard = Dictionary(uniqueKeysWithValues: helpers.map { ($0, now - 10) })
        heard[Self.b] = now - 1_500
        let peers = Self.peers(heard, now: now)
        func draw(seed: UInt64) -> [[ReplicaID]] {
            var prober = IndirectProber(fanout: 3, everyMillis: 100, seed: seed)
            return (0..<20).map { step in
                prober.due(peers: peers, reachable: Set(peers.keys), nowMillis: now + UInt64(step) * 100, suspectMillis: 1_000)[0].helpers
            }
        }
        #expect(draw(seed: 7) == draw(seed: 7))
        #expect(draw(seed: 7) != draw(seed: 8))
        // Over 20 rounds of 3, most of the 12 peers are asked at some point.
        #expect(Set(draw(seed: 7).joined()).count >= 9)
    }

    /// A sign of life noted after the caller read its clock (another thread, under the
    /// lock first) is no silence at all, not a wrap to "silent for ever".
    @Test func aSignOfLifeNewerThanTheSweepsClockIsNoSilence() {
        var liveness = PeerLiveness.heard(incarnation: 1, nowMillis: 5_000)
        let early = liveness.sweep(nowMillis: 4_990, suspectMillis: 1_000, downMillis: 2_000)
        #expect(!early && liveness.health == .alive)
        liveness.vouched(incarnation: 1, nowMillis: 9_000)
        let beforeVouch = liveness.sweep(nowMillis: 8_500, suspectMillis: 1_000, downMillis: 2_000)
        #expect(!beforeVouch && liveness.health == .suspect)
        #expect(PeerLiveness.elapsed(since: 10, now: 4) == 0 && PeerLiveness.elapsed(since: 4, now: 10) == 6)
    }

    @Test func aVouchKeepsAPeerFromDownNotFromSuspect() {
        var liveness = PeerLiveness.heard(incarnation: 3, nowMillis: 0)
        let downEarly = liveness.sweep(nowMillis: 1_100, suspectMillis: 1_000, downMillis: 2_000)
        #expect(!downEarly && liveness.health == .suspect)
        liveness.vouched(incarnation: 3, nowMillis: 1_500)
        // Unheard for 3 s, but found alive 1.5 s ago: suspect still, not down.
        let downVouched = liveness.sweep(nowMillis: 3_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(!downVouched && liveness.health == .suspect)
        #expect(liveness.lastEvidenceMillis == 1_500)
        // An older incarnation's word proves nothing of this one; a newer one's says it is over.
        liveness.vouched(incarnation: 2, nowMillis: 3_000)
        liveness.vouched(incarnation: 4, nowMillis: 3_000)
        #expect(liveness.lastEvidenceMillis == 1_500)
        // Two seconds after the last sign of life: down.
        let down = liveness.sweep(nowMillis: 3_500, suspectMillis: 1_000, downMillis: 2_000)
        #expect(down && liveness.health == .dead)
        // A dead peer is not brought back by a vouch: only by being heard.
        liveness.vouched(incarnation: 9, nowMillis: 3_600)
        #expect(liveness.health == .dead && liveness.lastEvidenceMillis == 1_500)
        let cameBack = liveness.heard(incarnation: 4, nowMillis: 3_700)
        #expect(cameBack && liveness.health == .alive)
    }
}
