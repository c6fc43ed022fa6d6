import HomeroomCore
import HomeroomWire

/// What operators read on the --http address: the rooms this node holds and the
/// members it sees (a hello lists neither to clients of a node that requires tokens).
extension ClusterNode {
    /// `/rooms`: one JSON object per room: id, writes this node has, users known.
    func roomsJSON() -> String {
        let rows = state.withLock { state in
            state.rooms.keys.sorted().map { id -> String in
                let room = state.rooms[id]!
                let writes = room.seen.origins.values.reduce(UInt64(0)) { $0 &+ $1.highest }
                return "{\"room\":\(jsonString(id)),\"writes\":\(writes),\"users\":\(room.users.count)}"
            }
        }
        return "[" + rows.joined(separator: ",") + "]\n"
    }

    /// `/cluster`: this node and its peers, with their state as this node sees it.
    func clusterJSON() -> String {
        let peers = state.withLock { $0.peers.wirePeers }
        func row(_ node: ReplicaID, _ address: String, _ publish: String, _ state: String, _ incarnation: UInt64) -> String {
            "{\"node\":\(jsonString(node.description)),\"address\":\(jsonString(address)),\"publish\":\(jsonString(publish)),\"state\":\(jsonString(state)),\"incarnation\":\(incarnation)}"
        }
        var rows = [row(replica, listenAddress, publishAddress, "self", incarnation)]
        for peer in peers where peer.node != replica {
            let name: String
            switch peer.status {
            case .alive: name = "alive"
            case .suspect: name = "suspect"
            case .dead: name = "down"
            }
            rows.append(row(peer.node, peer.address, peer.publishAddress, name, peer.incarnation))
        }
        return "[" + rows.joined(separator: ",") + "]\n"
    }
}
