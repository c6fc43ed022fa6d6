#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHomeroomProto
import HomeroomCore

// protobuf-c structures -> Swift values, validating every field against the
// limits. protobuf-c has already checked the wire syntax; here we check
// meaning: counts, lengths, UTF-8, enum ranges, table indexes, required parts.
// Field names in errors are proto paths, so a sender can find its mistake.

struct CDecoder {
    let limits: WireLimits

    // MARK: Primitives

    @inline(__always)
    func count(_ count: Int, max limit: Int, _ what: @autoclosure () -> String) throws(WireError) {
        if count > limit { throw .limitExceeded(what: what(), limit: limit, actual: count) }
    }

    @inline(__always)
    func string(_ pointer: UnsafePointer<CChar>?, _ field: @autoclosure () -> String) throws(WireError) -> String {
        guard let pointer else { return "" }
        let length = strlen(pointer)
        if length == 0 { return "" }
        if length > limits.maxStringBytes {
            throw .limitExceeded(what: "\(field()) (bytes)", limit: limits.maxStringBytes, actual: length)
        }
        // The C-string initializer validates without the generic path of
        // `String(validating:as:)`, whose metadata lookups cost more than the copy.
        guard let value = String(validatingCString: pointer) else {
            throw .invalidValue(field: field(), reason: "not valid UTF-8")
        }
        return value
    }

    @inline(__always)
    func string(_ pointer: UnsafeMutablePointer<CChar>?, _ field: @autoclosure () -> String) throws(WireError) -> String {
        try string(UnsafePointer(pointer), field())
    }

    func bytes(_ data: ProtobufCBinaryData, _ field: @autoclosure () -> String) throws(WireError) -> [UInt8] {
        guard data.len > 0, let base = data.data else { return [] }
        if data.len > limits.maxBytesValue {
            throw .limitExceeded(what: "\(field()) (bytes)", limit: limits.maxBytesValue, actual: data.len)
        }
        return Array(UnsafeBufferPointer(start: base, count: data.len))
    }

    func stringTable(_ count: Int, _ table: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
                     _ field: @autoclosure () -> String) throws(WireError) -> [String] {
        try self.count(count, max: limits.maxStringTable, "\(field()) entries")
        guard count > 0, let table else { return [] }
        var strings: [String] = []
        strings.reserveCapacity(count)
        for index in 0..<count {
            strings.append(try string(table[index], "\(field())[\(index)]"))
        }
        return strings
    }

    // MARK: Enums (wire value = Core raw value + 1; 0 is UNSPECIFIED)

    @inline(__always)
    static func role(_ raw: UInt32) -> Role? {
        raw >= 1 && raw <= 5 ? Role(rawValue: UInt8(raw - 1)) : nil
    }

    func role(_ value: Homeroom__V1__Role, _ field: @autoclosure () -> String) throws(WireError) -> Role {
        if value.rawValue == 0 { throw .missingField(field()) }
        guard let role = Self.role(value.rawValue) else {
            throw .invalidValue(field: field(), reason: "role \(value.rawValue) is not one of 1-5 (observer..system)")
        }
        return role
    }

    func device(_ value: Homeroom__V1__Device, _ field: @autoclosure () -> String) throws(WireError) -> Device {
        switch value.rawValue {
        case 1: return .camera
        case 2: return .microphone
        case 0: throw .missingField(field())
        default: throw .invalidValue(field: field(), reason: "device \(value.rawValue) is not 1 (camera) or 2 (microphone)")
        }
    }

    func roomType(_ value: Homeroom__V1__RoomType, _ field: @autoclosure () -> String) throws(WireError) -> RoomType {
        if value.rawValue == 0 { throw .missingField(field()) }
        guard value.rawValue <= 3, let type = RoomType(rawValue: UInt8(value.rawValue - 1)) else {
            throw .invalidValue(field: field(), reason: "room type \(value.rawValue) is not one of 1-3")
        }
        return type
    }

