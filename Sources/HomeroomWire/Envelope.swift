import CHomeroomProto
import HomeroomCore

// The envelope and its control messages, both ways.

extension CEncoder {
    func envelope(_ envelope: WireEnvelope) -> UnsafeMutablePointer<Homeroom__V1__Envelope> {
        let message = make(homeroom__v1__envelope__init)
        message.pointee.protocol_version = envelope.protocolVersion
        message.pointee.room_id = string(envelope.roomID)
        message.pointee.sender = envelope.sender.rawValue
        message.pointee.sequence = envelope.sequence
        if envelope.clock != .zero { message.pointee.clock = timestamp(envelope.clock) }
        message.pointee.credential = arena.binary(envelope.credential)
        switch envelope.message {
        case let .deltaBatch(batch):
            message.pointee.delta_batch = deltaBatch(origin: batch.origin, deltas: batch.deltas)
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_DELTA_BATCH
        case let .snapshot(state):
            message.pointee.snapshot = PatchEncoder.encode(state, with: self)
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_SNAPSHOT
        case let .patch(state):
            message.pointee.patch = PatchEncoder.encode(state, with: self)
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_PATCH
        case let .digest(vector):
            let digest = make(homeroom__v1__digest__init)
            digest.pointee.seen = versionVector(vector)
            message.pointee.digest = digest
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_DIGEST
        case let .syncRequest(request):
            let body = make(homeroom__v1__sync_request__init)
            body.pointee.seen = versionVector(request.seen)
            let list = arena.pointers(Homeroom__V1__MissingRange.self, count: request.missing.count)
            for (index, range) in request.missing.enumerated() {
                let entry = make(homeroom__v1__missing_range__init)
                entry.pointee.origin = range.origin.rawValue
                entry.pointee.first = range.first
                entry.pointee.last = range.last
                list[index] = entry
            }
            body.pointee.n_missing = request.missing.count
            body.pointee.missing = list
            body.pointee.user = string(request.user)
            body.pointee.session = string(request.session)
            message.pointee.sync_request = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_SYNC_REQUEST
        case let .syncResponse(response):
            let body = make(homeroom__v1__sync_response__init)
            if let patch = response.patch { body.pointee.patch = PatchEncoder.encode(patch, with: self) }
            let list = arena.pointers(Homeroom__V1__DeltaBatch.self, count: response.batches.count)
            for (index, batch) in response.batches.enumerated() {
                list[index] = deltaBatch(origin: batch.origin, deltas: batch.deltas)
            }
            body.pointee.n_batches = response.batches.count
            body.pointee.batches = list
            body.pointee.seen = versionVector(response.seen)
            if let keys = response.keys { body.pointee.keys = topicKeys(keys) }
            message.pointee.sync_response = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_SYNC_RESPONSE
        case let .writeRequest(request):
            message.pointee.write_request = writeRequest(request)
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_WRITE_REQUEST
        case let .writeAck(ack):
            let body = make(homeroom__v1__write_ack__init)
            body.pointee.request_id = ack.requestID
            body.pointee.status = Homeroom__V1__WriteStatus(rawValue: UInt32(ack.status.rawValue))
            body.pointee.error_code = string(ack.errorCode)
            body.pointee.message = string(ack.message)
            if let value = ack.dot { body.pointee.dot = dot(value) }
            body.pointee.revision = ack.revision
            body.pointee.set_revision = ack.setRevision
            body.pointee.fence = ack.fence
            message.pointee.write_ack = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_WRITE_ACK
        case let .heartbeat(heartbeat):
            let body = make(homeroom__v1__heartbeat__init)
            body.pointee.node = heartbeat.node.rawValue
            body.pointee.incarnation = heartbeat.incarnation
            body.pointee.address = string(heartbeat.address)
            body.pointee.publish_address = string(heartbeat.publishAddress)
            body.pointee.cluster_publish_address = string(heartbeat.clusterPublishAddress)
            body.pointee.sent_at_ms = heartbeat.sentAtMillis
            body.pointee.node_name = string(heartbeat.nodeName)
            body.pointee.health = string(heartbeat.health)
            body.pointee.listing = heartbeat.listing ? 1 : 0
            body.pointee.rooms_partial = heartbeat.roomsPartial ? 1 : 0
            body.pointee.rooms_hash = heartbeat.roomsHash
            body.pointee.draining = heartbeat.draining ? 1 : 0
            body.pointee.room_streams = heartbeat.roomStreams ? 1 : 0
            let rooms = arena.pointers(Homeroom__V1__RoomDigest.self, count: heartbeat.rooms.count)
            for (index, room) in heartbeat.rooms.enumerated() {
                let entry = make(homeroom__v1__room_digest__init)
                entry.pointee.room_id = string(room.roomID)
                entry.pointee.seen = versionVector(room.seen)
                entry.pointee.users = room.users
                entry.pointee.online = room.online
                if !room.stage.isEmpty {
                    let stage = arena.pointers(CChar.self, count: room.stage.count)
                    for (position, user) in room.stage.enumerated() { stage[position] = string(user) }
                    entry.pointee.n_stage = room.stage.count
                    entry.pointee.stage = stage
                }
                rooms[index] = entry
            }
            body.pointee.n_rooms = heartbeat.rooms.count
            body.pointee.rooms = rooms
            body.pointee.n_peers = heartbeat.peers.count
            body.pointee.peers = peers(heartbeat.peers)
            message.pointee.heartbeat = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_HEARTBEAT
        case let .joinRequest(request):
            let body = make(homeroom__v1__join_request__init)
            body.pointee.user = string(request.user)
            body.pointee.role = Self.role(request.role)
            body.pointee.session = string(request.session)
            body.pointee.name = string(request.name)
            if let resume = request.resume { body.pointee.resume = versionVector(resume) }
            message.pointee.join_request = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_JOIN_REQUEST
        case let .joinResponse(response):
            let body = make(homeroom__v1__join_response__init)
            body.pointee.session = string(response.session)
            body.pointee.host = response.host.rawValue
            body.pointee.incarnation = response.incarnation
            let state = PatchEncoder.encode(response.state, with: self)
            if response.isSnapshot {
                body.pointee.snapshot = state
                body.pointee.state_case = HOMEROOM__V1__JOIN_RESPONSE__STATE_SNAPSHOT
            } else {
                body.pointee.patch = state
                body.pointee.state_case = HOMEROOM__V1__JOIN_RESPONSE__STATE_PATCH
            }
            if let keys = response.keys { body.pointee.keys = topicKeys(keys) }
            message.pointee.join_response = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_JOIN_RESPONSE
        case let .roomMessage(chat):
            let body = make(homeroom__v1__room_message__init)
            body.pointee.sender = string(chat.sender)
            body.pointee.type = string(chat.type)
            body.pointee.payload = arena.binary(chat.payload)
            body.pointee.sender_sequence = chat.senderSequence
            body.pointee.timestamp_millis = chat.timestampMillis
            message.pointee.room_message = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_ROOM_MESSAGE
        case let .peerMessage(chat):
            let body = make(homeroom__v1__peer_message__init)
            body.pointee.sender = string(chat.sender)
            body.pointee.recipient = string(chat.recipient)
            body.pointee.type = string(chat.type)
            body.pointee.payload = arena.binary(chat.payload)
            body.pointee.sender_sequence = chat.senderSequence
            body.pointee.timestamp_millis = chat.timestampMillis
            message.pointee.peer_message = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_PEER_MESSAGE
        case let .error(reply):
            let body = make(homeroom__v1__error_reply__init)
            body.pointee.code = string(reply.code)
            body.pointee.message = string(reply.message)
            body.pointee.supported_version = reply.supportedVersion
            body.pointee.n_owners = reply.owners.count
            body.pointee.owners = peers(reply.owners)
            message.pointee.error = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_ERROR
        case let .probeRequest(target):
            let body = make(homeroom__v1__probe_request__init)
            body.pointee.target = target.rawValue
            message.pointee.probe_request = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_PROBE_REQUEST
        case let .probeReply(reply):
            let body = make(homeroom__v1__probe_reply__init)
            body.pointee.target = reply.target.rawValue
            body.pointee.alive = reply.alive ? 1 : 0
            body.pointee.incarnation = reply.incarnation
            body.pointee.heard_ago_ms = reply.heardAgoMillis
            message.pointee.probe_reply = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_PROBE_REPLY
        case let .renewRequest(session):
            let body = make(homeroom__v1__renew_request__init)
            body.pointee.session = string(session)
            message.pointee.renew_request = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_RENEW_REQUEST
        case let .renewReply(expiresAt):
            let body = make(homeroom__v1__renew_reply__init)
            body.pointee.expires_at = expiresAt
            message.pointee.renew_reply = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_RENEW_REPLY
        case let .whereNowRequest(user):
            let body = make(homeroom__v1__where_now_request__init)
            body.pointee.user = string(user)
            message.pointee.where_now_request = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_WHERE_NOW_REQUEST
        case let .whereNowReply(reply):
            let body = make(homeroom__v1__where_now_reply__init)
            if !reply.rooms.isEmpty {
                let rooms = arena.pointers(CChar.self, count: reply.rooms.count)
                for (position, room) in reply.rooms.enumerated() { rooms[position] = string(room) }
                body.pointee.n_rooms = reply.rooms.count
                body.pointee.rooms = rooms
            }
            body.pointee.truncated = reply.truncated ? 1 : 0
            body.pointee.unanswered = reply.unanswered
            message.pointee.where_now_reply = body
            message.pointee.body_case = HOMEROOM__V1__ENVELOPE__BODY_WHERE_NOW_REPLY
        }
        return message
    }

