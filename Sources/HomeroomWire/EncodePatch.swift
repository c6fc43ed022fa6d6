#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHomeroomProto
import HomeroomCore

/// Encodes a `RoomState` as a canonical `RoomPatch`: everything sorted, default
/// registers left out, user ids of writers and node ids of stamps interned in
/// sorted tables. The tables are filled in at the end: every index field is
/// recorded while the structures are built and patched once the sorted tables
/// are known, so the state is walked once.
struct PatchEncoder {
    private let encoder: CEncoder
    /// Index fields hold a provisional slot (order of first use) until the end, when
    /// the sorted tables are known and each slot is rewritten to its table index.
    private var replicaSlots = Interner<UInt64>()
    private var replicaFields: [UnsafeMutablePointer<UInt32>] = []
    private var stringSlots = Interner<String>()
    private var stringFields: [UnsafeMutablePointer<UInt32>] = []
    /// Fields that hold a string-table index plus one (0 means "none").
    private var stringPlusOneFields: [UnsafeMutablePointer<UInt32>] = []

    /// Users with nothing but a name, a role and sessions (a lecture hall's audience):
    /// their fields are written as bytes at the end (see `writePlainUsers`).
    private let writesPlainUsers: Bool
    private var plainUsers: [(message: UnsafeMutablePointer<Homeroom__V1__UserPatch>, id: String, record: UserRecord)] = []

    static let defaultRoom = RoomState(roomID: "")
    static let defaultUser = UserRecord()
    static let defaultActivity = UserActivity()

    init(encoder: CEncoder, writesPlainUsers: Bool = true) {
        self.encoder = encoder
        self.writesPlainUsers = writesPlainUsers
    }

    /// A struct, not a class: its tables are appended to for every stamp, and a class's
    /// stored properties pay a dynamic exclusivity check on each access.
    static func encode(_ state: RoomState, with encoder: CEncoder, writesPlainUsers: Bool = true) -> UnsafeMutablePointer<Homeroom__V1__RoomPatch> {
        var patchEncoder = PatchEncoder(encoder: encoder, writesPlainUsers: writesPlainUsers)
        return patchEncoder.encode(state)
    }

