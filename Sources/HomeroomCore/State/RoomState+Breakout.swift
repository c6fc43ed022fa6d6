extension RoomState {
    /// The live groups (written after the last end, not removed), by id in natural order.
    public var breakout: [BreakoutGroup] {
        let live = liveBreakoutNames
        guard !live.isEmpty else { return [] }
        var members: [String: [UserID]] = [:]
        for (user, register) in breakoutAssignments where users[user]?.isBanned != true {
            if let group = register.value, live[group] != nil { members[group, default: []].append(user) }
        }
        return live.keys.sorted(by: NaturalOrder.less).map { id in
            BreakoutGroup(id: id, name: live[id]!, members: (members[id] ?? []).sorted(by: NaturalOrder.less),
                          roomID: Breakout.roomID(of: id, in: roomID))
        }
    }

    /// The group `user` is in (nil: the main room).
    public func breakoutGroup(of user: UserID) -> String? {
        guard let group = breakoutAssignments[user]?.value, let register = breakoutGroups[group], register.value != nil else { return nil }
        return group
    }

    var liveBreakoutNames: [String: String] {
        var live: [String: String] = [:]
        for (id, register) in breakoutGroups { if let name = register.value { live[id] = name } }
        return live
    }

    /// Drops what the last end voids (registers written before it), so every replica keeps
    /// the same whatever order it got them in.
    public mutating func dropEndedBreakout() {
        guard breakoutEnded != .origin else { return }
        let ended = breakoutEnded
        breakoutGroups = breakoutGroups.filter { ended < $0.value.stamp }
        breakoutAssignments = breakoutAssignments.filter { ended < $0.value.stamp }
    }

    /// Whether `user`, joining in `role`, may go into the room of this room's group
    /// `group`: nobody banned here, and a student or an observer only into its own group
    /// while that group is live (teachers and assistants visit any). A group that is not
    /// live leaves the room an ordinary one, unless `requireLive` (a class token used for
    /// the group's room: it opens that room only while the group meets, so a token
    /// cannot make rooms `<class>:<anything>` at will).
    public func groupRoomRefusal(user: UserID, role: Role, group: String, requireLive: Bool = false) -> WriteError? {
        if users[user]?.isBanned == true { return .banned(user) }
        if requireLive, breakoutGroups[group]?.value == nil { return .groupNotLive(mainRoom: roomID, group: group) }
        guard breakoutGroups[group]?.value != nil, !role.moderates else { return nil }
        let mine = breakoutGroup(of: user)
        return mine == group ? nil : .notInGroup(user: user, group: group, actual: mine)
    }

    /// Admission of a breakout write at its origin.
    func breakoutRefusal(_ operation: Operation) -> WriteError? {
        switch operation {
        case let .setBreakoutGroup(id, name):
            // Removing is always allowed (a room whose type changed can still clear its groups).
            if name != nil, type.value != .smallClassroom { return .invalid("breakout groups are for small classrooms; this room is a \(type.value)") }
            if Breakout.roomID(of: id, in: roomID).utf8.count > 128 {
                return .invalid("the group's room id \(Breakout.roomID(of: id, in: roomID)) is over 128 bytes: use a shorter group id")
            }
            if name != nil, breakoutGroups[id]?.value == nil, liveBreakoutNames.count >= Breakout.maxGroups {
                return .limitReached("the room has \(Breakout.maxGroups) breakout groups, the most it may: remove one or end them")
            }
            return nil
        case let .assignBreakoutGroup(user, group?):
            guard breakoutGroups[group]?.value != nil else { return .invalid("there is no breakout group \(group): create it first") }
            let members = breakoutAssignments.filter { $0.key != user && $0.value.value == group && users[$0.key]?.isBanned != true }.count
            return members >= Breakout.maxMembers ? .limitReached("group \(group) has \(Breakout.maxMembers) members, the most a group may") : nil
        default:
            return nil
        }
    }
}
