import FoundationEssentials
import HomeroomCore

/// What a join token grants. Signed with Ed25519, so any node verifies it with the
/// public key alone: no shared secret (unlike HMAC tokens).
public struct TokenClaims: Codable, Sendable, Equatable {
    /// Application id: tokens of one application are refused by another.
    public var app: String
    /// Room id, or "*" for every room.
    public var room: String
    public var user: String
    public var role: String
    /// Optional extra privileges (reserved; recorded, not yet enforced beyond the role).
    public var privileges: [String]
    /// Issued at and expiry, Unix seconds.
    public var iat: Int64
    public var exp: Int64

    public init(app: String, room: String, user: String, role: Role, privileges: [String] = [], issuedAt: Int64, expiresAt: Int64) {
        self.app = app
        self.room = room
        self.user = user
        self.role = role.description
        self.privileges = privileges
        self.iat = issuedAt
        self.exp = expiresAt
    }

    public var parsedRole: Role? { Role(name: role) }

    /// The times a token may carry: from 1970 to the end of year 9999, Unix seconds.
    public static let validSeconds: ClosedRange<Int64> = 0...253_402_300_799
}

/// `hr1.<claims, base64url JSON>.<signature, base64url>`; the signature covers
/// everything before the second dot.
public enum JoinToken {
    static let prefix = "hr1."

    public static func create(_ claims: TokenClaims, keys: SigningKeys) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let payload = (try? encoder.encode(claims)) ?? Data()
        let signed = prefix + base64url(Array(payload))
        return signed + "." + base64url(keys.sign(Array(signed.utf8)))
    }

    /// Reads claims without checking anything (for tools that show a token).
    public static func peek(_ token: String) -> TokenClaims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "hr1", let payload = unbase64url(String(parts[1])) else { return nil }
        return try? JSONDecoder().decode(TokenClaims.self, from: Data(payload))
    }

    /// The signed part, the claims and the signature, or nil when the token is not in
    /// its one canonical spelling: base64url without padding whose unused low bits are
    /// zero (otherwise several strings would decode to one token, and a revocation or
    /// cache keyed by the string could be sidestepped).
    static func split(_ token: String) -> (signed: [UInt8], claims: [UInt8], signature: [UInt8])? {
        guard token.utf8.count <= 4096, token.hasPrefix(prefix) else { return nil }
        guard let dot = token.lastIndex(of: "."), dot > token.index(token.startIndex, offsetBy: prefix.count) else { return nil }
        let signed = String(token[..<dot])
        let claimsText = String(signed.dropFirst(prefix.count))
        let signatureText = String(token[token.index(after: dot)...])
        guard let claims = unbase64url(claimsText), let signature = unbase64url(signatureText),
              base64url(claims) == claimsText, base64url(signature) == signatureText else { return nil }
        return (Array(signed.utf8), claims, signature)
    }

    static func base64url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
    }

    static func unbase64url(_ text: String) -> [UInt8]? {
        var base = text.replacing("-", with: "+").replacing("_", with: "/")
        while base.utf8.count % 4 != 0 { base += "=" }
        return Data(base64Encoded: base).map(Array.init)
    }
}

/// Why a token was refused: a stable code a client can show, and what to do.
public enum TokenError: Error, Equatable, Sendable, CustomStringConvertible {
    case missing
    case malformed
    case forged
    case expired(secondsAgo: Int64)
    case notYetValid(inSeconds: Int64)
    case wrongRoom(token: String, requested: String)
    case wrongApp
    case revoked(user: String)
    case identityMismatch(String)
    /// Valid for longer than the node allows (`--token-max-lifetime`), or expiring
    /// before it was issued.
    case badLifetime(String)

