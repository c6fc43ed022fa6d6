/// Which owners of a `not-owner` reply a client follows (docs/SECURITY.md, "Redirects").
/// The client sends its join token to every node it dials, so a node's word alone is
/// not enough: an owner must be a known member, and must be as secure as the node
/// that named it.
enum RedirectPolicy {
    enum Verdict: Equatable, Sendable {
        case follow
        /// Named over TLS (`tls+tcp://`, `wss://`), but not itself TLS: the token would go in clear.
        case downgrade
        /// Neither a configured endpoint nor a member a configured node reported.
        case notMember
        /// Not an address this transport dials.
        case invalid

        var reason: String {
            switch self {
            case .follow: return "a member, as secure as the node that named it"
            case .downgrade: return "named over TLS but not a TLS address: the token would go in clear"
            case .notMember: return "not a configured node nor a member a configured node reported"
            case .invalid: return "not a transport address"
            }
        }
    }

    /// `members` and `configured` hold `key(_:)`s.
    static func verdict(owner: String, namedBy source: String, members: Set<String>, configured: Set<String>) -> Verdict {
        guard let target = try? SPAddress(owner) else { return .invalid }
        // A source that does not parse was never dialed; taken as secure, the stricter case.
        let sourceSecure = (try? SPAddress(source))?.secure ?? true
        if sourceSecure && !target.secure { return .downgrade }
        let ownerKey = key(owner)
        return configured.contains(ownerKey) || members.contains(ownerKey) ? .follow : .notMember
    }

    static func accepts(owner: String, namedBy source: String, members: Set<String>, configured: Set<String>) -> Bool {
        verdict(owner: owner, namedBy: source, members: members, configured: configured) == .follow
    }

    /// The form addresses are compared in: a network address's scheme and host are
    /// case-insensitive, so those are lowercased; anything else (ipc paths, inproc
    /// names, WebSocket paths) is compared as written.
    static func key(_ address: String) -> String {
        let networked = ["tcp://", "tcp4://", "tls+tcp://", "ws://", "wss://"]
        guard let scheme = networked.first(where: { address.lowercased().hasPrefix($0) }) else { return address }
        let rest = address.dropFirst(scheme.count)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        return scheme + rest[..<authorityEnd].lowercased() + rest[authorityEnd...]
    }
}