    /// Range and order are required while it runs; a stopped carousel may leave them unset.
    /// `checkingInterval`: a running carousel's interval must be 10-99 s. Patches check it
    /// (no replica's state holds another); a `set_carousel` delta does not: out of range,
    /// it is a well-formed write the authority rules refuse (`not-allowed`), on every
    /// replica alike, as a lock TTL out of range is.
    func carousel(_ message: UnsafeMutablePointer<Homeroom__V1__CarouselSettings>?, _ field: @autoclosure () -> String,
                  checkingInterval: Bool) throws(WireError) -> Carousel {
        guard let message else { throw .missingField(field()) }
        let value = message.pointee
        let running = value.running != 0
        func known<T>(_ raw: UInt32, _ name: String, _ make: (UInt8) -> T?, _ fallback: T) throws(WireError) -> T {
            if raw == 0 {
                if running { throw .missingField("\(field()).\(name)") }
                return fallback
            }
            guard raw <= 255, let known = make(UInt8(raw)) else {
                throw .invalidValue(field: "\(field()).\(name)", reason: "\(raw) is not one of 1-2")
            }
            return known
        }
        if checkingInterval && running && !Carousel.intervalRange.contains(value.interval_seconds) {
            throw .invalidValue(field: "\(field()).interval_seconds",
                                reason: "a carousel turns every \(Carousel.intervalRange.lowerBound) to \(Carousel.intervalRange.upperBound) s, not \(value.interval_seconds)")
        }
        return Carousel(running: running, intervalSeconds: value.interval_seconds,
                        range: try known(value.range.rawValue, "range", { Carousel.Range(rawValue: $0) }, .all),
                        order: try known(value.order.rawValue, "order", { Carousel.Order(rawValue: $0) }, .joinOrder))
    }

    func classState(_ value: Homeroom__V1__ClassState, _ field: @autoclosure () -> String) throws(WireError) -> ClassState {
        if value.rawValue == 0 { throw .missingField(field()) }
        guard value.rawValue <= 3, let state = ClassState(rawValue: UInt8(value.rawValue - 1)) else {
            throw .invalidValue(field: field(), reason: "class state \(value.rawValue) is not one of 1-3")
        }
        return state
    }

    @inline(__always)
    func bool(_ value: protobuf_c_boolean) -> Bool { value != 0 }

    // MARK: Small messages

    func timestamp(_ message: UnsafeMutablePointer<Homeroom__V1__Timestamp>?) -> HybridTimestamp {
        guard let message else { return .zero }
        return HybridTimestamp(packed: message.pointee.packed, replica: ReplicaID(message.pointee.replica))
    }

    func schedule(_ message: UnsafeMutablePointer<Homeroom__V1__Schedule>?, _ field: @autoclosure () -> String) throws(WireError) -> Schedule {
        guard let message else { throw .missingField(field()) }
        return Schedule(startMillis: message.pointee.start_millis, durationSeconds: message.pointee.duration_seconds,
                        closeDelaySeconds: message.pointee.close_delay_seconds)
    }

    func versionVector(_ message: UnsafeMutablePointer<Homeroom__V1__VersionVector>?,
                       _ field: @autoclosure () -> String) throws(WireError) -> VersionVector {
        guard let message, message.pointee.n_origins > 0, let list = message.pointee.origins else { return VersionVector() }
        let count = message.pointee.n_origins
        try self.count(count, max: limits.maxOrigins, "\(field()).origins")
        var origins: [ReplicaID: OriginProgress] = [:]
        origins.reserveCapacity(count)
        for index in 0..<count {
            let entry = list[index]!.pointee
            let origin = ReplicaID(entry.origin)
            if origins[origin] != nil {
                throw .invalidValue(field: "\(field()).origins[\(index)]", reason: "origin \(origin) appears twice")
            }
            var early: [UInt64] = []
            if entry.n_early_gaps > 0, let gaps = entry.early_gaps {
                try self.count(entry.n_early_gaps, max: limits.maxEarlyPerOrigin, "\(field()).origins[\(index)].early_gaps")
                early.reserveCapacity(entry.n_early_gaps)
                var previous = entry.contiguous
                for position in 0..<entry.n_early_gaps {
                    let gap = gaps[position]
                    let (sequence, overflow) = previous.addingReportingOverflow(gap)
                    if gap == 0 || overflow {
                        throw .invalidValue(field: "\(field()).origins[\(index)].early_gaps[\(position)]",
                                            reason: gap == 0 ? "gaps are at least 1 (early sequences are sorted and unique)"
                                                : "sequence number overflows 64 bits")
                    }
                    early.append(sequence)
                    previous = sequence
                }
            }
            origins[origin] = OriginProgress(contiguous: entry.contiguous, early: early)
        }
        return VersionVector(origins)
    }

    // MARK: Deltas

    /// Per-batch decoding state (see delta.proto).
    struct DeltaContext {
        var strings: [String]
        var lastCounter: [UInt64]
        var lastRole: [UInt8]

