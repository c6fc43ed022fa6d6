#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHomeroomProto
import HomeroomCore

// Swift values -> protobuf-c structures, all allocated in one arena. Nothing
// here is public: callers go through `WireCodec`.

/// Strings compare by their UTF-8 bytes on the wire (the canonical order of
/// docs/PROTOCOL.md), not by Swift's Unicode ordering.
/// One `memcmp` over the contiguous UTF-8 (native and small strings have it); the
/// generic `lexicographicallyPrecedes` walked the views byte by byte and was most
/// of a snapshot's encode time.
@inline(__always)
func utf8Less(_ a: String, _ b: String) -> Bool {
    let fast = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y in
            let common = min(x.count, y.count)
            let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
            return order != 0 ? order < 0 : x.count < y.count
        }
    }
    if let fast, let result = fast { return result }
    return a.utf8.lexicographicallyPrecedes(b.utf8)
}

/// Interns strings by first use; index = position in the table.
struct StringInterner {
    private(set) var strings: [String] = []
    private var indexes: [String: UInt32] = [:]

    init(capacity: Int = 0) {
        if capacity > 0 {
            strings.reserveCapacity(capacity)
            indexes.reserveCapacity(capacity)
        }
    }

    @inline(__always)
    mutating func index(_ string: String) -> UInt32 {
        if let found = indexes[string] { return found }
        let index = UInt32(strings.count)
        strings.append(string)
        indexes[string] = index
        return index
    }
}

struct CEncoder {
    let arena: Arena

    init(arena: Arena) {
        self.arena = arena
    }

    // MARK: Primitives

    @inline(__always)
    func make<T>(_ initialize: (UnsafeMutablePointer<T>?) -> Void) -> UnsafeMutablePointer<T> {
        let pointer = arena.allocate(T.self)
        initialize(pointer)
        return pointer
    }

    @inline(__always)
    func string(_ value: String) -> UnsafeMutablePointer<CChar> {
        value.isEmpty ? emptyCString : arena.cString(value)
    }

    func stringTable(_ strings: [String]) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> {
        let table = arena.allocate(UnsafeMutablePointer<CChar>?.self, count: max(strings.count, 1))
        for (index, value) in strings.enumerated() { table[index] = string(value) }
        return table
    }

    func timestamp(_ clock: HybridTimestamp) -> UnsafeMutablePointer<Homeroom__V1__Timestamp> {
        let message = make(homeroom__v1__timestamp__init)
        message.pointee.packed = clock.packed
        message.pointee.replica = clock.replica.rawValue
        return message
    }

    func dot(_ dot: Dot) -> UnsafeMutablePointer<Homeroom__V1__Dot> {
        let message = make(homeroom__v1__dot__init)
        message.pointee.origin = dot.origin.rawValue
        message.pointee.sequence = dot.sequence
        return message
    }

    func lockFence(_ fence: LockFence) -> UnsafeMutablePointer<Homeroom__V1__LockFence> {
        let message = make(homeroom__v1__lock_fence__init)
        message.pointee.lock = string(fence.lock)
        message.pointee.fence = fence.fence
        return message
    }

    func carousel(_ carousel: Carousel) -> UnsafeMutablePointer<Homeroom__V1__CarouselSettings> {
        let message = make(homeroom__v1__carousel_settings__init)
        message.pointee.running = carousel.running ? 1 : 0
        message.pointee.interval_seconds = carousel.intervalSeconds
        message.pointee.range = Homeroom__V1__CarouselRange(rawValue: UInt32(carousel.range.rawValue))
        message.pointee.order = Homeroom__V1__CarouselOrder(rawValue: UInt32(carousel.order.rawValue))
        return message
    }

    func schedule(_ schedule: Schedule) -> UnsafeMutablePointer<Homeroom__V1__Schedule> {
        let message = make(homeroom__v1__schedule__init)
        message.pointee.start_millis = schedule.startMillis
        message.pointee.duration_seconds = schedule.durationSeconds
        message.pointee.close_delay_seconds = schedule.closeDelaySeconds
        return message
    }

