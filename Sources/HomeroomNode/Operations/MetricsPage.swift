import HomeroomCore
import HomeroomSupport
import HomeroomWire

/// /metrics in the Prometheus text format, and /healthz.
extension ClusterNode {
    struct Gauges {
        var rooms = 0
        var users = 0
        var online = 0
        var peersAlive = 0
        var peersSuspect = 0
        var peersDead = 0
        var logEntries: Int64 = 0
    }

    /// The gauges; users and who is online only with `countingUsers` (every user of every
    /// room, under the state lock: /metrics counts them, /healthz does not).
    func gauges(countingUsers: Bool = true) -> Gauges {
        state.withLock { state in
            var gauges = Gauges()
            gauges.rooms = state.rooms.count
            if countingUsers {
                for room in state.rooms.values {
                    gauges.users += room.users.count
                    gauges.online += room.users.values.reduce(0) { $0 + ($1.isOnline(deadIncarnations: room.deadIncarnations) ? 1 : 0) }
                }
            }
            for entry in state.peers.entries.values {
                switch entry.status {
                case .alive: gauges.peersAlive += 1
                case .suspect: gauges.peersSuspect += 1
                case .dead: gauges.peersDead += 1
                }
            }
            gauges.logEntries = Int64(state.engine.compactions.logEntries)
            return gauges
        }
    }

    static let counterHelp: [String: String] = [
        "deltas_in_total": "Deltas from other nodes applied for the first time.",
        "cluster_bytes_in_total": "Bytes this node's cluster SUB socket received, by topic (deltas, heartbeats): with node streams, what the rooms it owns or holds produce.",
        "deltas_out_total": "Deltas this node sequenced and published to the other nodes.",
        "gaps_repaired_total": "Anti-entropy pulls that brought something missing.",
        "sync_bytes_total": "Bytes of sync requests and responses this node pulled.",
        "writes_accepted_total": "Acknowledged writes accepted.",
        "writes_refused_total": "Writes refused, by code.",
        "session_folds_total": "Folds this node wrote: sessions it started that are over, removed from their user's record.",
        "sync_decode_failures_total": "Repair patches from a peer that did not decode (logged; the room stays behind that peer).",
        "own_sequence_behind_total": "Repairs that brought writes under this node's own id above its last sequence (a store restored from an old copy).",
        "rooms_recovered_total": "Quarantined rooms rebuilt from a peer and back in service.",
        "joins_refused_total": "Joins refused before the room was read, by code (rate-limited).",
        "requests_rejected_total": "Requests refused before reaching a room, by reason.",
        "cluster_rejected_total": "Cluster messages dropped as undecodable or unexpected, by reason.",
        "deltas_rejected_total": "Deltas refused, by reason (clock-ahead: the sender's clock is too far ahead).",
        "joins_total": "Peers joined through this node.",
        "peers_declared_down_total": "Nodes this node declared down.",
        "reply_bytes_total": "Bytes of replies sent on the REP socket.",
        "store_append_micros_sum": "Microseconds spent committing writes to the store.",
        "store_append_count": "Commits to the store.",
        "sessions_expired_total": "Sessions this node ended because their client stopped syncing (--session-timeout-ms).",
        "room_messages_total": "Room messages this node accepted from its clients.",
        "peer_messages_total": "Peer messages this node accepted from its clients.",
        "history_trims_total": "Trims of a room's message history this node wrote (the age limit, --message-retention).",
        "wedged_total": "Times this node stepped aside (descriptors exhausted, a stuck event loop).",
        "reward_folds_total": "Reward folds this node wrote (rewards it sequenced, counted into a floor; docs/ARCHITECTURE.md, Lifetime).",
        "deltas_deferred_total": "Reward folds that arrived before an earlier delta of their origin: not applied, repaired with the gap (docs/PROTOCOL.md, Applying a delta).",
        "writes_awaiting_peers_total": "Client writes and joins answered unavailable because the node restarted on its store and had heard no peer yet (at most --down-ms).",
        "replica_name_collisions_total": "Other node names heard whose replica ids carry this node's name hash: neither node retires older stores while both are known; rename one.",
        "replica_retirements_total": "Retirements this node wrote: older stores of its name retired in a room (docs/ARCHITECTURE.md, Lifetime).",
        "peers_forgotten_total": "Peers forgotten after the permanent-down period (--permanent-down-ms), or superseded by a newer store of their name.",
        "links_renewed_total": "Reconnections of the links to down peers (every suspect period while they are down).",
        "heartbeats_published_total": "Heartbeats this node published (every --heartbeat-ms).",
        "heartbeat_bytes_total": "Bytes of the heartbeats this node published: mostly only rooms that changed lately (docs/PROTOCOL.md, Heartbeats).",
        "probes_sent_total": "Probes of peers not heard for the suspect period, by kind (direct: the peer itself; indirect: another node asked about it; docs/PROTOCOL.md, Probes).",
        "peers_vouched_total": "Probe answers that found a silent peer alive (by itself, or by another node that hears it), keeping it from being declared down.",
        "gossip_view_mismatches_total": "Peer heartbeats whose rooms hash differed from this node's view of that peer's rooms (heartbeats with changes were missed): each asks that peer for its complete list.",
    ]

