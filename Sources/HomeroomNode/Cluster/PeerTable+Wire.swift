import HomeroomCore
import HomeroomEngine
import HomeroomWire

/// The engine's membership table (`PeerTable`) read from, and written to, the wire.
extension PeerTable {
    mutating func heard(_ heartbeat: WireMessage.Heartbeat, nowMillis: UInt64) -> Bool {
        heard(PeerHeartbeat(heartbeat), nowMillis: nowMillis)
    }

    mutating func learn(_ peer: WireMessage.Peer, nowMillis: UInt64) -> Bool {
        learn(ListedPeer(peer), nowMillis: nowMillis)
    }

    /// The probe reply about `node`: only from this node's own hearing.
    func hears(_ node: ReplicaID, nowMillis: UInt64, suspectMillis: UInt64) -> WireMessage.ProbeReply {
        let hearing = hearing(of: node, nowMillis: nowMillis, suspectMillis: suspectMillis)
        return WireMessage.ProbeReply(target: node, alive: hearing.alive, incarnation: hearing.incarnation, heardAgoMillis: hearing.agoMillis)
    }

    /// Every peer as the heartbeats list it.
    var wirePeers: [WireMessage.Peer] {
        listed.map { peer in
            var wire = WireMessage.Peer(node: peer.node, address: peer.address, incarnation: peer.incarnation,
                                        status: WireMessage.PeerStatus(peer.status), publishAddress: peer.publishAddress,
                                        clusterPublishAddress: peer.clusterPublishAddress)
            wire.nodeName = peer.nodeName
            wire.draining = peer.draining
            return wire
        }
    }
}

extension PeerHeartbeat {
    init(_ heartbeat: WireMessage.Heartbeat) {
        self.init(node: heartbeat.node, incarnation: heartbeat.incarnation, nodeName: heartbeat.nodeName, address: heartbeat.address,
                  publishAddress: heartbeat.publishAddress, clusterPublishAddress: heartbeat.clusterPublishAddress,
                  draining: heartbeat.draining, rooms: heartbeat.rooms.map { (roomID: $0.roomID, seen: $0.seen) },
                  roomsPartial: heartbeat.roomsPartial, roomsHash: heartbeat.roomsHash, sentAtMillis: heartbeat.sentAtMillis)
        roomStreams = heartbeat.roomStreams
    }
}

extension ListedPeer {
    init(_ peer: WireMessage.Peer) {
        self.init(node: peer.node, address: peer.address, incarnation: peer.incarnation, status: PeerHealth(peer.status),
                  publishAddress: peer.publishAddress, clusterPublishAddress: peer.clusterPublishAddress,
                  nodeName: peer.nodeName, draining: peer.draining)
    }
}

extension PeerHealth {
    init(_ status: WireMessage.PeerStatus) {
        switch status {
        case .alive: self = .alive
        case .suspect: self = .suspect
        case .dead: self = .dead
        }
    }
}

extension WireMessage.PeerStatus {
    init(_ health: PeerHealth) {
        switch health {
        case .alive: self = .alive
        case .suspect: self = .suspect
        case .dead: self = .dead
        }
    }
}