    mutating func encode(_ state: RoomState) -> UnsafeMutablePointer<Homeroom__V1__RoomPatch> {
        let patch = encoder.make(homeroom__v1__room_patch__init)
        let room = Self.defaultRoom
        patch.pointee.room_id = encoder.string(state.roomID)

        // Sorted by id, keeping each entry's index: no second hash lookup per user.
        var userOrder = state.users.indices.map { SortKey(state.users.keys[$0], position: $0) }
        userOrder.sort()
        let users = encoder.arena.pointers(Homeroom__V1__UserPatch.self, count: userOrder.count)
        for (index, key) in userOrder.enumerated() {
            users[index] = user(key.string, state.users.values[key.position])
        }
        patch.pointee.n_users = userOrder.count
        patch.pointee.users = users

        patch.pointee.name = stringRegister(state.name, default: room.name)
        if state.type != room.type {
            let register = encoder.make(homeroom__v1__room_type_register__init)
            register.pointee.value = CEncoder.roomType(state.type.value)
            register.pointee.stamp = stamp(state.type.stamp)
            patch.pointee.type = register
        }
        patch.pointee.stage_limit = uint32Register(state.stageLimit, default: room.stageLimit)
        patch.pointee.hand_limit = uint32Register(state.handLimit, default: room.handLimit)
        if !state.breakoutGroups.isEmpty {
            let ids = state.breakoutGroups.keys.sorted(by: utf8Less)
            let list = encoder.arena.pointers(Homeroom__V1__BreakoutGroupRecord.self, count: ids.count)
            for (index, id) in ids.enumerated() {
                let register = state.breakoutGroups[id]!
                let message = encoder.make(homeroom__v1__breakout_group_record__init)
                message.pointee.id = encoder.string(id)
                if let name = register.value { message.pointee.name = encoder.string(name) } else { message.pointee.removed = 1 }
                message.pointee.stamp = stamp(register.stamp)
                list[index] = message
            }
            patch.pointee.n_breakout_groups = ids.count
            patch.pointee.breakout_groups = list
        }
        if !state.breakoutAssignments.isEmpty {
            let users = state.breakoutAssignments.keys.sorted(by: utf8Less)
            let list = encoder.arena.pointers(Homeroom__V1__BreakoutAssignment.self, count: users.count)
            for (index, user) in users.enumerated() {
                let register = state.breakoutAssignments[user]!
                let message = encoder.make(homeroom__v1__breakout_assignment__init)
                internString(user, into: field(message, \.user))
                message.pointee.group = encoder.string(register.value ?? "")
                message.pointee.stamp = stamp(register.stamp)
                list[index] = message
            }
            patch.pointee.n_breakout_assignments = users.count
            patch.pointee.breakout_assignments = list
        }
        if state.breakoutEnded != .origin { patch.pointee.breakout_ended = stamp(state.breakoutEnded) }
        if !state.locks.isEmpty {
            let names = state.locks.keys.sorted(by: utf8Less)
            let list = encoder.arena.pointers(Homeroom__V1__LockRecord.self, count: names.count)
            for (index, name) in names.enumerated() {
                let lock = state.locks[name]!
                let message = encoder.make(homeroom__v1__lock_record__init)
                message.pointee.name = encoder.string(name)
                if let grant = lock.grant {
                    message.pointee.granted = 1
                    internString(grant.holder, into: field(message, \.holder))
                    message.pointee.fence = grant.fence
                    message.pointee.ttl_seconds = grant.ttlSeconds
                    message.pointee.grant_stamp = stamp(lock.grantStamp)
                }
                if lock.endedFence > 0 {
                    message.pointee.ended_fence = lock.endedFence
                    message.pointee.ended_stamp = stamp(lock.endedStamp)
                }
                list[index] = message
            }
            patch.pointee.n_locks = names.count
            patch.pointee.locks = list
        }
        if state.carousel != room.carousel {
            let register = encoder.make(homeroom__v1__carousel_register__init)
            register.pointee.value = encoder.carousel(state.carousel.value)
            register.pointee.stamp = stamp(state.carousel.stamp)
            patch.pointee.carousel = register
        }
        if state.schedule != room.schedule {
            let register = encoder.make(homeroom__v1__schedule_register__init)
            register.pointee.value = encoder.schedule(state.schedule.value)
            register.pointee.stamp = stamp(state.schedule.stamp)
            patch.pointee.schedule = register
        }
        if state.classState != room.classState {
            let register = encoder.make(homeroom__v1__class_state_register__init)
            register.pointee.value = CEncoder.classState(state.classState.state)
            register.pointee.stamp = stamp(state.classState.stamp)
            patch.pointee.class_state = register
        }
        if state.muteAll != .origin { patch.pointee.mute_all = stamp(state.muteAll) }
        patch.pointee.camera_mute = roomGate(state.cameraMute)
        patch.pointee.microphone_mute = roomGate(state.microphoneMute)
        patch.pointee.hand_raising = roomGate(state.handRaising)
        if !state.invitations.isEmpty {
            let users = state.invitations.keys.sorted(by: utf8Less)
            let list = encoder.arena.pointers(Homeroom__V1__StageInvitation.self, count: users.count)
            for (index, user) in users.enumerated() {
                let invitation = state.invitations[user]!
                let message = encoder.make(homeroom__v1__stage_invitation__init)
                internString(user, into: field(message, \.user))
                message.pointee.issued = stamp(invitation.issued)
                message.pointee.seconds = invitation.seconds
                message.pointee.inviter = encoder.string(invitation.inviter)
                if let answer = invitation.answer {
                    message.pointee.answered = stamp(answer.at)
                    message.pointee.accepted = answer.accepted ? 1 : 0
                }
                list[index] = message
            }
            patch.pointee.n_invitations = users.count
            patch.pointee.invitations = list
        }
        patch.pointee.auto_stage = boolRegister(state.autoStage, default: room.autoStage)

        let dead = state.deadIncarnations.sorted { $0.key < $1.key }
        let deadList = encoder.arena.pointers(Homeroom__V1__DeadIncarnation.self, count: dead.count)
        for (index, (replica, incarnation)) in dead.enumerated() {
            let entry = encoder.make(homeroom__v1__dead_incarnation__init)
            entry.pointee.replica = replica.rawValue
            entry.pointee.incarnation = incarnation
            deadList[index] = entry
        }
        patch.pointee.n_dead_incarnations = dead.count
        patch.pointee.dead_incarnations = deadList

        let retired = state.retiredGenerations.sorted { $0.key < $1.key }
        let retiredList = encoder.arena.pointers(Homeroom__V1__RetiredName.self, count: retired.count)
        for (index, (hash, generation)) in retired.enumerated() {
            let entry = encoder.make(homeroom__v1__retired_name__init)
            entry.pointee.name_hash = hash
            entry.pointee.generation = generation
            retiredList[index] = entry
        }
        patch.pointee.n_retired = retired.count
        patch.pointee.retired = retiredList

        let (count, list) = properties(state.properties)
        patch.pointee.n_properties = count
        patch.pointee.properties = list
        if !state.seen.origins.isEmpty { patch.pointee.seen = encoder.versionVector(state.seen) }

        patch.pointee.chat_muted = boolRegister(state.chatMuted, default: room.chatMuted)
        patch.pointee.history_limit = uint32Register(state.historyLimit, default: room.historyLimit)
        if state.messages.floor != .origin { patch.pointee.history_floor = stamp(state.messages.floor) }
        let messages = state.messages.entries.values.sorted { $0.key < $1.key }
        let messageList = encoder.arena.pointers(Homeroom__V1__MessageRecord.self, count: messages.count)
        for (index, message) in messages.enumerated() {
            let record = encoder.make(homeroom__v1__message_record__init)
            internString(message.sender, into: field(record, \.sender))
            record.pointee.counter = message.key.counter
            if let recipient = message.recipient { internString(recipient, into: field(record, \.recipient), plusOne: true) }
            record.pointee.type = encoder.string(message.type)
            record.pointee.payload = encoder.arena.binary(message.payload)
            record.pointee.previous = message.previous
            record.pointee.stamp = stamp(message.stamp)
            messageList[index] = record
        }
        patch.pointee.n_messages = messages.count
        patch.pointee.messages = messageList

        // The tables, sorted, and every index that refers to them.
        let replicaOrder = replicaSlots.values.indices.sorted { replicaSlots.values[$0] < replicaSlots.values[$1] }
        var replicaIndex = [UInt32](repeating: 0, count: replicaOrder.count)
        let replicaTable = encoder.arena.allocate(UInt64.self, count: max(replicaOrder.count, 1))
        for (index, slot) in replicaOrder.enumerated() {
            replicaIndex[slot] = UInt32(index)
            replicaTable[index] = replicaSlots.values[slot]
        }
        for field in replicaFields { field.pointee = replicaIndex[Int(field.pointee)] }
        writePlainUsers(replicaIndex)
        patch.pointee.n_replicas = replicaOrder.count
        patch.pointee.replicas = replicaTable

        let stringOrder = stringSlots.values.indices.sorted { utf8Less(stringSlots.values[$0], stringSlots.values[$1]) }
        var stringIndex = [UInt32](repeating: 0, count: stringOrder.count)
        for (index, slot) in stringOrder.enumerated() { stringIndex[slot] = UInt32(index) }
        for field in stringFields { field.pointee = stringIndex[Int(field.pointee)] }
        for field in stringPlusOneFields { field.pointee = stringIndex[Int(field.pointee)] + 1 }
        let strings = stringOrder.map { stringSlots.values[$0] }
        patch.pointee.n_strings = strings.count
        patch.pointee.strings = encoder.stringTable(strings)
        return patch
    }

