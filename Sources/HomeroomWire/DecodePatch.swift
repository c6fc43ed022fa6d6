import CHomeroomProto
import HomeroomCore

extension CDecoder {
    /// The string and replica tables a patch's indexes refer to.
    struct PatchTables {
        var strings: [String]
        var replicas: [ReplicaID]
    }

    func roomPatch(_ message: UnsafeMutablePointer<Homeroom__V1__RoomPatch>?, _ field: String) throws(WireError) -> RoomState {
        guard let message else { throw .missingField(field) }
        let patch = message.pointee
        let defaults = PatchEncoder.defaultRoom
        try count(patch.n_users, max: limits.maxUsersPerPatch, "\(field).users")
        try count(patch.n_replicas, max: limits.maxOrigins, "\(field).replicas")
        try count(patch.n_properties, max: limits.maxMapEntries, "\(field).properties")
        try count(patch.n_dead_incarnations, max: limits.maxOrigins, "\(field).dead_incarnations")

        var tables = PatchTables(strings: try stringTable(patch.n_strings, patch.strings, "\(field).strings"), replicas: [])
        if patch.n_replicas > 0, let replicas = patch.replicas {
            tables.replicas = (0..<patch.n_replicas).map { ReplicaID(replicas[$0]) }
        }

        var state = RoomState(roomID: try string(patch.room_id, "\(field).room_id"))
        state.users.reserveCapacity(patch.n_users)
        for index in 0..<patch.n_users {
            // Field paths are built only for an error: formatting one per user was a tenth of the decode.
            let (id, record) = try user(patch.users[index]!, tables, "\(field).users[\(index)]")
            if state.users.updateValue(record, forKey: id) != nil {
                throw .invalidValue(field: "\(field).users[\(index)].id", reason: "user \(id) appears twice")
            }
        }

        if let register = patch.name {
            state.name = Register(try string(register.pointee.value, "\(field).name.value"), stamp: try stamp(register.pointee.stamp, tables, "\(field).name.stamp"))
        }
        if let register = patch.type {
            state.type = Register(try roomType(register.pointee.value, "\(field).type.value"), stamp: try stamp(register.pointee.stamp, tables, "\(field).type.stamp"))
        }
        if let register = patch.stage_limit {
            state.stageLimit = Register(register.pointee.value, stamp: try stamp(register.pointee.stamp, tables, "\(field).stage_limit.stamp"))
        }
        if let register = patch.hand_limit {
            state.handLimit = Register(register.pointee.value, stamp: try stamp(register.pointee.stamp, tables, "\(field).hand_limit.stamp"))
        }
        // Admission keeps 32 locks and 20 groups; two sides of a split may add more, a peer never thousands.
        try count(patch.n_breakout_groups, max: min(limits.maxMapEntries, 4_096), "\(field).breakout_groups")
        for index in 0..<patch.n_breakout_groups {
            let entry = patch.breakout_groups[index]!.pointee
            let path = "\(field).breakout_groups[\(index)]"
            let id = try string(entry.id, "\(path).id")
            guard Breakout.isValidID(id) else { throw .invalidValue(field: "\(path).id", reason: "a group id is 1 to 16 bytes of a-z, 0-9, - and _") }
            guard entry.stamp != nil else { throw .missingField("\(path).stamp") }
            let name = entry.removed != 0 ? nil : try string(entry.name, "\(path).name")
            if let name, name.isEmpty || name.utf8.count > Breakout.maxNameBytes {
                throw .invalidValue(field: "\(path).name", reason: "a group name is 1 to \(Breakout.maxNameBytes) bytes")
            }
            if state.breakoutGroups.updateValue(Register(name, stamp: try stamp(entry.stamp, tables, "\(path).stamp")), forKey: id) != nil {
                throw .invalidValue(field: "\(path).id", reason: "group \(id) appears twice")
            }
        }
        try count(patch.n_breakout_assignments, max: limits.maxMapEntries, "\(field).breakout_assignments")
        for index in 0..<patch.n_breakout_assignments {
            let entry = patch.breakout_assignments[index]!.pointee
            let path = "\(field).breakout_assignments[\(index)]"
            let user = try tableString(entry.user, tables, "\(path).user")
            let group = try string(entry.group, "\(path).group")
            guard group.isEmpty || Breakout.isValidID(group) else { throw .invalidValue(field: "\(path).group", reason: "not a group id") }
            guard entry.stamp != nil else { throw .missingField("\(path).stamp") }
            if state.breakoutAssignments.updateValue(Register(group.isEmpty ? nil : group, stamp: try stamp(entry.stamp, tables, "\(path).stamp")),
                                                     forKey: user) != nil {
                throw .invalidValue(field: "\(path).user", reason: "user \(user) appears twice")
            }
        }
        if patch.breakout_ended != nil { state.breakoutEnded = try stamp(patch.breakout_ended, tables, "\(field).breakout_ended") }
        state.dropEndedBreakout()
        try count(patch.n_locks, max: min(limits.maxMapEntries, 4_096), "\(field).locks")
        for index in 0..<patch.n_locks {
            let entry = patch.locks[index]!.pointee
            let path = "\(field).locks[\(index)]"
            let name = try string(entry.name, "\(path).name")
            guard !name.isEmpty, name.utf8.count <= Locks.maxNameBytes else {
                throw .invalidValue(field: "\(path).name", reason: "a lock name is 1 to \(Locks.maxNameBytes) bytes")
            }
            var record = LockRecord()
            if entry.granted != 0 {
                guard entry.grant_stamp != nil else { throw .missingField("\(path).grant_stamp") }
                guard entry.fence > 0 else { throw .invalidValue(field: "\(path).fence", reason: "a grant's fence is above 0") }
                guard entry.fence <= Locks.maxFence, Locks.ttlRange.contains(entry.ttl_seconds) else {
                    throw .invalidValue(field: "\(path)", reason: "a grant's fence is at most 2^62 and its TTL 10 to 300 s")
                }
                record.grant = LockGrant(holder: try tableString(entry.holder, tables, "\(path).holder"), fence: entry.fence, ttlSeconds: entry.ttl_seconds)
                record.grantStamp = try stamp(entry.grant_stamp, tables, "\(path).grant_stamp")
            }
            if entry.ended_fence > Locks.maxFence { throw .invalidValue(field: "\(path).ended_fence", reason: "a fence is at most 2^62") }
            if entry.ended_fence > 0 {
                guard entry.ended_stamp != nil else { throw .missingField("\(path).ended_stamp") }
                record.endedFence = entry.ended_fence
                record.endedStamp = try stamp(entry.ended_stamp, tables, "\(path).ended_stamp")
            }
            if state.locks.updateValue(record, forKey: name) != nil {
                throw .invalidValue(field: "\(path).name", reason: "lock \(name) appears twice")
            }
        }
        if let register = patch.carousel {
            state.carousel = Register(try carousel(register.pointee.value, "\(field).carousel.value", checkingInterval: true),
                                      stamp: try stamp(register.pointee.stamp, tables, "\(field).carousel.stamp"))
        }
        if let register = patch.schedule {
            state.schedule = Register(try schedule(register.pointee.value, "\(field).schedule.value"),
                                      stamp: try stamp(register.pointee.stamp, tables, "\(field).schedule.stamp"))
        }
        if let register = patch.class_state {
            state.classState = ClassStateRegister(state: try classState(register.pointee.value, "\(field).class_state.value"),
                                                  stamp: try stamp(register.pointee.stamp, tables, "\(field).class_state.stamp"))
        }
        state.muteAll = patch.mute_all == nil ? defaults.muteAll : try stamp(patch.mute_all, tables, "\(field).mute_all")
        state.cameraMute = try roomGate(patch.camera_mute, tables, "\(field).camera_mute")
        state.microphoneMute = try roomGate(patch.microphone_mute, tables, "\(field).microphone_mute")
        state.handRaising = try roomGate(patch.hand_raising, tables, "\(field).hand_raising")
        try count(patch.n_invitations, max: limits.maxMapEntries, "\(field).invitations")
        for index in 0..<patch.n_invitations {
            let entry = patch.invitations[index]!.pointee
            let path = "\(field).invitations[\(index)]"
            let user = try tableString(entry.user, tables, "\(path).user")
            guard entry.issued != nil else { throw .missingField("\(path).issued") }
            guard StageInvitation.durationRange.contains(entry.seconds) else {
                throw .invalidValue(field: "\(path).seconds", reason: "an invitation lasts 5 to 600 s")
            }
            let answer = entry.answered == nil ? nil
                : StageInvitation.Answer(at: try stamp(entry.answered, tables, "\(path).answered"), accepted: entry.accepted != 0)
            let invitation = StageInvitation(issued: try stamp(entry.issued, tables, "\(path).issued"), seconds: entry.seconds,
                                             inviter: try string(entry.inviter, "\(path).inviter"), answer: answer)
            if state.invitations.updateValue(invitation, forKey: user) != nil {
                throw .invalidValue(field: "\(path).user", reason: "user \(user) appears twice")
            }
        }
        try bool(patch.auto_stage, &state.autoStage, tables, "\(field).auto_stage")
        for index in 0..<patch.n_dead_incarnations {
            let entry = patch.dead_incarnations[index]!.pointee
            if state.deadIncarnations.updateValue(entry.incarnation, forKey: ReplicaID(entry.replica)) != nil {
                throw .invalidValue(field: "\(field).dead_incarnations[\(index)]", reason: "node \(ReplicaID(entry.replica)) appears twice")
            }
        }
        try count(patch.n_retired, max: limits.maxOrigins, "\(field).retired")
        for index in 0..<patch.n_retired {
            let entry = patch.retired[index]!.pointee
            guard entry.name_hash <= 0xFF_FFFF else {
                throw .invalidValue(field: "\(field).retired[\(index)].name_hash", reason: "a name hash has 24 bits, not \(entry.name_hash)")
            }
            if state.retiredGenerations.updateValue(entry.generation, forKey: entry.name_hash) != nil {
                throw .invalidValue(field: "\(field).retired[\(index)]", reason: "name hash \(entry.name_hash) appears twice")
            }
        }
        state.properties = try properties(patch.n_properties, patch.properties, tables, "\(field).properties")
        state.seen = try versionVector(patch.seen, "\(field).seen")
        try bool(patch.chat_muted, &state.chatMuted, tables, "\(field).chat_muted")
        if let register = patch.history_limit {
            state.historyLimit = Register(register.pointee.value, stamp: try stamp(register.pointee.stamp, tables, "\(field).history_limit.stamp"))
        }
        try count(patch.n_messages, max: limits.maxMessagesPerPatch, "\(field).messages")
        var messages: [Message] = []
        messages.reserveCapacity(patch.n_messages)
        var keys = Set<MessageKey>()
        for index in 0..<patch.n_messages {
            let entry = patch.messages[index]!.pointee
            func path() -> String { "\(field).messages[\(index)]" }
            let key = MessageKey(sender: try tableString(entry.sender, tables, "\(path()).sender"), counter: entry.counter)
            guard keys.insert(key).inserted else { throw .invalidValue(field: path(), reason: "message \(key) appears twice") }
            let recipient = entry.recipient == 0 ? nil : try tableString(entry.recipient - 1, tables, "\(path()).recipient")
            guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
            messages.append(Message(key: key, recipient: recipient, type: try string(entry.type, "\(path()).type"),
                                    payload: try bytes(entry.payload, "\(path()).payload"), previous: entry.previous,
                                    stamp: try stamp(entry.stamp, tables, "\(path()).stamp")))
        }
        let floor = patch.history_floor == nil ? Stamp.origin : try stamp(patch.history_floor, tables, "\(field).history_floor")
        state.messages = MessageLog(messages: messages, floor: floor)
        state.rebuildIndexes()
        return state
    }

