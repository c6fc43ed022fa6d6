import HomeroomWire
import Synchronization

/// Closed rooms (docs/SECURITY.md, "Closed rooms"): a node that requires join tokens
/// seals what it publishes on a room's client topics, so a stranger who reaches its
/// publish address reads nothing. The room topic is sealed with the room key, a user's
/// private topic with that user's key; keys reach clients only inside join and sync
/// replies to a token that admits them.
///
/// Keys derive from a secret the node draws at start (so a restart changes them) and
/// the room's key epoch, which the node raises when someone is kicked, banned or
/// revoked: a removed user's old keys open nothing published after that. Each node
/// has its own keys; a client gets those of the node it attaches to.
public final class TopicKeyring: Sendable {
    public struct Key: Equatable, Sendable {
        public let id: [UInt8]
        let secret: [UInt8]

        public init(id: [UInt8], secret: [UInt8]) {
            self.id = id
            self.secret = secret
        }
    }

    private let secret: [UInt8]
    /// Derived keys, so a publish costs one seal and not a hash as well; dropped whole
    /// when it holds `cacheLimit` (rooms x users that published lately).
    private let cache = Mutex<[CacheKey: Key]>([:])
    private static let cacheLimit = 4_096

    private struct CacheKey: Hashable {
        var room: String
        var user: String?
        var epoch: UInt64
    }

    public init() { secret = Sodium.randomBytes(32) }

    public func roomKey(_ room: String, epoch: UInt64) -> Key {
        cached(CacheKey(room: room, user: nil, epoch: epoch)) {
            Array("homeroom room key v1".utf8) + [0] + Array(room.utf8) + [0] + Self.littleEndian(epoch)
        }
    }

    public func userKey(_ room: String, _ user: String, epoch: UInt64) -> Key {
        cached(CacheKey(room: room, user: user, epoch: epoch)) {
            Array("homeroom user key v1".utf8) + [0] + Array(room.utf8) + [0] + Array(user.utf8) + [0] + Self.littleEndian(epoch)
        }
    }

    private func cached(_ key: CacheKey, label: () -> [UInt8]) -> Key {
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let derived = derive(label())
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[key] = derived
        }
        return derived
    }

    /// What a join or sync reply gives `user`.
    public func keys(room: String, user: String, epoch: UInt64) -> WireMessage.TopicKeys {
        let shared = roomKey(room, epoch: epoch), own = userKey(room, user, epoch: epoch)
        return WireMessage.TopicKeys(roomKeyID: shared.id, roomKey: shared.secret, userKeyID: own.id, userKey: own.secret)
    }

    private func derive(_ label: [UInt8]) -> Key {
        let key = Sodium.keyedHash(label, key: secret, length: Sodium.aeadKeyLength)
        return Key(id: TopicSeal.keyID(of: key), secret: key)
    }

    private static func littleEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
}

/// A sealed topic payload: `"HRE1" || key id (8) || nonce (24) || ciphertext`, with
/// XChaCha20-Poly1305-IETF; the additional data is the topic followed by `"HRE1"`
/// and the key id, so a message cannot be moved to another topic or key.
public enum TopicSeal {
    static let magic: [UInt8] = Array("HRE1".utf8)

    static func keyID(of key: [UInt8]) -> [UInt8] {
        Sodium.keyedHash(Array("homeroom key id v1".utf8), key: key, length: WireMessage.TopicKeys.idLength)
    }

    public static func seal(_ payload: [UInt8], topic: [UInt8], key: TopicKeyring.Key) -> [UInt8] {
        let prefix = magic + key.id
        return Sodium.seal(payload, key: key.secret, prefix: prefix, additional: topic + prefix)
    }

    public static func isSealed(_ payload: ArraySlice<UInt8>) -> Bool {
        payload.count >= magic.count + WireMessage.TopicKeys.idLength && payload.prefix(magic.count).elementsEqual(magic)
    }

    public enum Opened: Equatable {
        case opened([UInt8])
        /// Sealed with a key the reader does not hold (the keys changed): sync for new ones.
        case unknownKey
        /// Sealed with the named key but does not open (altered, or moved from another topic).
        case forged
    }

    /// Opens a sealed payload (`isSealed`) with whichever of `keys` its id names.
    public static func open(_ payload: ArraySlice<UInt8>, topic: ArraySlice<UInt8>, keys: [TopicKeyring.Key]) -> Opened {
        guard isSealed(payload) else { return .forged }
        let idStart = payload.startIndex + magic.count
        let idEnd = idStart + WireMessage.TopicKeys.idLength
        let id = payload[idStart..<idEnd]
        guard let key = keys.first(where: { $0.id.elementsEqual(id) }) else { return .unknownKey }
        guard let plain = Sodium.open(payload[idEnd...], key: key.secret, additional: Array(topic) + Array(payload[..<idEnd])) else {
            return .forged
        }
        return .opened(plain)
    }
}