        init(strings: [String]) {
            self.strings = strings
            lastCounter = [UInt64](repeating: 0, count: strings.count)
            lastRole = [UInt8](repeating: 0, count: strings.count)
        }
    }

    func deltaBatch(_ message: UnsafeMutablePointer<Homeroom__V1__DeltaBatch>?, _ field: String) throws(WireError) -> WireMessage.DeltaBatch {
        guard let message else { throw .missingField(field) }
        let batch = message.pointee
        try count(batch.n_deltas, max: limits.maxDeltasPerBatch, "\(field).deltas")
        var context = DeltaContext(strings: try stringTable(batch.n_strings, batch.strings, "\(field).strings"))
        let origin = ReplicaID(batch.origin)
        var deltas: [Delta] = []
        deltas.reserveCapacity(batch.n_deltas)
        var previousClock: UInt64 = 0
        var previousSequence: UInt64 = 0
        for index in 0..<batch.n_deltas {
            let delta = batch.deltas[index]!
            let clock = previousClock &+ UInt64(bitPattern: delta.pointee.clock_delta)
            let sequence = previousSequence &+ 1 &+ UInt64(bitPattern: delta.pointee.sequence_delta)
            previousClock = clock
            previousSequence = sequence
            if sequence == 0 {
                throw .invalidValue(field: "\(field).deltas[\(index)].sequence_delta", reason: "gives sequence 0; sequence numbers start at 1")
            }
            let replica = delta.pointee.origin.map { ReplicaID($0.pointee.id) } ?? origin
            let (author, role, counter, operation) = try write(delta, context: &context, "\(field).deltas[\(index)]")
            deltas.append(Delta(sequence: sequence, clock: HybridTimestamp(packed: clock, replica: replica), author: author,
                                authorRole: role, authorCounter: counter, operation: operation))
        }
        return WireMessage.DeltaBatch(origin: origin, deltas: deltas)
    }

    func writeRequest(_ message: UnsafeMutablePointer<Homeroom__V1__WriteRequest>?, _ field: String) throws(WireError) -> WireMessage.WriteRequest {
        guard let message else { throw .missingField(field) }
        var context = DeltaContext(strings: try stringTable(message.pointee.n_strings, message.pointee.strings, "\(field).strings"))
        guard let delta = message.pointee.write else { throw .missingField("\(field).write") }
        let (author, role, counter, operation) = try write(delta, context: &context, "\(field).write")
        return WireMessage.WriteRequest(requestID: message.pointee.request_id,
                                        write: Write(author: author, authorRole: role, authorCounter: counter, operation: operation))
    }

    /// The author, role, counter and operation of one delta.
    @inline(__always)
    private func write(_ delta: UnsafeMutablePointer<Homeroom__V1__Delta>, context: inout DeltaContext,
                       _ field: @autoclosure () -> String) throws(WireError) -> (UserID, Role, UInt64, HomeroomCore.Operation) {
        let authorIndex = Int(delta.pointee.author)
        guard authorIndex < context.strings.count else {
            throw .invalidValue(field: "\(field()).author", reason: "index \(authorIndex) is past the string table (\(context.strings.count) entries)")
        }
        var roleRaw = delta.pointee.author_role.rawValue
        if roleRaw == 0 {
            roleRaw = UInt32(context.lastRole[authorIndex])
            if roleRaw == 0 { throw .missingField("\(field()).author_role (first delta of this author in the batch)") }
        }
        guard let role = Self.role(roleRaw) else {
            throw .invalidValue(field: "\(field()).author_role", reason: "role \(roleRaw) is not one of 1-5 (observer..system)")
        }
        context.lastRole[authorIndex] = UInt8(roleRaw)
        let counter = context.lastCounter[authorIndex] &+ 1 &+ UInt64(bitPattern: delta.pointee.author_counter_delta)
        context.lastCounter[authorIndex] = counter
        let author = context.strings[authorIndex]
        let operation = try self.operation(delta, author: author, strings: context.strings, field())
        return (author, role, counter, operation)
    }

    @inline(__always)
    private func user(_ raw: UInt32, author: UserID, strings: [String], _ field: @autoclosure () -> String) throws(WireError) -> UserID {
        if raw == 0 { return author }
        let index = Int(raw) - 1
        guard index < strings.count else {
            throw .invalidValue(field: "\(field()).user", reason: "index \(raw) is past the string table (\(strings.count) entries; 0 is the author)")
        }
        return strings[index]
    }