    private func user(_ message: UnsafeMutablePointer<Homeroom__V1__UserPatch>, _ tables: PatchTables,
                      _ field: @autoclosure () -> String) throws(WireError) -> (UserID, UserRecord) {
        let patch = message.pointee
        let id = try string(patch.id, "\(field()).id")
        var record = UserRecord()
        if let register = patch.name {
            record.name = Register(try string(register.pointee.value, "\(field()).name.value"), stamp: try stamp(register.pointee.stamp, tables, "\(field()).name.stamp"))
        }
        if let register = patch.role {
            record.role = Register(try role(register.pointee.value, "\(field()).role.value"), stamp: try stamp(register.pointee.stamp, tables, "\(field()).role.stamp"))
        }
        var activity = UserActivity()
        try bool(patch.stage, &activity.stage, tables, "\(field()).stage")
        try bool(patch.board, &activity.board, tables, "\(field()).board")
        try bool(patch.camera_device, &activity.cameraDevice, tables, "\(field()).camera_device")
        try bool(patch.camera_privilege, &activity.cameraPrivilege, tables, "\(field()).camera_privilege")
        try bool(patch.microphone_device, &activity.microphoneDevice, tables, "\(field()).microphone_device")
        try bool(patch.microphone_privilege, &activity.microphonePrivilege, tables, "\(field()).microphone_privilege")
        try bool(patch.hand, &activity.hand, tables, "\(field()).hand")
        if patch.kicked != nil { activity.kicked = try stamp(patch.kicked, tables, "\(field()).kicked") }
        if patch.banned != nil { activity.banned = try stamp(patch.banned, tables, "\(field()).banned") }

        try count(patch.n_sessions, max: limits.maxSessionsPerUser, "\(field()).sessions")
        if patch.n_sessions > 0 {
            var sessions: [SessionRecord] = []
            sessions.reserveCapacity(patch.n_sessions)
            for index in 0..<patch.n_sessions {
                let entry = patch.sessions[index]!.pointee
                func path() -> String { "\(field()).sessions[\(index)]" }
                let host = Int(entry.host)
                guard host < tables.replicas.count else {
                    throw .invalidValue(field: "\(path()).host", reason: "index \(host) is past the replica table (\(tables.replicas.count) entries)")
                }
                guard entry.started != nil else { throw .missingField("\(path()).started") }
                sessions.append(SessionRecord(id: try string(entry.id, "\(path()).id"), host: tables.replicas[host], incarnation: entry.incarnation,
                                              started: try stamp(entry.started, tables, "\(path()).started"),
                                              ended: entry.ended == nil ? nil : try stamp(entry.ended, tables, "\(path()).ended")))
            }
            // Core keeps sessions sorted by id (Swift order) and searches them.
            sessions.sort { $0.id < $1.id }
            for index in sessions.indices.dropFirst() where sessions[index].id == sessions[index - 1].id {
                throw .invalidValue(field: "\(field()).sessions", reason: "session \(sessions[index].id) appears twice")
            }
            record.sessions = sessions
        }

        activity.properties = try properties(patch.n_properties, patch.properties, tables, "\(field()).properties")
        try bool(patch.chat_muted, &activity.chatMuted, tables, "\(field()).chat_muted")
        try count(patch.n_presence, max: limits.maxMapEntries, "\(field()).presence")
        for index in 0..<patch.n_presence {
            let entry = patch.presence[index]!.pointee
            func path() -> String { "\(field()).presence[\(index)]" }
            let key = try string(entry.key, "\(path()).key")
            guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
            let value = PresenceValue(bytes: entry.deleted != 0 ? nil : try bytes(entry.value, "\(path()).value"),
                                      session: try string(entry.session, "\(path()).session"))
            if activity.presence.updateValue(Register(value, stamp: try stamp(entry.stamp, tables, "\(path()).stamp")), forKey: key) != nil {
                throw .invalidValue(field: "\(path()).key", reason: "presence key \(key) appears twice")
            }
        }

        // Floors before records, as Core merges them: a record a floor covers is dropped.
        try count(patch.n_reward_floors, max: limits.maxOrigins, "\(field()).reward_floors")
        var rewardOrigins = Set<ReplicaID>()
        for index in 0..<patch.n_reward_floors {
            let entry = patch.reward_floors[index]!.pointee
            func path() -> String { "\(field()).reward_floors[\(index)]" }
            let origin = Int(entry.origin)
            guard origin < tables.replicas.count else {
                throw .invalidValue(field: "\(path()).origin", reason: "index \(origin) is past the replica table (\(tables.replicas.count) entries)")
            }
            guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
            guard entry.sum >= 0 else { throw .invalidValue(field: "\(path()).sum", reason: "a floor's sum is never negative, not \(entry.sum)") }
            guard rewardOrigins.insert(tables.replicas[origin]).inserted else {
                throw .invalidValue(field: "\(path()).origin", reason: "origin \(tables.replicas[origin]) appears twice")
            }
            try count(entry.n_keep, max: RewardFloor.maxKept, "\(path()).keep")
            let keep = entry.n_keep == 0 ? [] : (0..<entry.n_keep).map { entry.keep[$0] }
            activity.foldRewards(origin: tables.replicas[origin],
                                 RewardFloor(upTo: entry.up_to, sum: entry.sum, keep: keep, stamp: try stamp(entry.stamp, tables, "\(path()).stamp")))
        }
        try count(patch.n_rewards, max: limits.maxMapEntries, "\(field()).rewards")
        if patch.n_rewards > 0 {
            var rewards: [RewardKey: RewardEntry] = [:]
            rewards.reserveCapacity(patch.n_rewards)
            for index in 0..<patch.n_rewards {
                let entry = patch.rewards[index]!.pointee
                func path() -> String { "\(field()).rewards[\(index)]" }
                let key = RewardKey(author: try tableString(entry.author, tables, "\(path()).author"), authorCounter: entry.author_counter)
                guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
                let earliest = try stamp(entry.stamp, tables, "\(path()).stamp")
                try count(entry.n_copies, max: limits.maxOrigins, "\(path()).copies")
                var copies: [Stamp] = []
                for slot in 0..<entry.n_copies {
                    let copy = try stamp(entry.copies[slot], tables, "\(path()).copies[\(slot)]")
                    guard earliest < copy, copies.last.map({ $0 < copy }) ?? true else {
                        throw .invalidValue(field: "\(path()).copies[\(slot)]", reason: "copies are sorted, unique and after the record's stamp")
                    }
                    copies.append(copy)
                }
                let value = RewardEntry(amount: entry.amount, stamp: earliest, copies: copies, issuedAtMillis: entry.issued_at_ms)
                if rewards.updateValue(value, forKey: key) != nil {
                    throw .invalidValue(field: path(), reason: "reward (\(key.author), \(key.authorCounter)) appears twice")
                }
            }
            for (key, value) in rewards { activity.addReward(key, value) }
        }
        try count(patch.n_session_floors, max: limits.maxOrigins, "\(field()).session_floors")
        for index in 0..<patch.n_session_floors {
            let entry = patch.session_floors[index]!.pointee
            func path() -> String { "\(field()).session_floors[\(index)]" }
            let origin = Int(entry.origin)
            guard origin < tables.replicas.count else {
                throw .invalidValue(field: "\(path()).origin", reason: "index \(origin) is past the replica table (\(tables.replicas.count) entries)")
            }
            try count(entry.n_keep, max: SessionFloor.maxKept, "\(path()).keep")
            guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
            let keep = entry.n_keep == 0 ? [] : (0..<entry.n_keep).map { entry.keep[$0] }
            let floor = SessionFloor(upTo: entry.up_to, keep: keep, stamp: try stamp(entry.stamp, tables, "\(path()).stamp"))
            if activity.sessionFloors.updateValue(floor, forKey: tables.replicas[origin]) != nil {
                throw .invalidValue(field: "\(path()).origin", reason: "origin \(tables.replicas[origin]) appears twice")
            }
        }
        // Left unallocated when it is all defaults, as Core does.
        record.activity = activity
        return (id, record)
    }