    func versionVector(_ vector: VersionVector) -> UnsafeMutablePointer<Homeroom__V1__VersionVector> {
        let message = make(homeroom__v1__version_vector__init)
        let origins = vector.origins.sorted { $0.key < $1.key }
        let list = arena.pointers(Homeroom__V1__OriginProgress.self, count: origins.count)
        for (index, (origin, progress)) in origins.enumerated() {
            let entry = make(homeroom__v1__origin_progress__init)
            entry.pointee.origin = origin.rawValue
            entry.pointee.contiguous = progress.contiguous
            if !progress.early.isEmpty {
                let gaps = arena.allocate(UInt64.self, count: progress.early.count)
                var previous = progress.contiguous
                for (position, sequence) in progress.early.enumerated() {
                    gaps[position] = sequence &- previous
                    previous = sequence
                }
                entry.pointee.n_early_gaps = progress.early.count
                entry.pointee.early_gaps = gaps
            }
            list[index] = entry
        }
        message.pointee.n_origins = origins.count
        message.pointee.origins = list
        return message
    }

    // MARK: Deltas

    /// Encodes `deltas` as one batch: clocks and sequence numbers against the
    /// previous delta, roles and counters against the author's previous delta,
    /// user ids through the string table (delta.proto explains the scheme).
    func deltaBatch(origin: ReplicaID, deltas: [Delta]) -> UnsafeMutablePointer<Homeroom__V1__DeltaBatch> {
        let batch = make(homeroom__v1__delta_batch__init)
        batch.pointee.origin = origin.rawValue
        var interner = StringInterner(capacity: min(deltas.count * 2, 1 << 16))
        var lastCounter: [UInt64] = []
        var lastRole: [UInt8] = []
        let structs = arena.allocate(Homeroom__V1__Delta.self, count: max(deltas.count, 1))
        let list = arena.pointers(Homeroom__V1__Delta.self, count: deltas.count)
        var previousClock: UInt64 = 0
        var previousSequence: UInt64 = 0
        for index in deltas.indices {
            let delta = deltas[index]
            let message = structs + index
            homeroom__v1__delta__init(message)
            list[index] = message
            message.pointee.clock_delta = Int64(bitPattern: delta.clock.packed &- previousClock)
            message.pointee.sequence_delta = Int64(bitPattern: delta.sequence &- previousSequence &- 1)
            previousClock = delta.clock.packed
            previousSequence = delta.sequence
            let author = interner.index(delta.author)
            if Int(author) >= lastCounter.count {
                // Strings first met as targets have no author state yet.
                let grow = interner.strings.count - lastCounter.count
                lastCounter.append(contentsOf: repeatElement(0, count: grow))
                lastRole.append(contentsOf: repeatElement(0, count: grow))
            }
            message.pointee.author = author
            let role = Self.role(delta.authorRole)
            if lastRole[Int(author)] != UInt8(role.rawValue) {
                message.pointee.author_role = role
                lastRole[Int(author)] = UInt8(role.rawValue)
            }
            message.pointee.author_counter_delta = Int64(bitPattern: delta.authorCounter &- lastCounter[Int(author)] &- 1)
            lastCounter[Int(author)] = delta.authorCounter
            if delta.clock.replica != origin {
                let reference = make(homeroom__v1__replica_ref__init)
                reference.pointee.id = delta.clock.replica.rawValue
                message.pointee.origin = reference
            }
            operation(delta.operation, author: delta.author, into: message, interner: &interner)
        }
        batch.pointee.n_deltas = deltas.count
        batch.pointee.deltas = list
        batch.pointee.n_strings = interner.strings.count
        batch.pointee.strings = stringTable(interner.strings)
        return batch
    }

    /// A write as a one-delta `WriteRequest` with its own string table.
    func writeRequest(_ request: WireMessage.WriteRequest) -> UnsafeMutablePointer<Homeroom__V1__WriteRequest> {
        let message = make(homeroom__v1__write_request__init)
        message.pointee.request_id = request.requestID
        var interner = StringInterner()
        let delta = make(homeroom__v1__delta__init)
        delta.pointee.author = interner.index(request.write.author)
        delta.pointee.author_role = Self.role(request.write.authorRole)
        delta.pointee.author_counter_delta = Int64(bitPattern: request.write.authorCounter &- 1)
        operation(request.write.operation, author: request.write.author, into: delta, interner: &interner)
        message.pointee.write = delta
        message.pointee.n_strings = interner.strings.count
        message.pointee.strings = stringTable(interner.strings)
        return message
    }

    @inline(__always)
    private func target(_ user: UserID, author: UserID, _ interner: inout StringInterner) -> UInt32 {
        user == author ? 0 : interner.index(user) + 1
    }