    private func peers(_ list: [WireMessage.Peer]) -> UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Peer>?>? {
        let peers = arena.pointers(Homeroom__V1__Peer.self, count: list.count)
        for (index, peer) in list.enumerated() {
            let entry = make(homeroom__v1__peer__init)
            entry.pointee.node = peer.node.rawValue
            entry.pointee.address = string(peer.address)
            entry.pointee.publish_address = string(peer.publishAddress)
            entry.pointee.cluster_publish_address = string(peer.clusterPublishAddress)
            entry.pointee.incarnation = peer.incarnation
            entry.pointee.status = Homeroom__V1__PeerStatus(rawValue: UInt32(peer.status.rawValue))
            entry.pointee.heard_ms_ago = peer.heardMillisAgo
            entry.pointee.behind = peer.behind
            entry.pointee.rooms = peer.rooms
            entry.pointee.node_name = string(peer.nodeName)
            entry.pointee.draining = peer.draining ? 1 : 0
            peers[index] = entry
        }
        return peers
    }

    private func topicKeys(_ keys: WireMessage.TopicKeys) -> UnsafeMutablePointer<Homeroom__V1__TopicKeys> {
        let body = make(homeroom__v1__topic_keys__init)
        body.pointee.room_key_id = arena.binary(keys.roomKeyID)
        body.pointee.room_key = arena.binary(keys.roomKey)
        body.pointee.user_key_id = arena.binary(keys.userKeyID)
        body.pointee.user_key = arena.binary(keys.userKey)
        return body
    }
}

