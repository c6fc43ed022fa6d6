import HomeroomCore

/// Whether a new join token may take over a live session (docs/PROTOCOL.md, "Token
/// renewal"): it must name the session's user and the role the room gives that user
/// now. The token itself (signature, app, room, lifetime, revocation) is checked
/// before, as every request's is. Pure: the node's shell passes its copy of the room.
public enum TokenRenewal {
    public struct Refusal: Error, Equatable, Sendable {
        public var code: String
        public var message: String
    }

    /// A token for another user or role than the session's.
    public static let mismatchCode = "token-renewal-mismatch"

    /// The new token's expiry when `claims` may renew `session` in `room`.
    public static func check(_ claims: TokenClaims, session: SessionID, in room: RoomState) -> Result<Int64, Refusal> {
        let dead = room.deadIncarnations
        // The token's own user first: session ids are chosen by clients, so another user
        // may hold the same id, and must not make this user's renewal fail.
        let holder: (key: UserID, value: UserRecord)
        if let own = room.users[claims.user], own.isLive(session: session, deadIncarnations: dead) {
            holder = (claims.user, own)
        } else if let other = room.users.lazy.sorted(by: { $0.key < $1.key }).first(where: { $0.value.isLive(session: session, deadIncarnations: dead) }) {
            holder = other
        } else {
            return .failure(Refusal(code: "not-joined",
                                    message: "session \(session) is not live in room \(room.roomID): join again with the new token"))
        }
        if holder.key != claims.user {
            return .failure(Refusal(code: mismatchCode,
                                    message: "the new token is for \(claims.user), but session \(session) is \(holder.key)'s: a renewal keeps the user; ask for a token for \(holder.key)"))
        }
        let role = holder.value.role.value
        if claims.parsedRole != role {
            return .failure(Refusal(code: mismatchCode,
                                    message: "the new token is for the role \(claims.role), but \(holder.key) is \(role) in room \(room.roomID): a renewal keeps the role; ask for a \(role) token"))
        }
        return .success(claims.exp)
    }
}