    public var code: String {
        switch self {
        case .missing: return "token-missing"
        case .malformed: return "token-malformed"
        case .forged: return "token-forged"
        case .expired: return "token-expired"
        case .notYetValid: return "token-not-yet-valid"
        case .wrongRoom: return "token-wrong-room"
        case .wrongApp: return "token-wrong-app"
        case .revoked: return "token-revoked"
        case .identityMismatch: return "token-identity-mismatch"
        case .badLifetime: return "token-lifetime"
        }
    }

    public var description: String {
        switch self {
        case .missing: return "this node requires a join token: create one with `homeroom token create`"
        case .malformed: return "the join token is not a Homeroom token (hr1.<claims>.<signature>)"
        case .forged: return "the join token's signature does not verify with this cluster's public key"
        case let .expired(ago): return "the join token expired \(ago) s ago: ask for a new one"
        case let .notYetValid(inSeconds): return "the join token is valid only in \(inSeconds) s: check the clocks"
        case let .wrongRoom(token, requested): return "the join token is for room \(token), not \(requested)"
        case .wrongApp: return "the join token is for another application"
        case let .revoked(user): return "\(user)'s access was revoked"
        case let .identityMismatch(detail): return "the request does not match its token: \(detail)"
        case let .badLifetime(detail): return "the join token's lifetime is refused: \(detail); issue one with a shorter --ttl"
        }
    }
}

/// Checks tokens against the cluster's public keys (several, for rotation).
public struct TokenVerifier: Sendable {
    public var publicKeys: [[UInt8]]
    public var app: String
    public var revokedUsers: Set<String>
    /// Clock slack, so a token issued a moment "in the future" by another machine is fine.
    public var leewaySeconds: Int64 = 30
    /// The longest lifetime (exp - iat) accepted: a leaked token is useful for no longer.
    public var maxLifetimeSeconds: Int64 = 86_400

    public init(publicKeys: [[UInt8]], app: String, revokedUsers: Set<String> = []) {
        self.publicKeys = publicKeys
        self.app = app
        self.revokedUsers = revokedUsers
    }

    public func verify(_ token: String, room: String, nowSeconds: Int64) throws(TokenError) -> TokenClaims {
        guard let parts = JoinToken.split(token) else { throw .malformed }
        guard publicKeys.contains(where: { SigningKeys.verify(parts.signature, parts.signed, publicKey: $0) }) else { throw .forged }
        guard let claims = try? JSONDecoder().decode(TokenClaims.self, from: Data(parts.claims)), claims.parsedRole != nil,
              claims.parsedRole != .system else { throw .malformed }
        guard claims.app == app else { throw .wrongApp }
        // Range first, so no arithmetic below can overflow (an issuer's bug, such as an
        // `iat` of -2^63, is a refused token, not a trapped node).
        guard TokenClaims.validSeconds.contains(claims.iat), TokenClaims.validSeconds.contains(claims.exp) else {
            throw .badLifetime("its times (iat \(claims.iat), exp \(claims.exp)) are outside \(TokenClaims.validSeconds.lowerBound)...\(TokenClaims.validSeconds.upperBound) Unix seconds")
        }
        guard claims.exp > claims.iat else { throw .badLifetime("it expires (\(claims.exp)) before it was issued (\(claims.iat))") }
        guard claims.exp - claims.iat <= maxLifetimeSeconds else {
            throw .badLifetime("\(claims.exp - claims.iat) s is longer than this node's maximum of \(maxLifetimeSeconds) s")
        }
        if nowSeconds > claims.exp + leewaySeconds { throw .expired(secondsAgo: nowSeconds - claims.exp) }
        if claims.iat > nowSeconds + leewaySeconds { throw .notYetValid(inSeconds: claims.iat - nowSeconds) }
        // A class's token also opens its breakout groups' rooms (`<room>:<group>`).
        guard claims.room == "*" || claims.room == room || Breakout.parse(roomID: room)?.mainRoom == claims.room else {
            throw .wrongRoom(token: claims.room, requested: room)
        }
        guard !revokedUsers.contains(claims.user) else { throw .revoked(user: claims.user) }
        return claims
    }
}