    private func properties(_ count: Int, _ list: UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Property>?>?,
                            _ tables: PatchTables, _ field: @autoclosure () -> String) throws(WireError) -> [String: Register<PropertyValue>] {
        try self.count(count, max: limits.maxMapEntries, field())
        guard count > 0, let list else { return [:] }
        var result: [String: Register<PropertyValue>] = [:]
        result.reserveCapacity(count)
        for index in 0..<count {
            let entry = list[index]!.pointee
            func path() -> String { "\(field())[\(index)]" }
            let key = try string(entry.key, "\(path()).key")
            let value = PropertyValue(bytes: entry.deleted != 0 ? nil : try bytes(entry.value, "\(path()).value"),
                                      operatorID: try tableString(entry.writer, tables, "\(path()).writer"),
                                      cause: try string(entry.cause, "\(path()).cause"), revision: entry.revision,
                                      lineage: try dots(entry.n_lineage, entry.lineage, "\(path()).lineage"),
                                      fence: try lockFence(entry.fence, "\(path()).fence"))
            guard entry.stamp != nil else { throw .missingField("\(path()).stamp") }
            if result.updateValue(Register(value, stamp: try stamp(entry.stamp, tables, "\(path()).stamp")), forKey: key) != nil {
                throw .invalidValue(field: "\(path()).key", reason: "property \(key) appears twice")
            }
        }
        return result
    }

