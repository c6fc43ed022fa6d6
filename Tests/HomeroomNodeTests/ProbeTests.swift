import HomeroomTestSupport
import HomeroomCore
import HomeroomEngine
import HomeroomWire
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

    /// Only nodes probe: a client's probe_request is refused; with a cluster key an
    /// unsealed one claiming to be a node is too; a node answers only from its own
    /// hearing (an unknown node is not alive, this node itself is).
    @Test func onlyNodesProbeAndAnswersComeFromOwnHearing() throws {
        let cluster = try TestCluster(size: 2, label: "probe-doors")
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed(), "the cluster did not form")
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        func ask(_ node: ClusterNode, about target: ReplicaID, sender: ReplicaID) throws -> WireMessage {
            let request = WireEnvelope(roomID: "", sender: sender, sequence: 1, clock: .zero, message: .probeRequest(target: target))
            return try WireCodec.decode(node.handleRequest(WireCodec.encode(request))).message
        }
        guard case let .error(refusal) = try ask(a, about: b.replica, sender: ReplicaID(0)) else {
            Issue.record("a client's probe was answered"); return
        }
        #expect(refusal.code == "not-allowed")
        guard case let .probeReply(known) = try ask(a, about: b.replica, sender: b.replica) else { Issue.record("no probe reply"); return }
        #expect(known.alive && known.target == b.replica && known.incarnation == b.incarnation && known.heardAgoMillis < 1_000)
        guard case let .probeReply(itself) = try ask(a, about: a.replica, sender: b.replica) else { Issue.record("no probe reply"); return }
        #expect(itself.alive && itself.incarnation == a.incarnation && itself.heardAgoMillis == 0)
        guard case let .probeReply(stranger) = try ask(a, about: ReplicaID(name: "nobody"), sender: b.replica) else { Issue.record("no probe reply"); return }
        #expect(!stranger.alive)

        let key = ClusterKey.generate()
        let sealed = try TestCluster(size: 1, label: "probe-sealed") { _, config in config.clusterKey = key }
        defer { for node in sealed.nodes { node.stop() } }
        guard case let .error(unsealed) = try ask(sealed.nodes[0], about: sealed.nodes[0].replica, sender: ReplicaID(name: "mallory")) else {
            Issue.record("an unsealed probe was answered"); return
        }
        #expect(unsealed.code == "cluster-auth-required")
    }

    @Test func aPeerNobodyHearsIsDeclaredDownInTheDownPeriod() async throws {
        let cluster = try TestCluster(size: 3, label: "probe-isolated")
        defer { for node in cluster.nodes { node.stop() } }
        #expect(cluster.meshed(), "the cluster did not form")
        var isolated = FaultPolicy()
        isolated.isolated = true
        let (a, c) = (cluster.nodes[0], cluster.nodes[2])
        let cutAt = WallClock.monotonicMillis()
        c.faults = isolated
        let cut = ContinuousClock.now
        #expect(await settles(within: 10) { Self.status(of: c.replica, at: a) == .dead })
        let took = ContinuousClock.now - cut
        // Asked directly and through node 1: nobody found it alive, so no vouch delayed the
        // down. Read from node 0's own record, not from this test's clock: the last sign of
        // life it took (heard, or vouched for) came before the suspect period after the cut
        // (a heartbeat already on its way may land after the cut; a vouch, only after a probe,
        // which waits for the suspect period), so it was declared down one down period after
        // the cut, however late a loaded machine ran this test.
        let evidence = a.state.withLock { $0.peers.entries[c.replica]?.liveness.lastEvidenceMillis } ?? .max
        #expect(evidence < cutAt + a.config.suspectMillis,
                "node 0 took a sign of life \(Int64(bitPattern: evidence &- cutAt)) ms after the cut (declared down after \(took))")
        // And the test's clock, generously (five down periods): a hang, or seconds off.
        #expect(took < .milliseconds(5 * Int64(a.config.downMillis)), "declared down only after \(took)")
        #expect(Self.counter(a, "probes_sent_total{kind=\"direct\"}") > 0)
        #expect(Self.counter(a, "peers_vouched_total{by=\"another\"}") == 0)
        #expect(Self.counter(a, "peers_vouched_total{by=\"itself\"}") == 0)
    }
}