extension CDecoder {
    func envelope(_ message: UnsafeMutablePointer<Homeroom__V1__Envelope>) throws(WireError) -> WireEnvelope {
        let envelope = message.pointee
        let roomID = try string(envelope.room_id, "envelope.room_id")
        let credential = try bytes(envelope.credential, "envelope.credential")
        let body: WireMessage
        switch envelope.body_case.rawValue {
        case 7:
            body = .deltaBatch(try deltaBatch(envelope.delta_batch, "envelope.delta_batch"))
        case 8:
            body = .snapshot(try roomPatch(envelope.snapshot, "envelope.snapshot", roomID: roomID))
        case 9:
            body = .patch(try roomPatch(envelope.patch, "envelope.patch", roomID: roomID))
        case 10:
            body = .digest(try versionVector(envelope.digest.pointee.seen, "envelope.digest.seen"))
        case 11:
            body = .syncRequest(try syncRequest(envelope.sync_request.pointee))
        case 12:
            body = .syncResponse(try syncResponse(envelope.sync_response.pointee, roomID: roomID))
        case 13:
            body = .writeRequest(try writeRequest(envelope.write_request, "envelope.write_request"))
        case 14:
            body = .writeAck(try writeAck(envelope.write_ack.pointee))
        case 15:
            body = .heartbeat(try heartbeat(envelope.heartbeat.pointee))
        case 16:
            body = .joinRequest(try joinRequest(envelope.join_request.pointee))
        case 17:
            body = .joinResponse(try joinResponse(envelope.join_response.pointee, roomID: roomID))
        case 18:
            let chat = envelope.room_message.pointee
            body = .roomMessage(WireMessage.RoomMessage(
                sender: try string(chat.sender, "envelope.room_message.sender"), type: try string(chat.type, "envelope.room_message.type"),
                payload: try bytes(chat.payload, "envelope.room_message.payload"), senderSequence: chat.sender_sequence,
                timestampMillis: chat.timestamp_millis))
        case 19:
            let chat = envelope.peer_message.pointee
            body = .peerMessage(WireMessage.PeerMessage(
                sender: try string(chat.sender, "envelope.peer_message.sender"),
                recipient: try string(chat.recipient, "envelope.peer_message.recipient"),
                type: try string(chat.type, "envelope.peer_message.type"),
                payload: try bytes(chat.payload, "envelope.peer_message.payload"), senderSequence: chat.sender_sequence,
                timestampMillis: chat.timestamp_millis))
        case 20:
            let reply = envelope.error.pointee
            body = .error(WireMessage.ErrorReply(code: try string(reply.code, "envelope.error.code"),
                                                 message: try string(reply.message, "envelope.error.message"),
                                                 supportedVersion: reply.supported_version,
                                                 owners: try peers(reply.owners, count: reply.n_owners, "envelope.error.owners")))
        case 21:
            body = .probeRequest(target: ReplicaID(envelope.probe_request.pointee.target))
        case 22:
            let reply = envelope.probe_reply.pointee
            body = .probeReply(WireMessage.ProbeReply(target: ReplicaID(reply.target), alive: reply.alive != 0, incarnation: reply.incarnation,
                                                      heardAgoMillis: reply.heard_ago_ms))
        case 23:
            body = .renewRequest(session: try string(envelope.renew_request.pointee.session, "envelope.renew_request.session"))
        case 24:
            body = .renewReply(expiresAt: envelope.renew_reply.pointee.expires_at)
        case 25:
            body = .whereNowRequest(user: try string(envelope.where_now_request.pointee.user, "envelope.where_now_request.user"))
        case 26:
            let reply = envelope.where_now_reply.pointee
            try count(reply.n_rooms, max: limits.maxMapEntries, "envelope.where_now_reply.rooms")
            var rooms: [String] = []
            for position in 0..<reply.n_rooms {
                rooms.append(try string(reply.rooms[position], "envelope.where_now_reply.rooms"))
            }
            body = .whereNowReply(WireMessage.WhereNowReply(rooms: rooms, truncated: reply.truncated != 0, unanswered: reply.unanswered))
        default:
            throw .missingField("envelope.body (absent, or of a kind this version does not know)")
        }
        return WireEnvelope(roomID: roomID, sender: ReplicaID(envelope.sender), sequence: envelope.sequence,
                            clock: timestamp(envelope.clock), credential: credential, message: body,
                            protocolVersion: envelope.protocol_version)
    }