    private func property(deleted: protobuf_c_boolean, value: ProtobufCBinaryData, _ field: @autoclosure () -> String) throws(WireError) -> [UInt8]? {
        deleted != 0 ? nil : try bytes(value, "\(field()).value")
    }

    private func revision(_ assigned: UInt64, _ condition: UnsafeMutablePointer<Homeroom__V1__RevisionCondition>?,
                          _ setCondition: UnsafeMutablePointer<Homeroom__V1__RevisionCondition>?, _ count: Int,
                          _ lineage: UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Dot>?>?,
                          _ fence: UnsafeMutablePointer<Homeroom__V1__LockFence>?,
                          _ field: @autoclosure () -> String) throws(WireError) -> PropertyRevision {
        PropertyRevision(condition: condition.map { $0.pointee.revision }, setCondition: setCondition.map { $0.pointee.revision },
                         assigned: assigned, lineage: try dots(count, lineage, "\(field()).lineage"),
                         fence: try lockFence(fence, "\(field()).fence"))
    }

    /// A lock fence, if present: a lock name of 1-64 bytes and a fence above 0.
    func lockFence(_ message: UnsafeMutablePointer<Homeroom__V1__LockFence>?, _ field: @autoclosure () -> String) throws(WireError) -> LockFence? {
        guard let message else { return nil }
        let name = try string(message.pointee.lock, "\(field()).lock")
        guard !name.isEmpty, name.utf8.count <= Locks.maxNameBytes else {
            throw .invalidValue(field: "\(field()).lock", reason: "a lock name is 1 to \(Locks.maxNameBytes) bytes")
        }
        guard message.pointee.fence > 0, message.pointee.fence <= Locks.maxFence else {
            throw .invalidValue(field: "\(field()).fence", reason: "a fence is 1 to 2^62")
        }
        return LockFence(lock: name, fence: message.pointee.fence)
    }

    /// A list of dots, at most `maxLineage` of them.
    func dots(_ count: Int, _ list: UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Dot>?>?,
              _ field: @autoclosure () -> String) throws(WireError) -> [Dot] {
        try self.count(count, max: limits.maxLineage, field())
        guard count > 0, let list else { return [] }
        return (0..<count).map { Dot(origin: ReplicaID(list[$0]!.pointee.origin), sequence: list[$0]!.pointee.sequence) }
    }

