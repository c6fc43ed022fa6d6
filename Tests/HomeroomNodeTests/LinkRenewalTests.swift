@preconcurrency import Glibc
import HomeroomCore
import HomeroomEngine
import HomeroomWire
import Testing
@testable import HomeroomNode

/// Links to a peer that is suspect or down are reconnected every period (so the first
/// packets after a partition heals do not wait out TCP's retransmission backoff), a peer
/// that comes back keeps one subscription, and a peer down past the permanent-down
/// period is forgotten.
@Suite struct PeerTableRenewalTests {
    static func heartbeat(_ name: String, port: Int) -> WireMessage.Heartbeat {
        WireMessage.Heartbeat(node: ReplicaID(name: name), incarnation: 1, address: "tcp://10.0.0.1:\(port)",
                              publishAddress: "tcp://10.0.0.1:\(port + 1)")
    }

    @Test func downPeersAreDueOncePerPeriodAndAddressesALiveEntryUsesAreLeftToIt() {
        var table = PeerTable()
        _ = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 0)
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 0)
        let a = ReplicaID(name: "a"), b = ReplicaID(name: "b")
        let none = table.setDialer(a, 11, address: "tcp://10.0.0.1:7101")
        let replaced = table.setDialer(a, 12, address: "tcp://10.0.0.1:7101")
        #expect(none == nil)
        #expect(replaced == 11, "the dialer replaced is handed back to be closed")
        let nobody = table.renewalsDue(nowMillis: 100, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(nobody.isEmpty, "nobody is down")

        // a goes silent: suspect at 1 s and due at once, down at 2 s, due once per period.
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 900)
        _ = table.sweep(nowMillis: 1_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(table.entries[a]?.status == .suspect)
        let suspect = table.renewalsDue(nowMillis: 1_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(suspect.map(\.node) == [a], "a suspect peer's links are renewed, not only a dead one's")
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 1_900)
        let down = table.sweep(nowMillis: 2_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(down.map(\.node) == [a])
        let first = table.renewalsDue(nowMillis: 2_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(first.count == 1)
        #expect(first.first?.node == a && first.first?.dialer == 12 && first.first?.staleDialer == nil && first.first?.publishAddress == nil)
        #expect(first.first?.requestAddress == "tcp://10.0.0.1:7100")
        #expect(table.entries[a]?.subscriberDialer == 12, "the dialer stays: only its connection is replaced")
        let early = table.renewalsDue(nowMillis: 2_500, everyMillis: 1_000, silentForMillis: 1_000)
        let next = table.renewalsDue(nowMillis: 3_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(early.isEmpty, "renewed again within the period")
        #expect(next.map(\.node) == [a])

        // a came back: no longer due; its one dialer stays.
        let cameBack = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 3_100)
        let later = table.renewalsDue(nowMillis: 9_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(cameBack, "a dead peer that is heard again is connected again")
        #expect(later.filter { $0.node == a }.isEmpty)
        #expect(table.entries[a]?.subscriberDialer == 12)

        // b restarted in memory under a new id on the same addresses: the new, live
        // entry owns those links, so the old one's dialer is closed and not replaced.
        _ = table.heard(WireMessage.Heartbeat(node: ReplicaID(name: "b#2"), incarnation: 2, address: "tcp://10.0.0.1:7200",
                                              publishAddress: "tcp://10.0.0.1:7201"), nowMillis: 9_000)
        _ = table.setDialer(b, 21, address: "tcp://10.0.0.1:7201")
        _ = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 9_000)
        let restarted = table.sweep(nowMillis: 9_500, suspectMillis: 1_000, downMillis: 2_000)
        #expect(restarted.map(\.node) == [b])
        let shared = table.renewalsDue(nowMillis: 9_500, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(shared.count == 1)
        #expect(shared.first?.staleDialer == 21 && shared.first?.dialer == nil && shared.first?.requestAddress == nil)
        #expect(table.entries[b]?.subscriberDialer == nil)
    }

    /// A suspect peer that answered a probe itself lately: its REQ link works, so only its
    /// subscription is renewed (replacing the link would cut the next probe short); the
    /// probe also keeps it from down, but not past the limit without its heartbeats.
    @Test func aPeerThatAnsweredAProbeKeepsItsRequestLinkAndIsKeptOnlyUpToTheLimit() {
        var table = PeerTable()
        _ = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 0)
        let a = ReplicaID(name: "a")
        _ = table.setDialer(a, 21, address: "tcp://10.0.0.1:7101")
        _ = table.sweep(nowMillis: 1_000, suspectMillis: 1_000, downMillis: 2_000)
        let vouched = table.vouch(a, incarnation: 1, atMillis: 1_100, unheardLimitMillis: 10_000, direct: true)
        #expect(vouched)
        let renewed = table.renewalsDue(nowMillis: 1_200, everyMillis: 400, silentForMillis: 1_000)
        #expect(renewed.map(\.node) == [a])
        #expect(renewed.first?.requestAddress == nil, "the link that just answered is left alone")
        #expect(renewed.first?.dialer == 21, "the subscription is still renewed: its heartbeats do not arrive")
        // Without a direct answer for a while, the link is renewed again.
        let later = table.renewalsDue(nowMillis: 2_100, everyMillis: 400, silentForMillis: 1_000)
        #expect(later.first?.requestAddress == "tcp://10.0.0.1:7100")
        // Kept from down while vouched for; past 10 s without its heartbeats, no longer.
        let vouchedAgain = table.vouch(a, incarnation: 1, atMillis: 9_000, unheardLimitMillis: 10_000, direct: false)
        let keptUp = table.sweep(nowMillis: 10_500, suspectMillis: 1_000, downMillis: 2_000)
        let pastLimit = table.vouch(a, incarnation: 1, atMillis: 10_600, unheardLimitMillis: 10_000, direct: false)
        let down = table.sweep(nowMillis: 11_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(vouchedAgain && keptUp.isEmpty)
        #expect(!pastLimit)
        #expect(down.map(\.node) == [a])
    }

    @Test func ofSeveralDeadIdsOnOneAddressOnlyTheNewestRenewsIt() {
        var table = PeerTable()
        // b restarted in memory twice (new ids), each time on the same ports, and is down now.
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 0)
        _ = table.heard(WireMessage.Heartbeat(node: ReplicaID(name: "b#2"), incarnation: 2, address: "tcp://10.0.0.1:7200",
                                              publishAddress: "tcp://10.0.0.1:7201"), nowMillis: 1_000)
        _ = table.sweep(nowMillis: 9_000, suspectMillis: 1_000, downMillis: 2_000)
        let due = table.renewalsDue(nowMillis: 9_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(due.map(\.node) == [ReplicaID(name: "b#2")], "only the id heard last renews the shared address: \(due.map(\.node))")
        #expect(due.first?.publishAddress == "tcp://10.0.0.1:7201" && due.first?.requestAddress == "tcp://10.0.0.1:7200")
    }

    @Test func aPeerBackOnNewAddressesIsConnectedAnewAndRenewalFollowsItsAddress() {
        var table = PeerTable()
        let a = ReplicaID(name: "a")
        _ = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 0)
        table.markConnected(a)
        _ = table.setDialer(a, 7, address: "tcp://10.0.0.1:7101")
        // Restarted (same id, a store) on other ports before anyone declared it down.
        let moved = table.heard(Self.heartbeat("a", port: 7300), nowMillis: 100)
        #expect(moved, "a peer on new addresses must be connected anew")
        // Had it been missed, renewal would not redial the old address: it subscribes anew.
        _ = table.sweep(nowMillis: 5_000, suspectMillis: 1_000, downMillis: 2_000)
        let due = table.renewalsDue(nowMillis: 5_000, everyMillis: 1_000, silentForMillis: 1_000)
        #expect(due.first?.dialer == nil && due.first?.staleDialer == 7 && due.first?.publishAddress == "tcp://10.0.0.1:7301")
        #expect(due.first?.requestAddress == "tcp://10.0.0.1:7300")
    }

    @Test func aPeerDownPastThePermanentDownPeriodIsForgottenAndComesBackByGreeting() {
        var table = PeerTable()
        _ = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 0)
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 0)
        let a = ReplicaID(name: "a")
        _ = table.setDialer(a, 5, address: "tcp://10.0.0.1:7101")
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 60_000)
        _ = table.sweep(nowMillis: 60_000, suspectMillis: 1_000, downMillis: 2_000)
        #expect(table.forget(downForMillis: 300_000, expectedForMillis: 300_000, nowMillis: 60_000).isEmpty, "down, but not for long enough")
        _ = table.heard(Self.heartbeat("b", port: 7200), nowMillis: 300_000)
        let forgotten = table.forget(downForMillis: 300_000, expectedForMillis: 300_000, nowMillis: 300_000)
        #expect(forgotten.map(\.node) == [a] && forgotten.first?.subscriberDialer == 5, "the dialer is handed back to be removed")
        #expect(table.entries[a] == nil && table.entries[ReplicaID(name: "b")] != nil, "only the dead peer is forgotten")
        #expect(table.renewalsDue(nowMillis: 400_000, everyMillis: 1_000, silentForMillis: 1_000).isEmpty, "a forgotten peer is not redialled")
        let relearned = table.learn(WireMessage.Peer(node: a, address: "tcp://10.0.0.1:7100", incarnation: 1, status: .dead,
                                                     publishAddress: "tcp://10.0.0.1:7101", clusterPublishAddress: ""), nowMillis: 400_000)
        #expect(!relearned, "gossip that lists it as dead does not bring it back")
        let greeted = table.heard(Self.heartbeat("a", port: 7100), nowMillis: 400_000)
        #expect(greeted, "its own greeting does")
    }
}