    private mutating func user(_ id: UserID, _ record: UserRecord) -> UnsafeMutablePointer<Homeroom__V1__UserPatch> {
        let defaults = Self.defaultUser
        let message = encoder.make(homeroom__v1__user_patch__init)
        if writesPlainUsers && !record.hasActivity {
            // The table must hold the same nodes as if the stamps were built now.
            if record.name != defaults.name { _ = replicaSlots.slot(record.name.stamp.clock.replica.rawValue) }
            if record.role != defaults.role { _ = replicaSlots.slot(record.role.stamp.clock.replica.rawValue) }
            for session in record.sessions {
                _ = replicaSlots.slot(session.host.rawValue)
                _ = replicaSlots.slot(session.started.clock.replica.rawValue)
                if let ended = session.ended { _ = replicaSlots.slot(ended.clock.replica.rawValue) }
            }
            plainUsers.append((message, id, record))
            return message
        }
        message.pointee.id = encoder.string(id)
        message.pointee.name = stringRegister(record.name, default: defaults.name)
        if record.role != defaults.role {
            let register = encoder.make(homeroom__v1__role_register__init)
            register.pointee.value = CEncoder.role(record.role.value)
            register.pointee.stamp = stamp(record.role.stamp)
            message.pointee.role = register
        }
        // One read of the activity: each accessor on UserRecord copies it.
        let activity = record.activity
        let none = Self.defaultActivity
        message.pointee.stage = boolRegister(activity.stage, default: none.stage)
        message.pointee.board = boolRegister(activity.board, default: none.board)
        message.pointee.camera_device = boolRegister(activity.cameraDevice, default: none.cameraDevice)
        message.pointee.camera_privilege = boolRegister(activity.cameraPrivilege, default: none.cameraPrivilege)
        message.pointee.microphone_device = boolRegister(activity.microphoneDevice, default: none.microphoneDevice)
        message.pointee.microphone_privilege = boolRegister(activity.microphonePrivilege, default: none.microphonePrivilege)
        message.pointee.hand = boolRegister(activity.hand, default: none.hand)
        if activity.kicked != .origin { message.pointee.kicked = stamp(activity.kicked) }
        if let banned = activity.banned { message.pointee.banned = stamp(banned) }

        // Core sorts sessions by Swift's order; the wire wants UTF-8 order (one session needs no sort).
        let sessions = record.sessions.count < 2 ? record.sessions : record.sessions.sorted { utf8Less($0.id, $1.id) }
        let sessionList = encoder.arena.pointers(Homeroom__V1__Session.self, count: sessions.count)
        for (index, session) in sessions.enumerated() {
            let entry = encoder.make(homeroom__v1__session__init)
            entry.pointee.id = encoder.string(session.id)
            internReplica(session.host.rawValue, into: field(entry, \.host))
            entry.pointee.incarnation = session.incarnation
            entry.pointee.started = stamp(session.started)
            if let ended = session.ended { entry.pointee.ended = stamp(ended) }
            sessionList[index] = entry
        }
        message.pointee.n_sessions = sessions.count
        message.pointee.sessions = sessionList

        let rewards = activity.rewards.sorted { a, b in
            a.key.author != b.key.author ? utf8Less(a.key.author, b.key.author) : a.key.authorCounter < b.key.authorCounter
        }
        let rewardList = encoder.arena.pointers(Homeroom__V1__RewardRecord.self, count: rewards.count)
        for (index, (key, entry)) in rewards.enumerated() {
            let reward = encoder.make(homeroom__v1__reward_record__init)
            internString(key.author, into: field(reward, \.author))
            reward.pointee.author_counter = key.authorCounter
            reward.pointee.amount = entry.amount
            reward.pointee.stamp = stamp(entry.stamp)
            reward.pointee.issued_at_ms = entry.issuedAtMillis
            if !entry.copies.isEmpty {
                let copies = encoder.arena.pointers(Homeroom__V1__Stamp.self, count: entry.copies.count)
                for (slot, copy) in entry.copies.enumerated() { copies[slot] = stamp(copy) }
                reward.pointee.n_copies = entry.copies.count
                reward.pointee.copies = copies
            }
            rewardList[index] = reward
        }
        message.pointee.n_rewards = rewards.count
        message.pointee.rewards = rewardList

        let (count, list) = properties(activity.properties)
        message.pointee.n_properties = count
        message.pointee.properties = list

        message.pointee.chat_muted = boolRegister(activity.chatMuted, default: none.chatMuted)
        let presenceKeys = activity.presence.keys.sorted(by: utf8Less)
        let presenceList = encoder.arena.pointers(Homeroom__V1__PresenceEntry.self, count: presenceKeys.count)
        for (index, key) in presenceKeys.enumerated() {
            let register = activity.presence[key]!
            let entry = encoder.make(homeroom__v1__presence_entry__init)
            entry.pointee.key = encoder.string(key)
            if let bytes = register.value.bytes { entry.pointee.value = encoder.arena.binary(bytes) } else { entry.pointee.deleted = 1 }
            entry.pointee.session = encoder.string(register.value.session)
            entry.pointee.stamp = stamp(register.stamp)
            presenceList[index] = entry
        }
        message.pointee.n_presence = presenceKeys.count
        message.pointee.presence = presenceList

        let floorOrigins = activity.sessionFloors.keys.sorted()
        let floorList = encoder.arena.pointers(Homeroom__V1__SessionFloor.self, count: floorOrigins.count)
        for (index, origin) in floorOrigins.enumerated() {
            let floor = activity.sessionFloors[origin]!
            let entry = encoder.make(homeroom__v1__session_floor__init)
            internReplica(origin.rawValue, into: field(entry, \.origin))
            entry.pointee.up_to = floor.upTo
            (entry.pointee.n_keep, entry.pointee.keep) = encoder.arena.uint64s(floor.keep)
            entry.pointee.stamp = stamp(floor.stamp)
            floorList[index] = entry
        }
        message.pointee.n_session_floors = floorOrigins.count
        message.pointee.session_floors = floorList

        let rewardFloorOrigins = activity.rewardFloors.keys.sorted()
        let rewardFloorList = encoder.arena.pointers(Homeroom__V1__RewardFloor.self, count: rewardFloorOrigins.count)
        for (index, origin) in rewardFloorOrigins.enumerated() {
            let floor = activity.rewardFloors[origin]!
            let entry = encoder.make(homeroom__v1__reward_floor__init)
            internReplica(origin.rawValue, into: field(entry, \.origin))
            entry.pointee.up_to = floor.upTo
            entry.pointee.sum = floor.sum
            entry.pointee.stamp = stamp(floor.stamp)
            (entry.pointee.n_keep, entry.pointee.keep) = encoder.arena.uint64s(floor.keep)
            rewardFloorList[index] = entry
        }
        message.pointee.n_reward_floors = rewardFloorOrigins.count
        message.pointee.reward_floors = rewardFloorList
        return message
    }

