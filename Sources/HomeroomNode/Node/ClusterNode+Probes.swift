import HomeroomCore
import HomeroomEngine
import HomeroomSupport
import HomeroomWire

/// Failure detection's probes (docs/PROTOCOL.md, "Probes"): SWIM's ping and ping-req for
/// the peers whose heartbeats this node no longer hears. The engine's `IndirectProber`
/// picks targets and helpers; this shell sends the probes without waiting (each answer
/// lands on the link's loop) and notes the answers that find a peer alive.
extension ClusterNode {
    /// One probe to send: ask `via` whether `target` is alive (`via == target`: the peer itself).
    struct Probe {
        var target: ReplicaID
        var via: ReplicaID
        var address: String
    }

    /// The probe rounds due now, sent off the state lock.
    func probeSilentPeers() {
        let now = WallClock.monotonicMillis()
        let probes = state.withLock { state -> [Probe] in
            guard state.prober != nil, !state.faults.isolated, state.wedged == nil else { return [] }
            let entries = state.peers.entries
            // A peer whose link is cut (a fault) is not asked, but others may be asked about it.
            let reachable = Set(entries.filter { !$0.value.address.isEmpty && !state.faults.cuts($0.key) }.keys)
            let rounds = state.prober!.due(peers: entries.mapValues(\.liveness), reachable: reachable, nowMillis: now,
                                           suspectMillis: config.suspectMillis)
            return rounds.flatMap { round in
                ((round.direct ? [round.target] : []) + round.helpers).map { Probe(target: round.target, via: $0, address: entries[$0]!.address) }
            }
        }
        let timeout = Duration.milliseconds(Int64(max(config.heartbeatMillis * 2, 100)))
        for probe in probes {
            guard let requester = link(probe.address) else { continue }
            metrics.add(probe.via == probe.target ? "probes_sent_total{kind=\"direct\"}" : "probes_sent_total{kind=\"indirect\"}")
            let request = framing.seal(WireCodec.encode(envelope(room: "", .probeRequest(target: probe.target))))
            requester.send(request, timeout: timeout) { [weak self] result in
                guard let self, case let .success(bytes) = result else { return }
                self.probeAnswered(probe, bytes)
            }
        }
    }

    /// A probe's answer (on the link's loop thread): an answer that the target is alive
    /// vouches for it. Anything else (an error, a stranger's reply) changes nothing.
    private func probeAnswered(_ probe: Probe, _ bytes: [UInt8]) {
        guard let body = openReply(bytes), let decoded = try? WireCodec.decode(Array(body), limits: config.limits),
              case let .probeReply(answer) = decoded.message, answer.target == probe.target, answer.alive else { return }
        let now = WallClock.monotonicMillis()
        let vouched = state.withLock { state -> Bool in
            // A cut made since the probe left: its answer is not heard either.
            guard !state.faults.cuts(probe.via), !state.faults.isolated else { return false }
            // Alive as of when the answering node last heard it, not as of the answer; and
            // not for longer than the permanent-down period without its own heartbeats.
            let limit = config.permanentDownMillis == 0 ? nil : config.permanentDownMillis
            return state.peers.vouch(probe.target, incarnation: answer.incarnation, atMillis: now &- min(answer.heardAgoMillis, now),
                                     unheardLimitMillis: limit, direct: probe.via == probe.target)
        }
        if vouched {
            metrics.add(probe.via == probe.target ? "peers_vouched_total{by=\"itself\"}" : "peers_vouched_total{by=\"another\"}")
        }
    }

    /// What this node answers a probe about `target`: alive when it is this node, or a
    /// peer it heard itself within the suspect period (never on another node's word).
    func answerProbe(about target: ReplicaID) -> WireMessage.ProbeReply {
        if target == replica { return WireMessage.ProbeReply(target: target, alive: true, incarnation: incarnation) }
        let now = WallClock.monotonicMillis()
        return state.withLock { state in
            guard !state.faults.cuts(target) else { return WireMessage.ProbeReply(target: target, alive: false, incarnation: 0) }
            return state.peers.hears(target, nowMillis: now, suspectMillis: config.suspectMillis)
        }
    }
}