    /// Absent: never closed nor opened. An opening needs both its stamps.
    private func roomGate(_ message: UnsafeMutablePointer<Homeroom__V1__RoomGate>?, _ tables: PatchTables,
                          _ field: @autoclosure () -> String) throws(WireError) -> RoomGate {
        guard let message else { return RoomGate() }
        let gate = message.pointee
        let closed = try stamp(gate.closed, tables, "\(field()).closed")
        guard gate.opening_ends != nil else { return RoomGate(closedAt: closed, opening: nil) }
        guard gate.opening_at != nil else { throw .missingField("\(field()).opening_at") }
        return RoomGate(closedAt: closed, opening: RoomGate.Opening(ends: try stamp(gate.opening_ends, tables, "\(field()).opening_ends"),
                                                                     at: try stamp(gate.opening_at, tables, "\(field()).opening_at")))
    }

    private func bool(_ message: UnsafeMutablePointer<Homeroom__V1__BoolRegister>?, _ register: inout Register<Bool>,
                      _ tables: PatchTables, _ field: @autoclosure () -> String) throws(WireError) {
        guard let message else { return }
        register = Register(message.pointee.value != 0, stamp: try stamp(message.pointee.stamp, tables, "\(field()).stamp"))
    }

    @inline(__always)
    private func tableString(_ index: UInt32, _ tables: PatchTables, _ field: @autoclosure () -> String) throws(WireError) -> String {
        guard Int(index) < tables.strings.count else {
            throw .invalidValue(field: field(), reason: "index \(index) is past the string table (\(tables.strings.count) entries)")
        }
        return tables.strings[Int(index)]
    }

    /// An absent stamp is the origin (the stamp no write has).
    @inline(__always)
    func stamp(_ message: UnsafeMutablePointer<Homeroom__V1__Stamp>?, _ tables: PatchTables,
               _ field: @autoclosure () -> String) throws(WireError) -> Stamp {
        guard let message else { return .origin }
        let index = Int(message.pointee.replica)
        guard index < tables.replicas.count else {
            throw .invalidValue(field: "\(field()).replica", reason: "index \(index) is past the replica table (\(tables.replicas.count) entries)")
        }
        return Stamp(clock: HybridTimestamp(packed: message.pointee.clock, replica: tables.replicas[index]), sequence: message.pointee.sequence)
    }
}
