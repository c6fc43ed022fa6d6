import HomeroomContext

/// Breakout groups from the page (GroupContext): create, random groups, move a user,
/// remove one, end all, broadcast. The node refuses what the role may not do.
extension PageAction {
    func performGroup(on groups: GroupContext) throws(ContextError) {
        switch self.do {
        case "group-create":
            let id = try groupID()
            try groups.create(id, name: name?.isEmpty == false ? name : nil)
        case "group-random":
            guard let count else { throw .invalidArgument("how many groups?") }
            try groups.createRandom(count: count)
        case "group-move": try groups.move([try target()], to: try moveDestination())
        case "group-remove": try groups.remove(try groupID())
        case "group-end": try groups.endAll()
        case "group-broadcast":
            guard let text, !text.isEmpty else { throw .invalidArgument("type a message first") }
            guard !groups.groups.isEmpty else { throw .invalidArgument("there are no breakout groups to broadcast to") }
            try groups.broadcast(text)
        default:
            throw .invalidArgument("unknown group action '\(self.do)'")
        }
    }

    private func groupID() throws(ContextError) -> String {
        guard let group, !group.isEmpty else { throw .invalidArgument("this action needs a group id, e.g. g1") }
        return group
    }

    /// Where a move goes: a group, or the main room (no group, or "main").
    func moveDestination() throws(ContextError) -> String? {
        guard let group, !group.isEmpty, group != "main" else { return nil }
        return group
    }
}
