import HomeroomNode

extension ClassroomConfig {
    /// Whoever a join token names: its user, role and room (`room` is needed only for a
    /// token of every room, "*", and must agree with the token's otherwise). The token is
    /// read, not verified: a node started with --token-key verifies it at the join.
    public init(token: String, room: String? = nil, name: String = "", nodes: [String]) throws(ContextError) {
        guard let claims = JoinToken.peek(token) else {
            throw .invalidArgument("not a join token: paste the whole hr1.… line that `homeroom token create` printed")
        }
        guard let role = claims.parsedRole, role != .system else {
            throw .invalidArgument("the token's role '\(claims.role)' is not teacher, assistant, student or observer")
        }
        let wanted = room.flatMap { $0.isEmpty ? nil : $0 }
        let chosen: String
        if claims.room == "*" {
            guard let wanted else { throw .invalidArgument("this token is for every room: say which room to join") }
            chosen = wanted
        } else {
            if let wanted, wanted != claims.room { throw .invalidArgument("this token is for room \(claims.room), not \(wanted)") }
            chosen = claims.room
        }
        self.init(room: chosen, user: claims.user, name: name, role: role, nodes: nodes)
        self.token = token
        try validate()
    }
}