    private mutating func properties(_ properties: [String: Register<PropertyValue>])
        -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Property>?>) {
        let keys = properties.keys.sorted(by: utf8Less)
        let list = encoder.arena.pointers(Homeroom__V1__Property.self, count: keys.count)
        for (index, key) in keys.enumerated() {
            let register = properties[key]!
            let property = encoder.make(homeroom__v1__property__init)
            property.pointee.key = encoder.string(key)
            if let bytes = register.value.bytes {
                property.pointee.value = encoder.arena.binary(bytes)
            } else {
                property.pointee.deleted = 1
            }
            internString(register.value.operatorID, into: field(property, \.writer))
            property.pointee.cause = encoder.string(register.value.cause)
            property.pointee.stamp = stamp(register.stamp)
            property.pointee.revision = register.value.revision
            (property.pointee.n_lineage, property.pointee.lineage) = encoder.dots(register.value.lineage)
            property.pointee.fence = register.value.fence.map(encoder.lockFence)
            list[index] = property
        }
        return (keys.count, list)
    }

    // MARK: Registers and stamps

    private mutating func stamp(_ stamp: Stamp) -> UnsafeMutablePointer<Homeroom__V1__Stamp> {
        let message = encoder.make(homeroom__v1__stamp__init)
        message.pointee.clock = stamp.clock.packed
        message.pointee.sequence = stamp.sequence
        internReplica(stamp.clock.replica.rawValue, into: field(message, \.replica))
        return message
    }

    /// Nil for a gate never closed nor opened (the default a decoder restores).
    private mutating func roomGate(_ gate: RoomGate) -> UnsafeMutablePointer<Homeroom__V1__RoomGate>? {
        guard gate != RoomGate() else { return nil }
        let message = encoder.make(homeroom__v1__room_gate__init)
        if gate.closedAt != .origin { message.pointee.closed = stamp(gate.closedAt) }
        if let opening = gate.opening {
            message.pointee.opening_ends = stamp(opening.ends)
            message.pointee.opening_at = stamp(opening.at)
        }
        return message
    }

    private mutating func stringRegister(_ register: Register<String>, default value: Register<String>) -> UnsafeMutablePointer<Homeroom__V1__StringRegister>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__string_register__init)
        message.pointee.value = encoder.string(register.value)
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    private mutating func boolRegister(_ register: Register<Bool>, default value: Register<Bool>) -> UnsafeMutablePointer<Homeroom__V1__BoolRegister>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__bool_register__init)
        message.pointee.value = register.value ? 1 : 0
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    private mutating func uint32Register(_ register: Register<UInt32>, default value: Register<UInt32>) -> UnsafeMutablePointer<Homeroom__V1__UInt32Register>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__uint32_register__init)
        message.pointee.value = register.value
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    /// Writes the plain users' fields as protobuf bytes, attached to their (otherwise
    /// empty) `UserPatch` as unknown fields in field order: protobuf-c packs known fields
    /// (none here) and then unknown fields verbatim, so the bytes are the ones it would
    /// have written from the C structures (`PlainUserBytesTests` compares the two),
    /// without the seven nested messages per user its packer sizes again at each level.
    private mutating func writePlainUsers(_ replicaIndex: [UInt32]) {
        let defaults = Self.defaultUser
        // Locals, not `self`, and no closure that changes a local: captured, they cost a
        // copy of the encoder or a dynamic exclusivity check per field.
        let arena = encoder.arena
        var slots = replicaSlots
        for (message, id, record) in plainUsers {
            let hasName = record.name != defaults.name, hasRole = record.role != defaults.role
            let list = arena.allocate(ProtobufCMessageUnknownField.self, count: 1 + (hasName ? 1 : 0) + (hasRole ? 1 : 0) + record.sessions.count)
            var count = 0
            if let field = ProtoBytes.withCBytes(id, { idBytes in
                idBytes.isEmpty ? nil : Self.unknownField(1, idBytes.count, in: arena) { $0.raw(idBytes) }
            }) {
                (list + count).initialize(to: field)
                count += 1
            }
            if hasName {
                let stamp = ProtoStamp(record.name.stamp, replica: Self.tableIndex(record.name.stamp.clock.replica, &slots, replicaIndex))
                (list + count).initialize(to: ProtoBytes.withCBytes(record.name.value) { value in
                    let size = (value.isEmpty ? 0 : 1 + ProtoBytes.stringSize(value)) + 1 + ProtoBytes.messageSize(stamp.size)
                    return Self.unknownField(2, size, in: arena) { writer in
                        if !value.isEmpty { writer.varint(0x0A); writer.string(value) }
                        writer.varint(0x12); writer.message(stamp)
                    }
                })
                count += 1
            }
            if hasRole {
                let role = UInt64(CEncoder.role(record.role.value).rawValue)
                let stamp = ProtoStamp(record.role.stamp, replica: Self.tableIndex(record.role.stamp.clock.replica, &slots, replicaIndex))
                let size = (role == 0 ? 0 : 1 + ProtoBytes.varintSize(role)) + 1 + ProtoBytes.messageSize(stamp.size)
                (list + count).initialize(to: Self.unknownField(3, size, in: arena) { writer in
                    if role != 0 { writer.varint(0x08); writer.varint(role) }
                    writer.varint(0x12); writer.message(stamp)
                })
                count += 1
            }
            let sessions = record.sessions.count < 2 ? record.sessions : record.sessions.sorted { utf8Less($0.id, $1.id) }
            for session in sessions {
                let host = Self.tableIndex(session.host, &slots, replicaIndex)
                let started = ProtoStamp(session.started, replica: Self.tableIndex(session.started.clock.replica, &slots, replicaIndex))
                var ended: ProtoStamp?
                if let end = session.ended { ended = ProtoStamp(end, replica: Self.tableIndex(end.clock.replica, &slots, replicaIndex)) }
                let incarnation = session.incarnation
                (list + count).initialize(to: ProtoBytes.withCBytes(session.id) { sessionID in
                    var size = sessionID.isEmpty ? 0 : 1 + ProtoBytes.stringSize(sessionID)
                    if host != 0 { size += 1 + ProtoBytes.varintSize(host) }
                    if incarnation != 0 { size += 1 + ProtoBytes.varintSize(incarnation) }
                    size += 1 + ProtoBytes.messageSize(started.size)
                    if let ended { size += 1 + ProtoBytes.messageSize(ended.size) }
                    return Self.unknownField(13, size, in: arena) { writer in
                        if !sessionID.isEmpty { writer.varint(0x0A); writer.string(sessionID) }
                        if host != 0 { writer.varint(0x10); writer.varint(host) }
                        if incarnation != 0 { writer.varint(0x18); writer.varint(incarnation) }
                        writer.varint(0x22); writer.message(started)
                        if let ended { writer.varint(0x2A); writer.message(ended) }
                    }
                })
                count += 1
            }
            guard count > 0 else { continue }
            message.pointee.base.n_unknown_fields = UInt32(count)
            message.pointee.base.unknown_fields = list
        }
    }

    /// A node's index in the sorted replica table.
    @inline(__always)
    private static func tableIndex(_ replica: ReplicaID, _ slots: inout Interner<UInt64>, _ replicaIndex: [UInt32]) -> UInt64 {
        UInt64(replicaIndex[Int(slots.slot(replica.rawValue))])
    }

    /// A length-prefixed field's data as protobuf-c keeps an unknown one: the length, then `size` payload bytes.
    private static func unknownField(_ number: UInt32, _ size: Int, in arena: Arena,
                                     _ write: (inout ProtoBytes) -> Void) -> ProtobufCMessageUnknownField {
        let total = ProtoBytes.varintSize(UInt64(size)) + size
        let data = arena.allocate(UInt8.self, count: total)
        var writer = ProtoBytes(data)
        writer.varint(UInt64(size))
        write(&writer)
        precondition(writer.cursor == data + total, "plain user field \(number): wrote \(writer.cursor - data) bytes, sized \(total)")
        return ProtobufCMessageUnknownField(tag: number, wire_type: PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED, len: total, data: data)
    }

    @inline(__always)
    private mutating func internReplica(_ replica: UInt64, into field: UnsafeMutablePointer<UInt32>) {
        field.pointee = replicaSlots.slot(replica)
        replicaFields.append(field)
    }

    private mutating func internString(_ string: String, into field: UnsafeMutablePointer<UInt32>, plusOne: Bool = false) {
        field.pointee = stringSlots.slot(string)
        if plusOne { stringPlusOneFields.append(field) } else { stringFields.append(field) }
    }

    /// The address of a `UInt32` field inside an arena-allocated struct.
    private func field<M>(_ message: UnsafeMutablePointer<M>, _ path: WritableKeyPath<M, UInt32>) -> UnsafeMutablePointer<UInt32> {
        (UnsafeMutableRawPointer(message) + MemoryLayout<M>.offset(of: path)!).assumingMemoryBound(to: UInt32.self)
    }
}