    /// A patch inside an envelope must be about the envelope's room.
    func roomPatch(_ message: UnsafeMutablePointer<Homeroom__V1__RoomPatch>?, _ field: String, roomID: String) throws(WireError) -> RoomState {
        let state = try roomPatch(message, field)
        if state.roomID != roomID {
            throw .invalidValue(field: "\(field).room_id", reason: "room \(state.roomID) differs from the envelope's room \(roomID)")
        }
        return state
    }

    private func syncRequest(_ request: Homeroom__V1__SyncRequest) throws(WireError) -> WireMessage.SyncRequest {
        try count(request.n_missing, max: limits.maxMapEntries, "envelope.sync_request.missing")
        var missing: [WireMessage.MissingRange] = []
        missing.reserveCapacity(request.n_missing)
        for index in 0..<request.n_missing {
            let range = request.missing[index]!.pointee
            if range.first == 0 || range.first > range.last {
                throw .invalidValue(field: "envelope.sync_request.missing[\(index)]",
                                    reason: "range \(range.first)...\(range.last) is empty or starts at 0 (sequences start at 1)")
            }
            missing.append(WireMessage.MissingRange(origin: ReplicaID(range.origin), first: range.first, last: range.last))
        }
        return WireMessage.SyncRequest(seen: try versionVector(request.seen, "envelope.sync_request.seen"), missing: missing,
                                       user: try string(request.user, "envelope.sync_request.user"),
                                       session: try string(request.session, "envelope.sync_request.session"))
    }

