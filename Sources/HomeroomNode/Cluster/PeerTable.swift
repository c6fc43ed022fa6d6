import HomeroomCore
import HomeroomWire

/// What a node knows of the other nodes: addresses, incarnation, when it last heard
/// from each, and the version vectors they last advertised per room.
struct PeerTable {
    struct Entry {
        var node: ReplicaID
        var address: String
        var publishAddress: String
        /// Its node-only PUB socket, if it has one: where this node subscribes.
        var clusterPublishAddress = ""
        var incarnation: UInt64
        var lastHeardMillis: UInt64
        var status: WireMessage.PeerStatus
        var rooms: [String: VersionVector] = [:]
        var connected = false
    }

    private(set) var entries: [ReplicaID: Entry] = [:]

    /// Records a heartbeat (or hello) from a node; returns true when the node is new
    /// or came back (so the caller connects to it).
    mutating func heard(_ heartbeat: WireMessage.Heartbeat, nowMillis: UInt64) -> Bool {
        if var entry = entries[heartbeat.node] {
            let cameBack = entry.status == .dead
            entry.address = heartbeat.address
            if !heartbeat.publishAddress.isEmpty { entry.publishAddress = heartbeat.publishAddress }
            entry.clusterPublishAddress = heartbeat.clusterPublishAddress
            entry.incarnation = max(entry.incarnation, heartbeat.incarnation)
            entry.lastHeardMillis = nowMillis
            entry.status = .alive
            for room in heartbeat.rooms { entry.rooms[room.roomID] = room.seen }
            entries[heartbeat.node] = entry
            return cameBack || !entry.connected
        }
        var entry = Entry(node: heartbeat.node, address: heartbeat.address, publishAddress: heartbeat.publishAddress,
                          clusterPublishAddress: heartbeat.clusterPublishAddress,
                          incarnation: heartbeat.incarnation, lastHeardMillis: nowMillis, status: .alive)
        for room in heartbeat.rooms { entry.rooms[room.roomID] = room.seen }
        entries[heartbeat.node] = entry
        return true
    }

    /// Learns of a node second-hand (from another's peer list): never marks it alive.
    mutating func learn(_ peer: WireMessage.Peer, nowMillis: UInt64) -> Bool {
        guard entries[peer.node] == nil, peer.status != .dead, !peer.publishAddress.isEmpty else { return false }
        entries[peer.node] = Entry(node: peer.node, address: peer.address, publishAddress: peer.publishAddress,
                                   clusterPublishAddress: peer.clusterPublishAddress,
                                   incarnation: peer.incarnation, lastHeardMillis: nowMillis, status: .suspect)
        return true
    }

    mutating func markConnected(_ node: ReplicaID) { entries[node]?.connected = true }

    /// Moves silent nodes to suspect, then dead; returns the nodes newly dead.
    mutating func sweep(nowMillis: UInt64, suspectMillis: UInt64, downMillis: UInt64) -> [Entry] {
        var died: [Entry] = []
        for (node, entry) in entries where entry.status != .dead {
            let silent = nowMillis &- entry.lastHeardMillis
            if silent >= downMillis {
                entries[node]!.status = .dead
                died.append(entries[node]!)
            } else if silent >= suspectMillis {
                entries[node]!.status = .suspect
            }
        }
        return died
    }

    /// Marks a node dead at once (it said goodbye).
    mutating func markDead(_ node: ReplicaID) -> Entry? {
        guard var entry = entries[node], entry.status != .dead else { return nil }
        entry.status = .dead
        entries[node] = entry
        return entry
    }

    var alive: [Entry] { entries.values.filter { $0.status != .dead }.sorted { $0.node < $1.node } }

    var wirePeers: [WireMessage.Peer] {
        entries.values.sorted { $0.node < $1.node }.map {
            WireMessage.Peer(node: $0.node, address: $0.address, incarnation: $0.incarnation, status: $0.status,
                             publishAddress: $0.publishAddress, clusterPublishAddress: $0.clusterPublishAddress)
        }
    }
}