/// Distinct values in order of first use. The last value is remembered: stamps come
/// in runs from one node, and a hit skips hashing (a snapshot has several per user).
struct Interner<Value: Hashable> {
    private(set) var values: [Value] = []
    private var slots: [Value: UInt32] = [:]
    private var last: (value: Value, slot: UInt32)?

    @inline(__always)
    mutating func slot(_ value: Value) -> UInt32 {
        if let last, last.value == value { return last.slot }
        let slot: UInt32
        if let known = slots[value] {
            slot = known
        } else {
            slot = UInt32(values.count)
            slots[value] = slot
            values.append(value)
        }
        last = (value, slot)
        return slot
    }
}

/// A string with its first 16 UTF-8 bytes as two big-endian words, so sorting
/// compares two integers and reads the bytes only past a shared 16-byte prefix.
/// Same order as `utf8Less`.
struct SortKey<Position>: Comparable {
    var high: UInt64
    var low: UInt64
    var string: String
    var position: Position

    init(_ string: String, position: Position) {
        var high: UInt64 = 0, low: UInt64 = 0
        var string = string
        string.withUTF8 { bytes in
            for (offset, byte) in bytes.prefix(16).enumerated() {
                if offset < 8 { high |= UInt64(byte) << (56 - 8 * offset) } else { low |= UInt64(byte) << (56 - 8 * (offset - 8)) }
            }
        }
        self.high = high
        self.low = low
        self.string = string
        self.position = position
    }

