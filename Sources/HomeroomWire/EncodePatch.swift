import CHomeroomProto
import HomeroomCore

/// Encodes a `RoomState` as a canonical `RoomPatch`: everything sorted, default
/// registers left out, user ids of writers and node ids of stamps interned in
/// sorted tables. The tables are filled in at the end: every index field is
/// recorded while the structures are built and patched once the sorted tables
/// are known, so the state is walked once.
final class PatchEncoder {
    private let encoder: CEncoder
    private var replicaFixups: [(field: UnsafeMutablePointer<UInt32>, replica: UInt64)] = []
    private var stringFixups: [(field: UnsafeMutablePointer<UInt32>, string: String)] = []
    /// Fields that hold a string-table index plus one (0 means "none").
    private var stringPlusOneFixups: [(field: UnsafeMutablePointer<UInt32>, string: String)] = []

    static let defaultRoom = RoomState(roomID: "")
    static let defaultUser = UserRecord()
    static let defaultActivity = UserActivity()

    init(encoder: CEncoder) {
        self.encoder = encoder
    }

    func encode(_ state: RoomState) -> UnsafeMutablePointer<Homeroom__V1__RoomPatch> {
        let patch = encoder.make(homeroom__v1__room_patch__init)
        let room = Self.defaultRoom
        patch.pointee.room_id = encoder.string(state.roomID)

        // Sorted by id, keeping each entry's index: no second hash lookup per user.
        let userOrder = zip(state.users.keys, state.users.indices).sorted { utf8Less($0.0, $1.0) }
        let users = encoder.arena.pointers(Homeroom__V1__UserPatch.self, count: userOrder.count)
        for (index, (id, position)) in userOrder.enumerated() {
            users[index] = user(id, state.users.values[position])
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
            stringFixups.append((field(record, \.sender), message.sender))
            record.pointee.counter = message.key.counter
            if let recipient = message.recipient { stringPlusOneFixups.append((field(record, \.recipient), recipient)) }
            record.pointee.type = encoder.string(message.type)
            record.pointee.payload = encoder.arena.binary(message.payload)
            record.pointee.previous = message.previous
            record.pointee.stamp = stamp(message.stamp)
            messageList[index] = record
        }
        patch.pointee.n_messages = messages.count
        patch.pointee.messages = messageList

        // The tables, sorted, and every index that refers to them.
        let replicas = Array(Set(replicaFixups.map(\.replica))).sorted()
        var replicaIndex: [UInt64: UInt32] = [:]
        replicaIndex.reserveCapacity(replicas.count)
        let replicaTable = encoder.arena.allocate(UInt64.self, count: max(replicas.count, 1))
        for (index, replica) in replicas.enumerated() {
            replicaIndex[replica] = UInt32(index)
            replicaTable[index] = replica
        }
        for fixup in replicaFixups { fixup.field.pointee = replicaIndex[fixup.replica]! }
        patch.pointee.n_replicas = replicas.count
        patch.pointee.replicas = replicaTable

        let strings = Array(Set(stringFixups.map(\.string)).union(stringPlusOneFixups.map(\.string))).sorted(by: utf8Less)
        var stringIndex: [String: UInt32] = [:]
        stringIndex.reserveCapacity(strings.count)
        for (index, string) in strings.enumerated() { stringIndex[string] = UInt32(index) }
        for fixup in stringFixups { fixup.field.pointee = stringIndex[fixup.string]! }
        for fixup in stringPlusOneFixups { fixup.field.pointee = stringIndex[fixup.string]! + 1 }
        patch.pointee.n_strings = strings.count
        patch.pointee.strings = encoder.stringTable(strings)
        return patch
    }

    private func user(_ id: UserID, _ record: UserRecord) -> UnsafeMutablePointer<Homeroom__V1__UserPatch> {
        let defaults = Self.defaultUser
        let message = encoder.make(homeroom__v1__user_patch__init)
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

        let sessions = record.sessions.sorted { utf8Less($0.id, $1.id) }
        let sessionList = encoder.arena.pointers(Homeroom__V1__Session.self, count: sessions.count)
        for (index, session) in sessions.enumerated() {
            let entry = encoder.make(homeroom__v1__session__init)
            entry.pointee.id = encoder.string(session.id)
            replicaFixups.append((field(entry, \.host), session.host.rawValue))
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
            stringFixups.append((field(reward, \.author), key.author))
            reward.pointee.author_counter = key.authorCounter
            reward.pointee.amount = entry.amount
            reward.pointee.stamp = stamp(entry.stamp)
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
        return message
    }

    private func properties(_ properties: [String: Register<PropertyValue>])
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
            stringFixups.append((field(property, \.writer), register.value.operatorID))
            property.pointee.cause = encoder.string(register.value.cause)
            property.pointee.stamp = stamp(register.stamp)
            property.pointee.revision = register.value.revision
            (property.pointee.n_lineage, property.pointee.lineage) = encoder.dots(register.value.lineage)
            list[index] = property
        }
        return (keys.count, list)
    }

    // MARK: Registers and stamps

    private func stamp(_ stamp: Stamp) -> UnsafeMutablePointer<Homeroom__V1__Stamp> {
        let message = encoder.make(homeroom__v1__stamp__init)
        message.pointee.clock = stamp.clock.packed
        message.pointee.sequence = stamp.sequence
        replicaFixups.append((field(message, \.replica), stamp.clock.replica.rawValue))
        return message
    }

    private func stringRegister(_ register: Register<String>, default value: Register<String>) -> UnsafeMutablePointer<Homeroom__V1__StringRegister>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__string_register__init)
        message.pointee.value = encoder.string(register.value)
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    private func boolRegister(_ register: Register<Bool>, default value: Register<Bool>) -> UnsafeMutablePointer<Homeroom__V1__BoolRegister>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__bool_register__init)
        message.pointee.value = register.value ? 1 : 0
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    private func uint32Register(_ register: Register<UInt32>, default value: Register<UInt32>) -> UnsafeMutablePointer<Homeroom__V1__UInt32Register>? {
        guard register != value else { return nil }
        let message = encoder.make(homeroom__v1__uint32_register__init)
        message.pointee.value = register.value
        message.pointee.stamp = stamp(register.stamp)
        return message
    }

    /// The address of a `UInt32` field inside an arena-allocated struct.
    private func field<M>(_ message: UnsafeMutablePointer<M>, _ path: WritableKeyPath<M, UInt32>) -> UnsafeMutablePointer<UInt32> {
        (UnsafeMutableRawPointer(message) + MemoryLayout<M>.offset(of: path)!).assumingMemoryBound(to: UInt32.self)
    }
}
