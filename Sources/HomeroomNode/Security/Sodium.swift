import CSodium

/// libsodium, initialised once. Only this folder sees its C types.
enum Sodium {
    static let ready: Bool = sodium_init() >= 0

    static func randomBytes(_ count: Int) -> [UInt8] {
        precondition(ready, "libsodium failed to initialise")
        var bytes = [UInt8](repeating: 0, count: count)
        randombytes_buf(&bytes, count)
        return bytes
    }

    /// Constant-time comparison, for MACs.
    static func equal(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { x in
            Array(b).withUnsafeBytes { y in sodium_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}

/// An Ed25519 key pair for signing join tokens. The secret key never appears in
/// logs or errors.
public struct SigningKeys: Sendable {
    public let publicKey: [UInt8]
    let secretKey: [UInt8]

    public static func generate() -> SigningKeys {
        precondition(Sodium.ready, "libsodium failed to initialise")
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        crypto_sign_keypair(&publicKey, &secretKey)
        return SigningKeys(publicKey: publicKey, secretKey: secretKey)
    }

    init(publicKey: [UInt8], secretKey: [UInt8]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// From a 32-byte seed or a 64-byte libsodium secret key.
    public init(secret: [UInt8]) throws(SecurityError) {
        precondition(Sodium.ready, "libsodium failed to initialise")
        var publicKey = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        var secretKey = [UInt8](repeating: 0, count: Int(crypto_sign_SECRETKEYBYTES))
        switch secret.count {
        case Int(crypto_sign_SEEDBYTES):
            crypto_sign_seed_keypair(&publicKey, &secretKey, secret)
        case Int(crypto_sign_SECRETKEYBYTES):
            secretKey = secret
            crypto_sign_ed25519_sk_to_pk(&publicKey, secret)
        default:
            throw .badKey("a signing key is 32 or 64 bytes, this one is \(secret.count)")
        }
        self.init(publicKey: publicKey, secretKey: secretKey)
    }

    /// The secret key bytes, for writing the key file (and nowhere else).
    public func secretKeyForExport() -> [UInt8] { secretKey }

    func sign(_ message: [UInt8]) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        crypto_sign_detached(&signature, nil, message, UInt64(message.count), secretKey)
        return signature
    }

    static func verify(_ signature: [UInt8], _ message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard Sodium.ready, signature.count == Int(crypto_sign_BYTES), publicKey.count == Int(crypto_sign_PUBLICKEYBYTES) else { return false }
        return crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
    }
}

/// The cluster's shared secret: nodes authenticate every message to each other with it
/// (HMAC-SHA-512-256, libsodium's crypto_auth).
public struct ClusterKey: Sendable {
    let secret: [UInt8]
    public static let length = Int(crypto_auth_KEYBYTES)
    public static let macLength = Int(crypto_auth_BYTES)

    public init(secret: [UInt8]) throws(SecurityError) {
        guard secret.count == Self.length else { throw .badKey("a cluster key is \(Self.length) bytes, this one is \(secret.count)") }
        self.secret = secret
    }

    public static func generate() -> ClusterKey { ClusterKey(unchecked: Sodium.randomBytes(length)) }

    init(unchecked secret: [UInt8]) { self.secret = secret }

    /// The secret bytes, for writing the key file (and nowhere else).
    public func secretForExport() -> [UInt8] { secret }

    func mac(_ message: ArraySlice<UInt8>) -> [UInt8] {
        var tag = [UInt8](repeating: 0, count: Self.macLength)
        Array(message).withUnsafeBufferPointer { buffer in
            _ = crypto_auth(&tag, buffer.baseAddress, UInt64(buffer.count), secret)
        }
        return tag
    }

    func verify(_ tag: ArraySlice<UInt8>, _ message: ArraySlice<UInt8>) -> Bool {
        guard tag.count == Self.macLength else { return false }
        return Array(message).withUnsafeBufferPointer { buffer in
            Array(tag).withUnsafeBufferPointer { tagBuffer in
                crypto_auth_verify(tagBuffer.baseAddress!, buffer.baseAddress, UInt64(buffer.count), secret) == 0
            }
        }
    }
}

public enum SecurityError: Error, Equatable, Sendable, CustomStringConvertible {
    case badKey(String)
    case keyFile(path: String, reason: String)
    case unsafePermissions(path: String, mode: UInt32)

    public var description: String {
        switch self {
        case let .badKey(reason): return "bad key: \(reason)"
        case let .keyFile(path, reason): return "key file \(path): \(reason)"
        case let .unsafePermissions(path, mode):
            return "key file \(path) is readable by others (mode \(String(mode, radix: 8))): run chmod 600 \(path)"
        }
    }
}