    private func syncResponse(_ response: Homeroom__V1__SyncResponse, roomID: String) throws(WireError) -> WireMessage.SyncResponse {
        try count(response.n_batches, max: limits.maxBatchesPerMessage, "envelope.sync_response.batches")
        var batches: [WireMessage.DeltaBatch] = []
        batches.reserveCapacity(response.n_batches)
        for index in 0..<response.n_batches {
            batches.append(try deltaBatch(response.batches[index], "envelope.sync_response.batches[\(index)]"))
        }
        let patch = response.patch == nil ? nil : try roomPatch(response.patch, "envelope.sync_response.patch", roomID: roomID)
        return WireMessage.SyncResponse(patch: patch, batches: batches, seen: try versionVector(response.seen, "envelope.sync_response.seen"),
                                        keys: try topicKeys(response.keys, "envelope.sync_response.keys"))
    }

    private func writeAck(_ ack: Homeroom__V1__WriteAck) throws(WireError) -> WireMessage.WriteAck {
        let raw = ack.status.rawValue
        if raw == 0 { throw .missingField("envelope.write_ack.status") }
        guard raw <= 255, let status = WireMessage.WriteStatus(rawValue: UInt8(raw)) else {
            throw .invalidValue(field: "envelope.write_ack.status", reason: "status \(raw) is not one of 1-5")
        }
        let dot = ack.dot.map { Dot(origin: ReplicaID($0.pointee.origin), sequence: $0.pointee.sequence) }
        var decoded = WireMessage.WriteAck(requestID: ack.request_id, status: status,
                                           errorCode: try string(ack.error_code, "envelope.write_ack.error_code"),
                                           message: try string(ack.message, "envelope.write_ack.message"), dot: dot, revision: ack.revision)
        decoded.setRevision = ack.set_revision
        decoded.fence = ack.fence
        return decoded
    }

    private func peers(_ list: UnsafeMutablePointer<UnsafeMutablePointer<Homeroom__V1__Peer>?>?, count total: Int,
                       _ field: String) throws(WireError) -> [WireMessage.Peer] {
        try count(total, max: limits.maxMapEntries, field)
        var peers: [WireMessage.Peer] = []
        peers.reserveCapacity(total)
        for index in 0..<total {
            let peer = list![index]!.pointee
            let raw = peer.status.rawValue
            if raw == 0 { throw .missingField("\(field)[\(index)].status") }
            guard raw <= 255, let status = WireMessage.PeerStatus(rawValue: UInt8(raw)) else {
                throw .invalidValue(field: "\(field)[\(index)].status", reason: "status \(raw) is not one of 1-3")
            }
            var entry = WireMessage.Peer(node: ReplicaID(peer.node), address: try string(peer.address, "\(field)[\(index)].address"),
                                         incarnation: peer.incarnation, status: status,
                                         publishAddress: try string(peer.publish_address, "\(field)[\(index)].publish_address"),
                                         clusterPublishAddress: try string(peer.cluster_publish_address, "\(field)[\(index)].cluster_publish_address"))
            entry.heardMillisAgo = peer.heard_ms_ago
            entry.behind = peer.behind
            entry.rooms = peer.rooms
            entry.nodeName = try string(peer.node_name, "\(field)[\(index)].node_name")
            entry.draining = peer.draining != 0
            peers.append(entry)
        }
        return peers
    }