    private func operation(_ delta: UnsafeMutablePointer<Homeroom__V1__Delta>, author: UserID, strings: [String],
                           _ field: @autoclosure () -> String) throws(WireError) -> HomeroomCore.Operation {
        let d = delta.pointee
        switch d.op_case.rawValue {
        case 6:
            let op = d.set_stage!.pointee
            return .setStage(user: try user(op.user, author: author, strings: strings, "\(field()).set_stage"), on: bool(op.on))
        case 7:
            let op = d.set_device!.pointee
            return .setDevice(user: try user(op.user, author: author, strings: strings, "\(field()).set_device"),
                              device: try device(op.device, "\(field()).set_device.device"), on: bool(op.on))
        case 8:
            let op = d.set_privilege!.pointee
            return .setPrivilege(user: try user(op.user, author: author, strings: strings, "\(field()).set_privilege"),
                                 device: try device(op.device, "\(field()).set_privilege.device"), allowed: bool(op.allowed))
        case 9:
            let op = d.set_board!.pointee
            return .setBoard(user: try user(op.user, author: author, strings: strings, "\(field()).set_board"), granted: bool(op.granted))
        case 10:
            let op = d.set_hand!.pointee
            return .setHand(user: try user(op.user, author: author, strings: strings, "\(field()).set_hand"), raised: bool(op.raised))
        case 11:
            let op = d.reward!.pointee
            return .reward(user: try user(op.user, author: author, strings: strings, "\(field()).reward"), amount: op.amount,
                           issuedAtMillis: op.issued_at_ms)
        case 12:
            let op = d.join_session!.pointee
            let path = "\(field()).join_session"
            return .joinSession(user: try user(op.user, author: author, strings: strings, path),
                                session: try string(op.session, "\(path).session"), name: try string(op.name, "\(path).name"),
                                role: try role(op.role, "\(path).role"), host: ReplicaID(op.host), incarnation: op.incarnation)
        case 13:
            let op = d.leave_session!.pointee
            // All three 0: an older node that did not say where the session started.
            let started = FlatStamp(clock: op.started_clock, replica: op.started_replica, sequence: op.started_sequence).stamp
            return .leaveSession(user: try user(op.user, author: author, strings: strings, "\(field()).leave_session"),
                                 session: try string(op.session, "\(field()).leave_session.session"), started: started)
        case 14:
            let op = d.set_name!.pointee
            return .setName(user: try user(op.user, author: author, strings: strings, "\(field()).set_name"),
                            name: try string(op.name, "\(field()).set_name.name"))
        case 15:
            let op = d.set_user_property!.pointee
            let path = "\(field()).set_user_property"
            return .setUserProperty(user: try user(op.user, author: author, strings: strings, path), key: try string(op.key, "\(path).key"),
                                    value: try property(deleted: op.deleted, value: op.value, path), cause: try string(op.cause, "\(path).cause"),
                                    revision: try revision(op.revision, op.condition, op.set_condition, op.n_lineage, op.lineage, op.fence, path))
        case 16:
            return .setRoomName(try string(d.set_room_name!.pointee.name, "\(field()).set_room_name.name"))
        case 17:
            return .setRoomType(try roomType(d.set_room_type!.pointee.type, "\(field()).set_room_type.type"))
        case 18:
            return .setStageLimit(d.set_stage_limit!.pointee.limit)
        case 19:
            return .setHandLimit(d.set_hand_limit!.pointee.limit)
        case 20:
            return .setSchedule(try schedule(d.set_schedule!.pointee.schedule, "\(field()).set_schedule.schedule"))
        case 21:
            return .setClassState(try classState(d.set_class_state!.pointee.state, "\(field()).set_class_state.state"))
        case 22:
            return .muteAll
        case 43:
            let op = d.set_device_muted!.pointee
            // All three 0: no mute to end (a mute, or an unmute of a room that was not muted).
            let ending = FlatStamp(clock: op.ending_clock, replica: op.ending_replica, sequence: op.ending_sequence).stamp ?? .origin
            return .setDeviceMuted(device: try device(op.device, "\(field()).set_device_muted.device"), muted: bool(op.muted), ending: ending)
        case 45:
            let op = d.invite_to_stage!.pointee
            return .inviteToStage(user: try user(op.user, author: author, strings: strings, "\(field()).invite_to_stage"), seconds: op.seconds)
        case 46:
            let op = d.answer_invitation!.pointee
            // All three 0: a client's answer, before its origin names the invitation.
            let invitation = FlatStamp(clock: op.invitation_clock, replica: op.invitation_replica, sequence: op.invitation_sequence).stamp ?? .origin
            return .answerInvitation(accept: bool(op.accept), invitation: invitation, seconds: op.seconds)
        case 44:
            let op = d.set_hand_raising!.pointee
            let ending = FlatStamp(clock: op.ending_clock, replica: op.ending_replica, sequence: op.ending_sequence).stamp ?? .origin
            return .setHandRaising(allowed: bool(op.allowed), autoStage: bool(op.auto_stage), ending: ending)
        case 23:
            let op = d.set_room_property!.pointee
            let path = "\(field()).set_room_property"
            return .setRoomProperty(key: try string(op.key, "\(path).key"), value: try property(deleted: op.deleted, value: op.value, path),
                                    cause: try string(op.cause, "\(path).cause"),
                                    revision: try revision(op.revision, op.condition, op.set_condition, op.n_lineage, op.lineage, op.fence, path))
        case 24:
            let op = d.replica_down!.pointee
            return .replicaDown(replica: ReplicaID(op.replica), incarnation: op.incarnation)
        case 25:
            return .kick(user: try user(d.kick!.pointee.user, author: author, strings: strings, "\(field()).kick"))
        case 26:
            return .ban(user: try user(d.ban!.pointee.user, author: author, strings: strings, "\(field()).ban"))
        case 27:
            let op = d.send_message!.pointee
            let path = "\(field()).send_message"
            return .sendMessage(type: try string(op.type, "\(path).type"), payload: try bytes(op.payload, "\(path).payload"), previous: op.previous)
        case 28:
            let op = d.send_peer_message!.pointee
            let path = "\(field()).send_peer_message"
            return .sendPeerMessage(to: try user(op.user, author: author, strings: strings, path), type: try string(op.type, "\(path).type"),
                                    payload: try bytes(op.payload, "\(path).payload"), previous: op.previous)
        case 29:
            let op = d.set_chat_muted!.pointee
            let target = op.everyone != 0 ? nil : try user(op.user, author: author, strings: strings, "\(field()).set_chat_muted")
            return .setChatMuted(user: target, muted: bool(op.muted))
        case 30:
            return .trimHistory(beforeMillis: d.trim_history!.pointee.before_millis)
        case 31:
            return .setHistoryLimit(d.set_history_limit!.pointee.limit)
        case 32:
            let op = d.set_presence_state!.pointee
            let path = "\(field()).set_presence_state"
            try count(op.n_items, max: limits.maxPresenceItems, "\(path).items")
            var items: [PresenceItem] = []
            items.reserveCapacity(op.n_items)
            for index in 0..<op.n_items {
                let item = op.items[index]!.pointee
                items.append(PresenceItem(key: try string(item.key, "\(path).items[\(index)].key"),
                                          value: item.deleted != 0 ? nil : try bytes(item.value, "\(path).items[\(index)].value")))
            }
            return .setPresenceState(user: try user(op.user, author: author, strings: strings, path),
                                     session: try string(op.session, "\(path).session"), items: items)
        case 33:
            let op = d.fold_sessions!.pointee
            let path = "\(field()).fold_sessions"
            try count(op.n_keep, max: SessionFloor.maxKept, "\(path).keep")
            let keep = op.n_keep == 0 ? [] : (0..<op.n_keep).map { op.keep[$0] }
            return .foldSessions(user: try user(op.user, author: author, strings: strings, path), upTo: op.up_to, keep: keep)
        case 34:
            let op = d.fold_rewards!.pointee
            let path = "\(field()).fold_rewards"
            guard op.sum >= 0 else { throw .invalidValue(field: "\(path).sum", reason: "a fold's sum is never negative, not \(op.sum)") }
            try count(op.n_keep, max: RewardFloor.maxKept, "\(path).keep")
            let keep = op.n_keep == 0 ? [] : (0..<op.n_keep).map { op.keep[$0] }
            return .foldRewards(user: try user(op.user, author: author, strings: strings, path), upTo: op.up_to, sum: op.sum, keep: keep)
        case 35:
            let op = d.retire_predecessors!.pointee
            let path = "\(field()).retire_predecessors"
            try count(op.n_reward_floors, max: limits.maxUsersPerPatch, "\(path).reward_floors")
            var floors: [RetiredRewardFloor] = []
            floors.reserveCapacity(op.n_reward_floors)
            for index in 0..<op.n_reward_floors {
                let entry = op.reward_floors[index]!.pointee
                guard entry.sum >= 0 else {
                    throw .invalidValue(field: "\(path).reward_floors[\(index)].sum", reason: "a floor's sum is never negative, not \(entry.sum)")
                }
                try count(entry.n_keep, max: RewardFloor.maxKept, "\(path).reward_floors[\(index)].keep")
                let keep = entry.n_keep == 0 ? [] : (0..<entry.n_keep).map { entry.keep[$0] }
                floors.append(RetiredRewardFloor(user: try user(entry.user, author: author, strings: strings, "\(path).reward_floors[\(index)]"),
                                                 upTo: entry.up_to, sum: entry.sum, keep: keep))
            }
            return .retirePredecessors(generation: op.generation, rewardFloors: floors)
        case 39:
            let op = d.set_breakout_group!.pointee
            let id = try string(op.id, "\(field()).set_breakout_group.id")
            return .setBreakoutGroup(id: id, name: op.removed != 0 ? nil : try string(op.name, "\(field()).set_breakout_group.name"))
        case 41:
            let op = d.assign_breakout_group!.pointee
            let group = try string(op.group, "\(field()).assign_breakout_group.group")
            return .assignBreakoutGroup(user: try user(op.user, author: author, strings: strings, "\(field()).assign_breakout_group"),
                                        group: group.isEmpty ? nil : group)
        case 42:
            return .endBreakout
        case 37:
            let op = d.acquire_lock!.pointee
            return .acquireLock(name: try string(op.name, "\(field()).acquire_lock.name"), ttlSeconds: op.ttl_seconds, fence: op.fence)
        case 38:
            let op = d.release_lock!.pointee
            return .releaseLock(name: try string(op.name, "\(field()).release_lock.name"), fence: op.fence, revoke: op.revoke != 0)
        case 36:
            return .setCarousel(try carousel(d.set_carousel!.pointee.carousel, "\(field()).set_carousel.carousel", checkingInterval: false))
        default:
            throw .missingField("\(field()).op (no operation this version knows)")
        }
    }
}
