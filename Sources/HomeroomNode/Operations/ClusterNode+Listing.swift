import HomeroomCore
import HomeroomWire
import HomeroomSupport

/// What operators read: the rooms this node holds (users, who is online and on stage)
/// and the members it sees (state, when last heard, how far behind this node), in the
/// answer to a client's listing hello (`homeroom rooms`, `homeroom cluster`) and on the
/// --http address (/rooms, /cluster). A node that requires tokens lists its rooms to
/// no client, and its peers only to a valid token.
extension ClusterNode {
    /// One room as an operator sees it.
    struct RoomSummary {
        var id: String
        var writes: UInt64
        var users: Int
        var online: Int
        var stage: [UserID]
    }

    /// One member as this node sees it (itself included, first).
    struct MemberSummary {
        var peer: WireMessage.Peer
        var isSelf: Bool
    }

    /// The rooms, summarised under the state lock one room at a time, copying nothing
    /// (a copy would make the next write copy the whole room), and at most once a second
    /// however many listing hellos come: a lecture hall's count costs a scan of its users.
    /// The stage is the one at `wallNow` (this node's clock, Unix ms): while a carousel
    /// runs, its turn as every replica derives it (docs/PROTOCOL.md, "Deriving the
    /// carousel"), as `homeroom carousel` and the rosters show it.
    func roomSummaries(atWallMillis wallNow: UInt64? = nil) -> [RoomSummary] {
        let now = WallClock.monotonicMillis()
        let wall = wallNow ?? wallMillis()
        return state.withLock { state in
            if let listing = state.roomListing, now &- listing.madeAtMillis < 1_000, wall < listing.turnChangesAtMillis {
                return listing.rooms
            }
            var turnChangesAt = UInt64.max
            let rooms = state.rooms.keys.sorted().map { id in
                let room = state.rooms[id]!
                let dead = room.deadIncarnations
                let turn = room.carouselTurn(atMillis: wall)
                if let turn, turn.rotates { turnChangesAt = min(turnChangesAt, turn.nextTurnAtMillis) }
                return RoomSummary(id: id, writes: room.seen.origins.values.reduce(UInt64(0)) { $0 &+ $1.highest },
                                   users: room.users.count,
                                   online: room.users.values.reduce(0) { $0 + ($1.isOnline(deadIncarnations: dead) ? 1 : 0) },
                                   stage: room.stage(during: turn))
            }
            state.roomListing = (now, turnChangesAt, rooms)
            return rooms
        }
    }

    /// This node and its peers: state, when last heard, rooms, and how many of this
    /// node's writes each peer's last heartbeat lacked (its replication lag).
    func memberSummaries() -> [MemberSummary] {
        let now = WallClock.monotonicMillis()
        let (entries, mine) = state.withLock { state in
            (state.peers.entries.values.sorted { $0.node < $1.node }, state.rooms.mapValues(\.seen))
        }
        var own = WireMessage.Peer(node: replica, address: listenAddress, incarnation: incarnation, status: .alive,
                                   publishAddress: publishAddress, clusterPublishAddress: clusterPublisher == nil ? "" : clusterPublishAddress)
        own.rooms = UInt32(clamping: mine.count)
        own.nodeName = name
        var members = [MemberSummary(peer: own, isSelf: true)]
        for entry in entries where entry.node != replica {
            var peer = WireMessage.Peer(node: entry.node, address: entry.address, incarnation: entry.incarnation, status: WireMessage.PeerStatus(entry.status),
                                        publishAddress: entry.publishAddress, clusterPublishAddress: entry.clusterPublishAddress)
            // Known only from another node's list: never heard from (UInt64.max).
            peer.heardMillisAgo = entry.heardDirectly ? now &- min(now, entry.lastHeardMillis) : .max
            peer.rooms = UInt32(clamping: entry.rooms.count)
            peer.nodeName = entry.name
            peer.draining = entry.draining
            var behind: UInt64 = 0
            for (room, seen) in mine {
                let theirs = entry.rooms[room] ?? VersionVector()
                for (origin, range) in seen.origins {
                    let have = range.contiguous, they = theirs.contiguous(origin)
                    if have > they { behind &+= have - they }
                }
            }
            peer.behind = behind
            members.append(MemberSummary(peer: peer, isSelf: false))
        }
        return members
    }

    /// "ok", or what is wrong with this node (a wedged node answers no hello at all).
    /// A stranger (a node that requires tokens, a client) learns only "ok" or "degraded",
    /// never a room id; operators read the details on --http (/healthz).
    func healthSummary(forStranger stranger: Bool) -> String {
        let (wedged, quarantined) = state.withLock { ($0.wedged, $0.quarantined.keys.sorted()) }
        if wedged == nil && quarantined.isEmpty { return "ok" }
        if stranger { return "degraded" }
        if let wedged { return "wedged: \(wedged)" }
        return "quarantined: " + quarantined.joined(separator: ", ")
    }

    /// The answer to a client's listing hello: `base` (what any hello gets) with the
    /// summaries filled in, as far as `base` shows rooms and peers at all.
    func listingHeartbeat(_ base: WireMessage.Heartbeat, stranger: Bool) -> WireMessage.Heartbeat {
        var listing = base
        listing.health = healthSummary(forStranger: stranger)
        if !base.rooms.isEmpty {
            let summaries = Dictionary(uniqueKeysWithValues: roomSummaries().map { ($0.id, $0) })
            for index in listing.rooms.indices {
                guard let summary = summaries[listing.rooms[index].roomID] else { continue }
                listing.rooms[index].users = UInt32(clamping: summary.users)
                listing.rooms[index].online = UInt32(clamping: summary.online)
                listing.rooms[index].stage = summary.stage
            }
        }
        if !base.peers.isEmpty {
            let members = Dictionary(memberSummaries().map { ($0.peer.node, $0.peer) }, uniquingKeysWith: { first, _ in first })
            for index in listing.peers.indices {
                guard let member = members[listing.peers[index].node] else { continue }
                listing.peers[index].heardMillisAgo = member.heardMillisAgo
                listing.peers[index].behind = member.behind
                listing.peers[index].rooms = member.rooms
                if listing.peers[index].nodeName.isEmpty { listing.peers[index].nodeName = member.nodeName }
            }
        }
        return listing
    }

    /// `/rooms`: one JSON object per room.
    func roomsJSON() -> String {
        let rows = roomSummaries().map { room in
            "{\"room\":\(jsonString(room.id)),\"writes\":\(room.writes),\"users\":\(room.users),\"online\":\(room.online),"
                + "\"stage\":[\(room.stage.map(jsonString).joined(separator: ","))]}"
        }
        return "[" + rows.joined(separator: ",") + "]\n"
    }

    /// `/cluster`: this node and its peers, with their state as this node sees it.
    func clusterJSON() -> String {
        let rows = memberSummaries().map { member in
            let peer = member.peer
            let state = member.isSelf ? "self" : peer.draining && peer.status == .alive ? "draining" : peer.status.name
            return "{\"name\":\(jsonString(peer.nodeName)),\"node\":\(jsonString(peer.node.description)),\"address\":\(jsonString(peer.address)),\"publish\":\(jsonString(peer.publishAddress)),"
                + "\"state\":\(jsonString(state)),\"incarnation\":\(peer.incarnation),"
                + "\"heard_ms_ago\":\(peer.heardMillisAgo == .max ? "null" : String(peer.heardMillisAgo)),"
                + "\"rooms\":\(peer.rooms),\"behind\":\(peer.behind)}"
        }
        return "[" + rows.joined(separator: ",") + "]\n"
    }
}
