import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Flexible Classroom's breakout groups (AgoraEduGroupContext): up to 20 groups of up to
/// 17 members in a small classroom. Each group meets in a room of its own
/// (`<room>:<group id>`, with its own stage, chat and whiteboard grants); the main room
/// keeps who is in which, so its roster shows it and every member knows where to go.
/// Teacher and assistant create, fill, move, visit, broadcast to and end the groups.
public final class GroupContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any GroupHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any GroupHandler) { session.unregister(handler) }

    /// The live groups, by id.
    public var groups: [BreakoutGroup] { session.replica.breakout }

    /// The group the local user is in (nil: the main room).
    public var localGroup: BreakoutGroup? {
        let replica = session.replica
        guard let id = replica.breakoutGroup(of: session.config.user) else { return nil }
        return replica.breakout.first { $0.id == id }
    }

    /// Creates (or renames) a group; its members join its room (`joinGroup`).
    public func create(_ id: String, name: String? = nil) throws(ContextError) {
        guard Breakout.isValidID(id) else { throw .invalidArgument("a group id is 1 to \(Breakout.maxIDBytes) bytes of a-z, 0-9, - and _") }
        try session.write(.setBreakoutGroup(id: id, name: name ?? id))
    }

    /// Removes a group: its members are back in the main room.
    public func remove(_ id: String) throws(ContextError) { try session.write(.setBreakoutGroup(id: id, name: nil)) }

    /// Moves users into a group (nil: back to the main room).
    public func move(_ users: [UserID], to group: String?) throws(ContextError) {
        for user in users { try session.write(.assignBreakoutGroup(user: user, group: group)) }
    }

    /// Creates `count` groups (g1, g2, ...) and spreads the online students over them at
    /// random (`seed` picks the shuffle, the same for the same seed), as evenly as they go.
    @discardableResult
    public func createRandom(count: Int, seed: UInt64 = WallClock.nowMillis()) throws(ContextError) -> [BreakoutGroup] {
        guard (1...Breakout.maxGroups).contains(count) else { throw .invalidArgument("between 1 and \(Breakout.maxGroups) groups, not \(count)") }
        let replica = session.replica
        var students = replica.users.keys.filter { replica.isOnline($0) && replica.users[$0]?.role.value == .student }
            .sorted(by: NaturalOrder.less)
        guard students.count <= count * Breakout.maxMembers else {
            throw .invalidArgument("\(students.count) students do not fit in \(count) groups of at most \(Breakout.maxMembers)")
        }
        var rng = SplitMix64(seed: seed)
        students.shuffle(using: &rng)
        for index in 1...count { try create("g\(index)", name: "Group \(index)") }
        for (index, student) in students.enumerated() { try session.write(.assignBreakoutGroup(user: student, group: "g\(index % count + 1)")) }
        return groups
    }

    /// Ends every group: everyone is back in the main room.
    public func endAll() throws(ContextError) { try session.write(.endBreakout) }

    /// A pool for a group's room as the local user (the teacher's visit, or a member
    /// going to its group); the caller joins it (`room.join()`) and closes it.
    public func pool(forGroup id: String) throws(ContextError) -> ContextPool {
        guard Breakout.isValidID(id) else { throw .invalidArgument("a group id is 1 to \(Breakout.maxIDBytes) bytes of a-z, 0-9, - and _") }
        var config = session.config
        config.room = Breakout.roomID(of: id, in: session.config.room)
        return try ContextPool(config: config, logger: session.logger)
    }

    /// The local user's group room, joined (nil when the local user is in the main room).
    public func joinGroup() throws(ContextError) -> ContextPool? {
        guard let group = localGroup else { return nil }
        let pool = try pool(forGroup: group.id)
        do { try pool.room.join() } catch { pool.close(); throw error }
        return pool
    }

    /// Sends one room message to every live group's room (Flexible Classroom's broadcast):
    /// the local user visits each group's room for the moment it takes (a node takes
    /// writes only from users the room knows); returns the groups it reached.
    @discardableResult
    public func broadcast(_ text: String, type: String = "broadcast") throws(ContextError) -> [String] {
        var reached: [String] = []
        for group in groups {
            var config = session.config
            config.room = group.roomID
            let pool = try ContextPool(config: config, logger: session.logger)
            defer { pool.close() }
            try pool.room.join()
            try pool.message.sendRoomMessage(text, type: type)
            reached.append(group.id)
        }
        return reached
    }
}
