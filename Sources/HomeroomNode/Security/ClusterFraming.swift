/// Authenticated node-to-node messages: `"HRA1" || MAC(32) || envelope`, the MAC
/// being libsodium's crypto_auth (HMAC-SHA-512-256) of the envelope under the
/// cluster key. Chosen over nng's TLS transport because it needs no certificates,
/// keeps pub/sub fan-out (one MAC per message, not per subscriber), and covers the
/// PUB/SUB stream, where TLS would only protect each hop. It authenticates, it
/// does not encrypt: see docs/SECURITY.md.
struct ClusterFraming: Sendable {
    static let magic: [UInt8] = Array("HRA1".utf8)
    let key: ClusterKey?

    var isEnabled: Bool { key != nil }

    /// Frames an outgoing node message (unchanged when the cluster has no key).
    func seal(_ envelope: [UInt8]) -> [UInt8] {
        guard let key else { return envelope }
        return Self.magic + key.mac(envelope[...]) + envelope
    }

    enum Opened {
        case authenticated(ArraySlice<UInt8>)
        case plain(ArraySlice<UInt8>)
        case refused(reason: String)
    }

    /// Checks an incoming message. With a key, a node message must be sealed with it.
    func open(_ message: ArraySlice<UInt8>) -> Opened {
        let sealed = message.count >= Self.magic.count + ClusterKey.macLength && message.prefix(Self.magic.count).elementsEqual(Self.magic)
        guard sealed else { return .plain(message) }
        guard let key else { return .refused(reason: "cluster-auth-unexpected") }
        let tagStart = message.startIndex + Self.magic.count
        let bodyStart = tagStart + ClusterKey.macLength
        let tag = message[tagStart..<bodyStart]
        let body = message[bodyStart...]
        return key.verify(tag, body) ? .authenticated(body) : .refused(reason: "cluster-auth-failed")
    }
}