    private func heartbeat(_ heartbeat: Homeroom__V1__Heartbeat) throws(WireError) -> WireMessage.Heartbeat {
        try count(heartbeat.n_rooms, max: limits.maxMapEntries, "envelope.heartbeat.rooms")
        var rooms: [WireMessage.RoomDigest] = []
        rooms.reserveCapacity(heartbeat.n_rooms)
        for index in 0..<heartbeat.n_rooms {
            let room = heartbeat.rooms[index]!.pointee
            var digest = WireMessage.RoomDigest(roomID: try string(room.room_id, "envelope.heartbeat.rooms[\(index)].room_id"),
                                                seen: try versionVector(room.seen, "envelope.heartbeat.rooms[\(index)].seen"))
            digest.users = room.users
            digest.online = room.online
            try count(room.n_stage, max: limits.maxMapEntries, "envelope.heartbeat.rooms[\(index)].stage")
            for position in 0..<room.n_stage {
                digest.stage.append(try string(room.stage[position], "envelope.heartbeat.rooms[\(index)].stage[\(position)]"))
            }
            rooms.append(digest)
        }
        let peers = try peers(heartbeat.peers, count: heartbeat.n_peers, "envelope.heartbeat.peers")
        var decoded = WireMessage.Heartbeat(node: ReplicaID(heartbeat.node), incarnation: heartbeat.incarnation,
                                            address: try string(heartbeat.address, "envelope.heartbeat.address"), rooms: rooms, peers: peers,
                                            publishAddress: try string(heartbeat.publish_address, "envelope.heartbeat.publish_address"),
                                            clusterPublishAddress: try string(heartbeat.cluster_publish_address, "envelope.heartbeat.cluster_publish_address"),
                                            sentAtMillis: heartbeat.sent_at_ms)
        decoded.health = try string(heartbeat.health, "envelope.heartbeat.health")
        decoded.listing = heartbeat.listing != 0
        decoded.roomsPartial = heartbeat.rooms_partial != 0
        decoded.roomsHash = heartbeat.rooms_hash
        decoded.draining = heartbeat.draining != 0
        decoded.roomStreams = heartbeat.room_streams != 0
        decoded.nodeName = try string(heartbeat.node_name, "envelope.heartbeat.node_name")
        return decoded
    }

    private func joinRequest(_ request: Homeroom__V1__JoinRequest) throws(WireError) -> WireMessage.JoinRequest {
        WireMessage.JoinRequest(user: try string(request.user, "envelope.join_request.user"),
                                role: try role(request.role, "envelope.join_request.role"),
                                session: try string(request.session, "envelope.join_request.session"),
                                name: try string(request.name, "envelope.join_request.name"),
                                resume: request.resume == nil ? nil : try versionVector(request.resume, "envelope.join_request.resume"))
    }

    private func joinResponse(_ response: Homeroom__V1__JoinResponse, roomID: String) throws(WireError) -> WireMessage.JoinResponse {
        let state: RoomState
        let isSnapshot: Bool
        switch response.state_case.rawValue {
        case 4:
            state = try roomPatch(response.snapshot, "envelope.join_response.snapshot", roomID: roomID)
            isSnapshot = true
        case 5:
            state = try roomPatch(response.patch, "envelope.join_response.patch", roomID: roomID)
            isSnapshot = false
        default:
            throw .missingField("envelope.join_response.state (snapshot or patch)")
        }
        return WireMessage.JoinResponse(session: try string(response.session, "envelope.join_response.session"),
                                        host: ReplicaID(response.host), incarnation: response.incarnation, state: state, isSnapshot: isSnapshot,
                                        keys: try topicKeys(response.keys, "envelope.join_response.keys"))
    }

    /// Topic keys, each id and key of exactly its length.
    private func topicKeys(_ pointer: UnsafeMutablePointer<Homeroom__V1__TopicKeys>?, _ field: String) throws(WireError) -> WireMessage.TopicKeys? {
        guard let keys = pointer?.pointee else { return nil }
        func exact(_ data: ProtobufCBinaryData, _ name: String, _ length: Int) throws(WireError) -> [UInt8] {
            let value = try bytes(data, "\(field).\(name)")
            guard value.count == length else {
                throw .invalidValue(field: "\(field).\(name)", reason: "\(value.count) bytes, expected \(length)")
            }
            return value
        }
        return WireMessage.TopicKeys(roomKeyID: try exact(keys.room_key_id, "room_key_id", WireMessage.TopicKeys.idLength),
                                     roomKey: try exact(keys.room_key, "room_key", WireMessage.TopicKeys.keyLength),
                                     userKeyID: try exact(keys.user_key_id, "user_key_id", WireMessage.TopicKeys.idLength),
                                     userKey: try exact(keys.user_key, "user_key", WireMessage.TopicKeys.keyLength))
    }
}