    @inline(__always)
    static func < (a: SortKey, b: SortKey) -> Bool {
        if a.high != b.high { return a.high < b.high }
        if a.low != b.low { return a.low < b.low }
        return utf8Less(a.string, b.string)
    }

    static func == (a: SortKey, b: SortKey) -> Bool { a.string == b.string }
}

/// A `Stamp` message's fields: clock (fixed64), replica index and sequence (varints),
/// each left out when zero, as protobuf-c does for proto3 scalars.
struct ProtoStamp {
    var clock: UInt64
    var replica: UInt64
    var sequence: UInt64

    init(_ stamp: Stamp, replica: UInt64) {
        clock = stamp.clock.packed
        self.replica = replica
        sequence = stamp.sequence
    }

    var size: Int {
        (clock == 0 ? 0 : 9) + (replica == 0 ? 0 : 1 + ProtoBytes.varintSize(replica))
            + (sequence == 0 ? 0 : 1 + ProtoBytes.varintSize(sequence))
    }
}

/// Writes protobuf fields into memory sized beforehand.
struct ProtoBytes {
    var cursor: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) { cursor = start }

    static func varintSize(_ value: UInt64) -> Int {
        var size = 1, rest = value >> 7
        while rest != 0 { size += 1; rest >>= 7 }
        return size
    }

    static func stringSize(_ bytes: UnsafeBufferPointer<UInt8>) -> Int { varintSize(UInt64(bytes.count)) + bytes.count }
    static func messageSize(_ payload: Int) -> Int { varintSize(UInt64(payload)) + payload }

    /// A string's UTF-8 as the C path sends it: cut at the first NUL (a C string). No copy
    /// for native strings (small ones are read from the stack).
    static func withCBytes<R>(_ string: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        func cut(_ bytes: UnsafeBufferPointer<UInt8>) -> R {
            guard let base = bytes.baseAddress, let nul = memchr(base, 0, bytes.count) else { return body(bytes) }
            return body(UnsafeBufferPointer(start: base, count: UnsafeRawPointer(nul) - UnsafeRawPointer(base)))
        }
        if let result = string.utf8.withContiguousStorageIfAvailable(cut) { return result }
        return Array(string.utf8).withUnsafeBufferPointer(cut)
    }

    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            cursor.pointee = UInt8(truncatingIfNeeded: rest) | 0x80
            cursor += 1
            rest >>= 7
        }
        cursor.pointee = UInt8(rest)
        cursor += 1
    }

    mutating func string(_ bytes: UnsafeBufferPointer<UInt8>) {
        varint(UInt64(bytes.count))
        raw(bytes)
    }

    mutating func raw(_ bytes: UnsafeBufferPointer<UInt8>) {
        if let base = bytes.baseAddress { cursor.update(from: base, count: bytes.count) }
        cursor += bytes.count
    }

    mutating func message(_ stamp: ProtoStamp) {
        varint(UInt64(stamp.size))
        if stamp.clock != 0 {
            varint(0x09)
            withUnsafeBytes(of: stamp.clock.littleEndian) { raw in
                for offset in 0..<8 { cursor[offset] = raw[offset] }
            }
            cursor += 8
        }
        if stamp.replica != 0 { varint(0x10); varint(stamp.replica) }
        if stamp.sequence != 0 { varint(0x18); varint(stamp.sequence) }
    }
}
