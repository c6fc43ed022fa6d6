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

    /// BLAKE2b (crypto_generichash) of `message`, keyed: how every derived key is made.
    static func keyedHash(_ message: [UInt8], key: [UInt8], length: Int) -> [UInt8] {
        precondition(ready, "libsodium failed to initialise")
        var out = [UInt8](repeating: 0, count: length)
        _ = crypto_generichash(&out, length, message, UInt64(message.count), key, key.count)
        return out
    }

    static let aeadKeyLength = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let aeadNonceLength = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let aeadTagLength = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// XChaCha20-Poly1305-IETF: `prefix || nonce || ciphertext`, the nonce random (24
    /// bytes, so random nonces never collide in practice), `prefix` authenticated too.
    static func seal(_ plaintext: [UInt8], key: [UInt8], prefix: [UInt8], additional: [UInt8]) -> [UInt8] {
        precondition(ready, "libsodium failed to initialise")
        precondition(key.count == aeadKeyLength, "an AEAD key is \(aeadKeyLength) bytes")
        let nonce = randomBytes(aeadNonceLength)
        var out = [UInt8](repeating: 0, count: prefix.count + aeadNonceLength + plaintext.count + aeadTagLength)
        var written: UInt64 = 0
        out.withUnsafeMutableBufferPointer { buffer in
            for (index, byte) in prefix.enumerated() { buffer[index] = byte }
            for (index, byte) in nonce.enumerated() { buffer[prefix.count + index] = byte }
            let cipher = buffer.baseAddress! + prefix.count + aeadNonceLength
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(cipher, &written, plaintext, UInt64(plaintext.count),
                                                           additional, UInt64(additional.count), nil, nonce, key)
        }
        return out
    }

    /// Opens `nonce || ciphertext`; nil when it was not sealed with `key` and `additional`.
    static func open(_ sealed: ArraySlice<UInt8>, key: [UInt8], additional: [UInt8]) -> [UInt8]? {
        guard ready, key.count == aeadKeyLength, sealed.count >= aeadNonceLength + aeadTagLength else { return nil }
        let bytes = Array(sealed)
        var plain = [UInt8](repeating: 0, count: bytes.count - aeadNonceLength - aeadTagLength)
        var written: UInt64 = 0
        let status = bytes.withUnsafeBufferPointer { buffer in
            crypto_aead_xchacha20poly1305_ietf_decrypt(&plain, &written, nil, buffer.baseAddress! + aeadNonceLength,
                                                       UInt64(bytes.count - aeadNonceLength), additional, UInt64(additional.count),
                                                       buffer.baseAddress!, key)
        }
        guard status == 0 else { return nil }
        return plain
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

/// The cluster's shared secret: nodes encrypt and authenticate every message to each
/// other with a key derived from it (`ClusterFraming`).
public struct ClusterKey: Sendable {
    let secret: [UInt8]
    /// The XChaCha20-Poly1305 key of node-to-node traffic: BLAKE2b keyed by the secret.
    let trafficKey: [UInt8]
    public static let length = 32

    public init(secret: [UInt8]) throws(SecurityError) {
        guard secret.count == Self.length else { throw .badKey("a cluster key is \(Self.length) bytes, this one is \(secret.count)") }
        self.init(unchecked: secret)
    }

    public static func generate() -> ClusterKey { ClusterKey(unchecked: Sodium.randomBytes(length)) }

    init(unchecked secret: [UInt8]) {
        self.secret = secret
        self.trafficKey = Sodium.keyedHash(Array("homeroom cluster traffic v1".utf8), key: secret, length: Sodium.aeadKeyLength)
    }

    /// The secret bytes, for writing the key file (and nowhere else).
    public func secretForExport() -> [UInt8] { secret }
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