    func metricsText() -> String {
        let gauges = gauges()
        var lines: [String] = []
        func gauge(_ name: String, _ help: String, _ value: Int64) {
            lines.append("# HELP homeroom_\(name) \(help)")
            lines.append("# TYPE homeroom_\(name) gauge")
            lines.append("homeroom_\(name) \(value)")
        }
        gauge("rooms", "Rooms this node holds.", Int64(gauges.rooms))
        gauge("rooms_quarantined", "Rooms whose stored state does not load: out of service on this node (see /healthz).",
              Int64(state.withLock { $0.quarantined.count }))
        gauge("users", "Users known across this node's rooms.", Int64(gauges.users))
        gauge("users_online", "Users online across this node's rooms.", Int64(gauges.online))
        // The words of `homeroom cluster status`: alive, suspect, down.
        lines.append("# HELP homeroom_peers Other nodes by status (alive, suspect, down; \"dead\" is the same as down, kept for older dashboards).")
        lines.append("# TYPE homeroom_peers gauge")
        lines.append("homeroom_peers{status=\"alive\"} \(gauges.peersAlive)")
        lines.append("homeroom_peers{status=\"suspect\"} \(gauges.peersSuspect)")
        lines.append("homeroom_peers{status=\"down\"} \(gauges.peersDead)")
        lines.append("homeroom_peers{status=\"dead\"} \(gauges.peersDead)")
        // Per peer, by its --name: replication lag and silence, as `cluster status` shows them.
        let others = memberSummaries().filter { !$0.isSelf }.map(\.peer)
        lines.append("# HELP homeroom_peer_behind Writes this node holds that the peer's last heartbeat lacked (replication lag; 0: caught up).")
        lines.append("# TYPE homeroom_peer_behind gauge")
        for peer in others { lines.append("homeroom_peer_behind{peer=\(Self.label(peer))} \(peer.behind)") }
        lines.append("# HELP homeroom_peer_heard_seconds Seconds since this node last heard the peer (absent: never heard directly).")
        lines.append("# TYPE homeroom_peer_heard_seconds gauge")
        for peer in others where peer.heardMillisAgo != .max {
            lines.append("homeroom_peer_heard_seconds{peer=\(Self.label(peer))} \(Double(peer.heardMillisAgo) / 1000)")
        }
        lines.append("# HELP homeroom_ready 1 while this node is ready (/readyz 200), 0 while not (wedged, stopping, or cut off from every peer).")
        lines.append("# TYPE homeroom_ready gauge")
        lines.append("homeroom_ready \(readiness().ready ? 1 : 0)")
        lines.append("# HELP homeroom_subscribers Connections to the publish socket: SP/TCP subscribers (every topic) and streams (one room, or a node: docs/PROTOCOL.md, Room streams).")
        lines.append("# TYPE homeroom_subscribers gauge")
        let streams = publisher.streamSubscribers
        lines.append("homeroom_subscribers{kind=\"sp\"} \(max(0, publisher.subscribers - streams))")
        lines.append("homeroom_subscribers{kind=\"stream\"} \(streams)")
        gauge("store_log_entries", "Store log entries not yet folded into a snapshot.", gauges.logEntries)
        gauge("incarnation", "This boot's incarnation.", Int64(bitPattern: incarnation))
        gauge("open_descriptors", "File descriptors this process holds.", Int64(ProcessResources.openDescriptors()))
        gauge("descriptor_limit", "The soft descriptor limit (raised to the hard limit at start).", Int64(min(descriptorLimit, Int(Int64.max))))
        gauge("wedge_descriptors", "Descriptors at which this node steps aside (see /healthz).", Int64(min(wedgeRule.maxDescriptors, Int(Int64.max))))
        gauge("threads", "Threads of this process.", Int64(ProcessResources.threads()))
        gauge("wedged", "1 while this node has stepped aside (descriptors exhausted, a stuck event loop).", state.withLock { $0.wedged == nil ? 0 : 1 })
        lines.append("# HELP homeroom_transport_connections Connections open now, by socket.")
        lines.append("# TYPE homeroom_transport_connections gauge")
        for (name, stats) in transportLoops { lines.append("homeroom_transport_connections{socket=\"\(name)\"} \(stats.open.load(ordering: .relaxed))") }
        let transportCounters: [(String, String, (SPLoopStats) -> Int)] = [
            ("transport_accepted_total", "Connections accepted, by socket.", { $0.accepted.load(ordering: .relaxed) }),
            ("transport_refused_total", "Connections closed at once (over the connection limit, or out of descriptors), by socket.", { $0.refused.load(ordering: .relaxed) }),
            ("transport_bad_handshakes_total", "Connections dropped for a wrong or missing SP header (5 s), by socket.", { $0.badHandshakes.load(ordering: .relaxed) }),
            ("transport_oversized_total", "Connections dropped for announcing a message over the size limit, by socket.", { $0.oversized.load(ordering: .relaxed) }),
        ]
        for (metric, help, read) in transportCounters {
            lines.append("# HELP homeroom_\(metric) \(help)")
            lines.append("# TYPE homeroom_\(metric) counter")
            for (name, stats) in transportLoops { lines.append("homeroom_\(metric){socket=\"\(name)\"} \(read(stats))") }
        }
        lines.append("# HELP homeroom_requests_malformed_total Connections dropped for a request without a request id.")
        lines.append("# TYPE homeroom_requests_malformed_total counter")
        lines.append("homeroom_requests_malformed_total \(replier.malformedRequests)")

        // Counters, grouped by base name so each gets one HELP and TYPE line.
        var grouped: [String: [(String, UInt64)]] = [:]
        for (key, value) in metrics.snapshot {
            let base = key.split(separator: "{", maxSplits: 1).first.map(String.init) ?? key
            grouped[base, default: []].append((key, value))
        }
        for base in Set(Self.counterHelp.keys).union(grouped.keys).sorted() {
            lines.append("# HELP homeroom_\(base) \(Self.counterHelp[base] ?? base)")
            lines.append("# TYPE homeroom_\(base) counter")
            let series = grouped[base] ?? [(base, 0)]
            for (key, value) in series.sorted(by: { $0.0 < $1.0 }) { lines.append("homeroom_\(key) \(value)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A peer's label value: its name, else its replica id (quoted, escaped).
    static func label(_ peer: WireMessage.Peer) -> String {
        let text = peer.nodeName.isEmpty ? peer.node.description : peer.nodeName
        return "\"" + text.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"").replacing("\n", with: "\\n") + "\""
    }

    /// Readiness (/readyz), beside liveness (/healthz): a node that is alive but cut off
    /// from every peer it knows (or was given as a seed), for longer than the down
    /// period since it started, serves only what it holds and learns nothing new: not
    /// ready, so a load balancer sends clients elsewhere; restarting it would not help,
    /// so /healthz stays 200.
    func readiness() -> (ready: Bool, why: String?) {
        let (stopping, wedged, knowsPeers, booted) = state.withLock {
            ($0.stopping, $0.wedged, !$0.peers.entries.isEmpty || !config.seeds.isEmpty, $0.bootedAtMillis)
        }
        if stopping { return (false, "stopping") }
        if let wedged { return (false, "wedged: \(wedged)") }
        let alive = gauges(countingUsers: false).peersAlive
        if knowsPeers && alive == 0 && WallClock.monotonicMillis() &- booted > config.downMillis {
            return (false, "isolated: no peer alive (seeds \(config.seeds.isEmpty ? "none" : config.seeds.joined(separator: ", ")))")
        }
        return (true, nil)
    }

    func readyText() -> (Bool, String) {
        let (ready, why) = readiness()
        return (ready, "{\"ready\":\(ready),\"node\":\(jsonString(name))" + (why.map { ",\"why\":\(jsonString($0))" } ?? "") + "}\n")
    }

    func healthText() -> (Bool, String) {
        let (stopping, wedged, draining) = state.withLock { ($0.stopping, $0.wedged, $0.draining) }
        let gauges = gauges(countingUsers: false)
        // Draining is healthy (200): a liveness probe must not restart a node mid-drain;
        // clients sent here are answered not-owner and go to the owners.
        let status = stopping ? "stopping" : wedged != nil ? "wedged" : draining ? (isDrained ? "drained" : "draining") : "ok"
        let quarantined = state.withLock { $0.quarantined }.sorted { $0.key < $1.key }
            .map { "{\"room\":\(jsonString($0.key)),\"why\":\(jsonString($0.value))}" }.joined(separator: ",")
        let why = wedged.map { ",\"wedged\":\(jsonString($0))" } ?? ""
        let ready = readiness()
        return (!stopping && wedged == nil, "{\"status\":\"\(status)\"\(why),\"node\":\(jsonString(name)),\"replica\":\"\(replica)\",\"incarnation\":\(incarnation),"
            + "\"rooms\":\(gauges.rooms),\"peers_alive\":\(gauges.peersAlive),\"ready\":\(ready.ready),"
            + (ready.why.map { "\"not_ready\":\(jsonString($0))," } ?? "") + "\"quarantined\":[\(quarantined)]}\n")
    }
}