@Suite(.serialized) struct LinkRenewalTests {
    @Test func aPeerDeclaredDownHasItsLinksReconnectedUntilItIsBackAndThenKeepsOneSubscription() throws {
        let cluster = try TestCluster(size: 3, label: "renew")
        #expect(cluster.meshed())
        let teacher = cluster.client("teacher", .teacher, node: 0, room: "links")
        let far = cluster.client("far", .student, node: 2, room: "links")
        defer { teacher.close(); far.close() }
        try teacher.connect()
        try far.connect()
        let node2 = cluster.nodes[2].replica
        #expect(cluster.nodes[0].metrics["links_renewed_total"] == 0)

        // Cut node 2 off for about 5 suspect periods past its down period (50 ms beats: down at 1 s).
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[2].faults = cut
        #expect(eventually(5) { !cluster.nodes[0].alivePeers.contains(node2) }, "node 0 never declared node 2 down")
        #expect(eventually(5) { cluster.nodes[0].metrics["links_renewed_total"] >= 4 },
                "links to a down peer were not reconnected every suspect period")
        cluster.nodes[2].faults = FaultPolicy()

        // Back: heard again over the new links, repaired, and renewals stop.
        #expect(cluster.meshed(), "node 2 was not heard from again after the heal")
        try far.write(.setHand(user: "far", raised: true))
        try teacher.write(.setRoomName("after the heal"))
        #expect(eventually(5) { cluster.converged(room: "links") })
        #expect(cluster.nodes[0].room("links")?.raisedHands == ["far"])
        let settled = cluster.nodes[0].metrics["links_renewed_total"]
        usleep(600_000)
        #expect(cluster.nodes[0].metrics["links_renewed_total"] == settled, "links were still being replaced after the peer came back")
        // One subscription to node 2, the one made while it was down.
        let entry = cluster.nodes[0].state.withLock { $0.peers.entries[node2] }
        #expect(entry?.subscriberDialer != nil && entry?.dialedAddress == entry?.subscribeAddress)
    }
}
