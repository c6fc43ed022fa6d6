import HomeroomCore
import HomeroomWire

/// Closed rooms (docs/SECURITY.md): with join tokens required, what the node publishes
/// for clients is sealed (`TopicSeal`), and join and sync replies carry the keys.
extension ClusterNode {
    /// Publishes an encoded envelope on a room's topic, or on `user`'s private topic.
    func publishToClients(room: String, user: UserID? = nil, _ message: [UInt8]) {
        let topic = user.map { Topics.clientUser(room, $0) } ?? Topics.clientRoom(room)
        guard let keyring = topicKeyring else {
            try? publisher.send(topic: topic, payload: message)
            return
        }
        let epoch = topicEpoch(room)
        let key = user.map { keyring.userKey(room, $0, epoch: epoch) } ?? keyring.roomKey(room, epoch: epoch)
        try? publisher.send(topic: topic, payload: TopicSeal.seal(message, topic: topic, key: key))
    }

    /// The keys a client with a verified token gets in its join or sync reply.
    func topicKeys(room: String, user: UserID) -> WireMessage.TopicKeys? {
        topicKeyring?.keys(room: room, user: user, epoch: topicEpoch(room))
    }

    func topicEpoch(_ room: String) -> UInt64 {
        let (epoch, rotations) = state.withLock { state -> (UInt64, UInt64) in
            defer { state.topicRotations = 0 }
            return (state.topicEpochs[room] ?? 0, state.topicRotations)
        }
        if rotations > 0 { metrics.add("topic_key_rotations_total", rotations) }
        return epoch
    }
}

/// One user's removal marks: a merge that changes them kicked or banned someone.
struct RemovalMark: Equatable {
    var user: UserID
    var kicked: Stamp
    var banned: Stamp?
}

extension RoomState {
    /// This room's kick and ban stamps of the users `patch` kicks or bans.
    func removals(in patch: RoomState) -> [RemovalMark] {
        var marks: [RemovalMark] = []
        for (user, record) in patch.users where record.kicked != .origin || record.isBanned {
            let mine = users[user]
            marks.append(RemovalMark(user: user, kicked: mine?.kicked ?? .origin, banned: mine?.banned))
        }
        return marks
    }
}
