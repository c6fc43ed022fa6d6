import HomeroomTestSupport
import HomeroomCore
import HomeroomEngine
import Testing
@testable import HomeroomNode

/// SWIM's probes (docs/PROTOCOL.md, "Probes"): a peer only this node cannot hear is
/// found alive through the others and not declared down (its sessions would end on
/// every replica); a peer nobody hears still is. Three in-process nodes, heartbeat
/// 50 ms: suspect after 300 ms, down after 1 s.
@Suite(.serialized) struct ProbeTests {
    /// A cut between nodes 0 and 1 (both ways); node 2 hears both.
    static func cutPair(_ cluster: TestCluster) {
        var cut0 = FaultPolicy()
        cut0.blocked = [cluster.nodes[1].replica]
        var cut1 = FaultPolicy()
        cut1.blocked = [cluster.nodes[0].replica]
        cluster.nodes[0].faults = cut0
        cluster.nodes[1].faults = cut1
    }

    static func status(of peer: ReplicaID, at node: ClusterNode) -> PeerHealth? {
        node.state.withLock { $0.peers.entries[peer]?.liveness.health }
    }

    static func counter(_ node: ClusterNode, _ name: String) -> UInt64 { node.metrics.snapshot[name] ?? 0 }

    @Test func aPeerOnlyThisNodeCannotReachIsFoundAliveThroughAnotherAndNotDeclaredDown() async throws {
        let cluster = try TestCluster(size: 3, label: "probe-pair")
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed(), "the cluster did not form")
        Self.cutPair(cluster)
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        // Three down periods with the pair cut.
        try await Task.sleep(for: .seconds(3))
        #expect(Self.counter(a, "peers_declared_down_total") == 0, "node 0 declared node 1 down though node 2 hears it")
        #expect(Self.counter(b, "peers_declared_down_total") == 0, "node 1 declared node 0 down though node 2 hears it")
        #expect(Self.status(of: b.replica, at: a) == .suspect, "unheard, it is suspect (its gossip does not arrive)")
        #expect(Self.counter(a, "peers_vouched_total{by=\"another\"}") > 0)
        #expect(Self.counter(a, "probes_sent_total{kind=\"indirect\"}") > 0)
        // The cut peer itself is never asked (its link is cut).
        #expect(Self.counter(a, "probes_sent_total{kind=\"direct\"}") == 0)
        // Healed: heard again, alive.
        a.faults = FaultPolicy()
        b.faults = FaultPolicy()
        #expect(await settles(within: 5) { Self.status(of: b.replica, at: a) == .alive })
    }

    @Test func withoutProbesTheSameCutDeclaresThePeerDown() async throws {
        // The control: the test above fails without probes.
        let cluster = try TestCluster(size: 3, label: "probe-off") { _, config in config.probeHelpers = nil }
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed(), "the cluster did not form")
        Self.cutPair(cluster)
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        #expect(await settles(within: 5) { Self.status(of: b.replica, at: a) == .dead })
        #expect(Self.counter(a, "probes_sent_total{kind=\"indirect\"}") == 0)
    }

    @Test func aPeerNobodyHearsIsDeclaredDownInTheDownPeriod() async throws {
        let cluster = try TestCluster(size: 3, label: "probe-isolated")
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed(), "the cluster did not form")
        var isolated = FaultPolicy()
        isolated.isolated = true
        let (a, c) = (cluster.nodes[0], cluster.nodes[2])
        c.faults = isolated
        let cut = ContinuousClock.now
        #expect(await settles(within: 5) { Self.status(of: c.replica, at: a) == .dead })
        // Asked directly and through node 1: nobody found it alive, so no vouch delayed the down.
        #expect(ContinuousClock.now - cut < .milliseconds(2_500), "declared down only after \(ContinuousClock.now - cut)")
        #expect(Self.counter(a, "probes_sent_total{kind=\"direct\"}") > 0)
        #expect(Self.counter(a, "peers_vouched_total{by=\"another\"}") == 0)
        #expect(Self.counter(a, "peers_vouched_total{by=\"itself\"}") == 0)
    }
}
