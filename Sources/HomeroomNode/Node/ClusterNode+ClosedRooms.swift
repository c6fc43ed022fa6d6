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

    /// The keys a client with a verified token gets in its join or sync reply; the
    /// token's expiry is noted, so the keys rotate when it passes.
    func topicKeys(room: String, user: UserID, expiresAt: Int64) -> WireMessage.TopicKeys? {
        guard let keyring = topicKeyring else { return nil }
        // The token is refused from `exp + leeway` on: rotating before would hand it the new keys.
        let refusedFrom = expiresAt + (config.tokenVerifier?.leewaySeconds ?? 0) + 1
        let epoch = state.withLock { $0.engine.topicKeys.gave(room: room, expiringAt: refusedFrom) }
        return keyring.keys(room: room, user: user, epoch: epoch)
    }

    /// Rotates the keys of rooms where a token that got them is now refused (every second).
    func rotateKeysOfExpiredTokens() {
        guard topicKeyring != nil else { return }
        let now = Int64(wallMillis() / 1000)
        let rotated = state.withLock { $0.engine.topicKeys.rotateExpired(nowSeconds: now) }
        if rotated > 0 {
            metrics.add("topic_key_rotations_total", UInt64(rotated))
            metrics.add("topic_key_expiry_rotations_total", UInt64(rotated))
        }
    }

    func topicEpoch(_ room: String) -> UInt64 {
        let (epoch, rotations) = state.withLock { state -> (UInt64, UInt64) in
            (state.engine.topicKeys.epoch(of: room), state.engine.topicKeys.takeRotations())
        }
        if rotations > 0 { metrics.add("topic_key_rotations_total", rotations) }
        return epoch
    }
}
