/// Node-to-node messages, encrypted and authenticated under the cluster key:
/// `"HRX1" || nonce(24) || XChaCha20-Poly1305(envelope)`, the magic authenticated as
/// additional data, the key derived from the cluster key (`ClusterKey.trafficKey`).
/// Sealed once per message, so pub/sub fan-out costs no more per subscriber; it
/// covers the PUB/SUB stream end to end, where TLS would protect each hop. Freshness
/// (replays) is the envelope's (incarnation, sequence, sent-at), checked after opening.
struct ClusterFraming: Sendable {
    static let magic: [UInt8] = Array("HRX1".utf8)
    let key: ClusterKey?

    var isEnabled: Bool { key != nil }

    /// Frames an outgoing node message (unchanged when the cluster has no key).
    func seal(_ envelope: [UInt8]) -> [UInt8] {
        guard let key else { return envelope }
        return Sodium.seal(envelope, key: key.trafficKey, prefix: Self.magic, additional: Self.magic)
    }

    enum Opened {
        case authenticated(ArraySlice<UInt8>)
        case plain(ArraySlice<UInt8>)
        case refused(reason: String)
    }

    /// Checks an incoming message. With a key, a node message must be sealed with it.
    func open(_ message: ArraySlice<UInt8>) -> Opened {
        let sealed = message.count >= Self.magic.count + Sodium.aeadNonceLength + Sodium.aeadTagLength
            && message.prefix(Self.magic.count).elementsEqual(Self.magic)
        guard sealed else { return .plain(message) }
        guard let key else { return .refused(reason: "cluster-auth-unexpected") }
        guard let body = Sodium.open(message.dropFirst(Self.magic.count), key: key.trafficKey, additional: Self.magic) else {
            return .refused(reason: "cluster-auth-failed")
        }
        return .authenticated(body[...])
    }
}