    private func operation(_ operation: Operation, author: UserID, into delta: UnsafeMutablePointer<Homeroom__V1__Delta>,
                           interner: inout StringInterner) {
        switch operation {
        case let .setStage(user, on):
            let op = make(homeroom__v1__set_stage__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.on = on ? 1 : 0
            delta.pointee.set_stage = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_STAGE
        case let .setDevice(user, device, on):
            let op = make(homeroom__v1__set_device__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.device = Self.device(device)
            op.pointee.on = on ? 1 : 0
            delta.pointee.set_device = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_DEVICE
        case let .setPrivilege(user, device, allowed):
            let op = make(homeroom__v1__set_privilege__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.device = Self.device(device)
            op.pointee.allowed = allowed ? 1 : 0
            delta.pointee.set_privilege = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_PRIVILEGE
        case let .setBoard(user, granted):
            let op = make(homeroom__v1__set_board__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.granted = granted ? 1 : 0
            delta.pointee.set_board = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_BOARD
        case let .setHand(user, raised):
            let op = make(homeroom__v1__set_hand__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.raised = raised ? 1 : 0
            delta.pointee.set_hand = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_HAND
        case let .reward(user, amount, issuedAt):
            let op = make(homeroom__v1__reward__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.amount = amount
            op.pointee.issued_at_ms = issuedAt
            delta.pointee.reward = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_REWARD
        case let .joinSession(user, session, name, role, host, incarnation):
            let op = make(homeroom__v1__join_session__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.session = string(session)
            op.pointee.name = string(name)
            op.pointee.role = Self.role(role)
            op.pointee.host = host.rawValue
            op.pointee.incarnation = incarnation
            delta.pointee.join_session = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_JOIN_SESSION
        case let .leaveSession(user, session, started):
            let op = make(homeroom__v1__leave_session__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.session = string(session)
            (op.pointee.started_clock, op.pointee.started_replica, op.pointee.started_sequence) = FlatStamp(started).fields
            delta.pointee.leave_session = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_LEAVE_SESSION
        case let .setName(user, name):
            let op = make(homeroom__v1__set_name__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.name = string(name)
            delta.pointee.set_name = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_NAME
        case let .setUserProperty(user, key, value, cause, revision):
            let op = make(homeroom__v1__set_user_property__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.key = string(key)
            if let value { op.pointee.value = arena.binary(value) } else { op.pointee.deleted = 1 }
            op.pointee.cause = string(cause)
            op.pointee.revision = revision.assigned
            if let condition = revision.condition { op.pointee.condition = revisionCondition(condition) }
            if let condition = revision.setCondition { op.pointee.set_condition = revisionCondition(condition) }
            (op.pointee.n_lineage, op.pointee.lineage) = dots(revision.lineage)
            op.pointee.fence = revision.fence.map(lockFence)
            delta.pointee.set_user_property = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_USER_PROPERTY
        case let .setRoomName(name):
            let op = make(homeroom__v1__set_room_name__init)
            op.pointee.name = string(name)
            delta.pointee.set_room_name = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_ROOM_NAME
        case let .setRoomType(type):
            let op = make(homeroom__v1__set_room_type__init)
            op.pointee.type = Self.roomType(type)
            delta.pointee.set_room_type = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_ROOM_TYPE
        case let .setStageLimit(limit):
            let op = make(homeroom__v1__set_stage_limit__init)
            op.pointee.limit = limit
            delta.pointee.set_stage_limit = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_STAGE_LIMIT
        case let .setHandLimit(limit):
            let op = make(homeroom__v1__set_hand_limit__init)
            op.pointee.limit = limit
            delta.pointee.set_hand_limit = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_HAND_LIMIT
        case let .setCarousel(value):
            let op = make(homeroom__v1__set_carousel__init)
            op.pointee.carousel = carousel(value)
            delta.pointee.set_carousel = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_CAROUSEL
        case let .acquireLock(name, ttl, fence):
            let op = make(homeroom__v1__acquire_lock__init)
            op.pointee.name = string(name)
            op.pointee.ttl_seconds = ttl
            op.pointee.fence = fence
            delta.pointee.acquire_lock = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_ACQUIRE_LOCK
        case let .setBreakoutGroup(id, name):
            let op = make(homeroom__v1__set_breakout_group__init)
            op.pointee.id = string(id)
            if let name { op.pointee.name = string(name) } else { op.pointee.removed = 1 }
            delta.pointee.set_breakout_group = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_BREAKOUT_GROUP
        case let .assignBreakoutGroup(user, group):
            let op = make(homeroom__v1__assign_breakout_group__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.group = string(group ?? "")
            delta.pointee.assign_breakout_group = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_ASSIGN_BREAKOUT_GROUP
        case .endBreakout:
            delta.pointee.end_breakout = make(homeroom__v1__end_breakout__init)
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_END_BREAKOUT
        case let .releaseLock(name, fence, revoke):
            let op = make(homeroom__v1__release_lock__init)
            op.pointee.name = string(name)
            op.pointee.fence = fence
            op.pointee.revoke = revoke ? 1 : 0
            delta.pointee.release_lock = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_RELEASE_LOCK
        case let .setSchedule(value):
            let op = make(homeroom__v1__set_schedule__init)
            op.pointee.schedule = schedule(value)
            delta.pointee.set_schedule = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_SCHEDULE
        case let .setClassState(state):
            let op = make(homeroom__v1__set_class_state__init)
            op.pointee.state = Self.classState(state)
            delta.pointee.set_class_state = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_CLASS_STATE
        case .muteAll:
            delta.pointee.mute_all = make(homeroom__v1__mute_all__init)
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_MUTE_ALL
        case let .setDeviceMuted(device, muted, ending):
            let op = make(homeroom__v1__set_device_muted__init)
            op.pointee.device = Self.device(device)
            op.pointee.muted = muted ? 1 : 0
            (op.pointee.ending_clock, op.pointee.ending_replica, op.pointee.ending_sequence) = FlatStamp(ending).fields
            delta.pointee.set_device_muted = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_DEVICE_MUTED
        case let .setHandRaising(allowed, autoStage, ending):
            let op = make(homeroom__v1__set_hand_raising__init)
            op.pointee.allowed = allowed ? 1 : 0
            op.pointee.auto_stage = autoStage ? 1 : 0
            (op.pointee.ending_clock, op.pointee.ending_replica, op.pointee.ending_sequence) = FlatStamp(ending).fields
            delta.pointee.set_hand_raising = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_HAND_RAISING
        case let .setRoomProperty(key, value, cause, revision):
            let op = make(homeroom__v1__set_room_property__init)
            op.pointee.key = string(key)
            if let value { op.pointee.value = arena.binary(value) } else { op.pointee.deleted = 1 }
            op.pointee.cause = string(cause)
            op.pointee.revision = revision.assigned
            if let condition = revision.condition { op.pointee.condition = revisionCondition(condition) }
            if let condition = revision.setCondition { op.pointee.set_condition = revisionCondition(condition) }
            (op.pointee.n_lineage, op.pointee.lineage) = dots(revision.lineage)
            op.pointee.fence = revision.fence.map(lockFence)
            delta.pointee.set_room_property = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_ROOM_PROPERTY
        case let .foldSessions(user, upTo, keep):
            let op = make(homeroom__v1__fold_sessions__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.up_to = upTo
            (op.pointee.n_keep, op.pointee.keep) = arena.uint64s(keep)
            delta.pointee.fold_sessions = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_FOLD_SESSIONS
        case let .foldRewards(user, upTo, sum, keep):
            let op = make(homeroom__v1__fold_rewards__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.up_to = upTo
            op.pointee.sum = sum
            (op.pointee.n_keep, op.pointee.keep) = arena.uint64s(keep)
            delta.pointee.fold_rewards = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_FOLD_REWARDS
        case let .replicaDown(replica, incarnation):
            let op = make(homeroom__v1__replica_down__init)
            op.pointee.replica = replica.rawValue
            op.pointee.incarnation = incarnation
            delta.pointee.replica_down = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_REPLICA_DOWN
        case let .retirePredecessors(generation, floors):
            let op = make(homeroom__v1__retire_predecessors__init)
            op.pointee.generation = generation
            let list = arena.pointers(Homeroom__V1__RetiredRewardFloor.self, count: floors.count)
            for (index, floor) in floors.enumerated() {
                let entry = make(homeroom__v1__retired_reward_floor__init)
                entry.pointee.user = target(floor.user, author: author, &interner)
                entry.pointee.up_to = floor.upTo
                entry.pointee.sum = floor.sum
                (entry.pointee.n_keep, entry.pointee.keep) = arena.uint64s(floor.keep)
                list[index] = entry
            }
            op.pointee.n_reward_floors = floors.count
            op.pointee.reward_floors = list
            delta.pointee.retire_predecessors = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_RETIRE_PREDECESSORS
        case let .inviteToStage(user, seconds):
            let op = make(homeroom__v1__invite_to_stage__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.seconds = seconds
            delta.pointee.invite_to_stage = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_INVITE_TO_STAGE
        case let .answerInvitation(accept, invitation, seconds):
            let op = make(homeroom__v1__answer_invitation__init)
            op.pointee.accept = accept ? 1 : 0
            (op.pointee.invitation_clock, op.pointee.invitation_replica, op.pointee.invitation_sequence) = FlatStamp(invitation).fields
            op.pointee.seconds = seconds
            delta.pointee.answer_invitation = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_ANSWER_INVITATION
        case let .kick(user):
            let op = make(homeroom__v1__kick__init)
            op.pointee.user = target(user, author: author, &interner)
            delta.pointee.kick = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_KICK
        case let .ban(user):
            let op = make(homeroom__v1__ban__init)
            op.pointee.user = target(user, author: author, &interner)
            delta.pointee.ban = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_BAN
        case let .sendMessage(type, payload, previous):
            let op = make(homeroom__v1__send_message__init)
            op.pointee.type = string(type)
            op.pointee.payload = arena.binary(payload)
            op.pointee.previous = previous
            delta.pointee.send_message = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SEND_MESSAGE
        case let .sendPeerMessage(recipient, type, payload, previous):
            let op = make(homeroom__v1__send_peer_message__init)
            op.pointee.user = target(recipient, author: author, &interner)
            op.pointee.type = string(type)
            op.pointee.payload = arena.binary(payload)
            op.pointee.previous = previous
            delta.pointee.send_peer_message = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SEND_PEER_MESSAGE
        case let .setChatMuted(user, muted):
            let op = make(homeroom__v1__set_chat_muted__init)
            if let user { op.pointee.user = target(user, author: author, &interner) } else { op.pointee.everyone = 1 }
            op.pointee.muted = muted ? 1 : 0
            delta.pointee.set_chat_muted = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_CHAT_MUTED
        case let .trimHistory(beforeMillis):
            let op = make(homeroom__v1__trim_history__init)
            op.pointee.before_millis = beforeMillis
            delta.pointee.trim_history = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_TRIM_HISTORY
        case let .setHistoryLimit(limit):
            let op = make(homeroom__v1__set_history_limit__init)
            op.pointee.limit = limit
            delta.pointee.set_history_limit = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_HISTORY_LIMIT
        case let .setPresenceState(user, session, items):
            let op = make(homeroom__v1__set_presence_state__init)
            op.pointee.user = target(user, author: author, &interner)
            op.pointee.session = string(session)
            let list = arena.pointers(Homeroom__V1__PresenceItem.self, count: items.count)
            for (index, item) in items.enumerated() {
                let entry = make(homeroom__v1__presence_item__init)
                entry.pointee.key = string(item.key)
                if let value = item.value { entry.pointee.value = arena.binary(value) } else { entry.pointee.deleted = 1 }
                list[index] = entry
            }
            op.pointee.n_items = items.count
            op.pointee.items = list
            delta.pointee.set_presence_state = op
            delta.pointee.op_case = HOMEROOM__V1__DELTA__OP_SET_PRESENCE_STATE
        }
    }

    private func revisionCondition(_ revision: UInt64) -> UnsafeMutablePointer<Homeroom__V1__RevisionCondition> {
        let condition = make(homeroom__v1__revision_condition__init)
        condition.pointee.revision = revision
        return condition
    }

    func dots(_ dots: [Dot]) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Dot>?>?) {
        guard !dots.isEmpty else { return (0, nil) }
        let list = arena.pointers(Homeroom__V1__Dot.self, count: dots.count)
        for (index, value) in dots.enumerated() { list[index] = dot(value) }
        return (dots.count, list)
    }

    // MARK: Enums (Core raw value + 1: 0 is UNSPECIFIED on the wire)

    @inline(__always)
    static func role(_ role: Role) -> Homeroom__V1__Role { Homeroom__V1__Role(rawValue: UInt32(role.rawValue) + 1) }
    @inline(__always)
    static func device(_ device: Device) -> Homeroom__V1__Device { Homeroom__V1__Device(rawValue: UInt32(device.rawValue) + 1) }
    static func roomType(_ type: RoomType) -> Homeroom__V1__RoomType { Homeroom__V1__RoomType(rawValue: UInt32(type.rawValue) + 1) }
    static func classState(_ state: ClassState) -> Homeroom__V1__ClassState { Homeroom__V1__ClassState(rawValue: UInt32(state.rawValue) + 1) }
}
