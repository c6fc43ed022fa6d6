@preconcurrency import Glibc
import HomeroomCore

/// The revoked-users file, reread while the node runs: when its modification time
/// changes (checked every second) or on `reloadRevoked()` (SIGHUP). Users newly named
/// lose every session this node hosts at once; their tokens are refused from then on.
extension ClusterNode {
    /// Rereads the file if it changed (or `force`); returns the users newly revoked.
    @discardableResult
    public func reloadRevoked(force: Bool = false) -> Set<String> {
        guard let path = config.revokedFile else { return [] }
        var info = stat()
        guard stat(path, &info) == 0 else {
            if force { logger.error("cannot read the revoked-users file: keeping the list as it was", ["path": path, "error": String(cString: strerror(errno))]) }
            return []
        }
        let stamp = UInt64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(info.st_mtim.tv_nsec) ^ UInt64(info.st_size)
        let changed = revocation.withLock { r -> Bool in
            if r.stamp == stamp && !force { return false }
            r.stamp = stamp
            return true
        }
        guard changed else { return [] }
        guard let users = RevokedUsersFile.read(path) else {
            logger.error("cannot read the revoked-users file: keeping the list as it was", ["path": path])
            return []
        }
        let added = revocation.withLock { r -> Set<String> in
            let added = users.subtracting(r.users)
            r.users = users
            return added
        }
        metrics.add("revocations_reloaded_total")
        logger.notice("revoked users reloaded", ["path": path, "users": "\(users.count)", "newly revoked": "\(added.count)"])
        endSessions(ofRevoked: added)
        return added
    }

    func isRevoked(_ user: UserID) -> Bool { revocation.withLock { $0.users.contains(user) } }

    /// Ends every live session this node hosts for these users.
    func endSessions(ofRevoked users: Set<String>) {
        guard !users.isEmpty else { return }
        let due = state.withLock { state -> [(room: String, user: UserID, session: SessionID)] in
            var due: [(room: String, user: UserID, session: SessionID)] = []
            for (roomID, room) in state.rooms {
                for user in users {
                    guard let record = room.users[user] else { continue }
                    state.engine.topicKeys.rotate(room: roomID)
                    for session in record.sessions where session.host == replica && record.isLive(session, deadIncarnations: room.deadIncarnations) {
                        due.append((roomID, user, session.id))
                    }
                }
            }
            return due
        }
        for item in due {
            if endSessionAsNode(room: item.room, user: item.user, session: item.session) {
                metrics.add("sessions_revoked_total")
                logger.notice("session ended: its user's access was revoked", ["room": item.room, "user": item.user, "session": item.session])
            }
        }
    }
}

/// The file format: one user id per line; blank lines and `#` comments ignored.
public enum RevokedUsersFile {
    /// The users named, or nil when the file cannot be read (`errno` says why).
    public static func read(_ path: String) -> Set<String>? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var users: Set<String> = []
        var buffer = [CChar](repeating: 0, count: 1024)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
            var line = Substring(String(decoding: bytes, as: UTF8.self))
            while let last = line.last, last.isWhitespace { line = line.dropLast() }
            while let first = line.first, first.isWhitespace { line = line.dropFirst() }
            if !line.isEmpty && !line.hasPrefix("#") { users.insert(String(line)) }
        }
        return users
    }
}

/// The live revoked set and the file stamp it was read at.
struct RevocationState {
    var users: Set<String> = []
    var stamp: UInt64 = 0
}
