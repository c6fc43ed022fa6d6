import HomeroomCore

/// One message between Homeroom peers: the envelope fields and a body.
/// Maps to `homeroom.v1.Envelope`.
public struct WireEnvelope: Equatable, Sendable {
    /// `WireProtocol.version` when sending.
    public var protocolVersion: UInt32
    /// The room the message is about; empty for messages about no room (heartbeats).
    public var roomID: String
    /// The sending node (0 for a client).
    public var sender: ReplicaID
    /// The sender's envelope sequence number, from 1, so a receiver can see drops.
    public var sequence: UInt64
    /// The sender's clock when it sent the message.
    public var clock: HybridTimestamp
    /// The author's credential (filled by the security layer); empty when none.
    public var credential: [UInt8]
    public var message: WireMessage

    public init(roomID: String, sender: ReplicaID, sequence: UInt64, clock: HybridTimestamp,
                credential: [UInt8] = [], message: WireMessage, protocolVersion: UInt32 = WireProtocol.version) {
        self.protocolVersion = protocolVersion
        self.roomID = roomID
        self.sender = sender
        self.sequence = sequence
        self.clock = clock
        self.credential = credential
        self.message = message
    }
}

/// The body of an envelope.
public enum WireMessage: Equatable, Sendable {
    /// Live deltas from one node.
    case deltaBatch(DeltaBatch)
    /// The whole room (a patch since the empty version vector).
    case snapshot(RoomState)
    /// Only what the receiver is missing.
    case patch(RoomState)
    /// What the sender has seen of the room.
    case digest(VersionVector)
    case syncRequest(SyncRequest)
    case syncResponse(SyncResponse)
    case writeRequest(WriteRequest)
    case writeAck(WriteAck)
    case heartbeat(Heartbeat)
    case joinRequest(JoinRequest)
    case joinResponse(JoinResponse)
    case roomMessage(RoomMessage)
    case peerMessage(PeerMessage)
    case error(ErrorReply)
    /// A node asks whether `target` is alive (SWIM's ping, or ping-req when the target is
    /// another node).
    case probeRequest(target: ReplicaID)
    case probeReply(ProbeReply)
    /// A client renews its join token (the envelope's credential is the new one) for its
    /// live `session` in the envelope's room, without rejoining.
    case renewRequest(session: String)
    /// The renewal was accepted: the new token's expiry, Unix seconds.
    case renewReply(expiresAt: Int64)
    /// Which rooms `user` has a live session in now (docs/PROTOCOL.md, "Where now").
    case whereNowRequest(user: String)
    case whereNowReply(WhereNowReply)

    /// The proto name of the body case, for logs and metrics.
    public var kind: String {
        switch self {
        case .deltaBatch: return "delta_batch"
        case .snapshot: return "snapshot"
        case .patch: return "patch"
        case .digest: return "digest"
        case .syncRequest: return "sync_request"
        case .syncResponse: return "sync_response"
        case .writeRequest: return "write_request"
        case .writeAck: return "write_ack"
        case .heartbeat: return "heartbeat"
        case .joinRequest: return "join_request"
        case .joinResponse: return "join_response"
        case .roomMessage: return "room_message"
        case .peerMessage: return "peer_message"
        case .error: return "error"
        case .probeRequest: return "probe_request"
        case .probeReply: return "probe_reply"
        case .renewRequest: return "renew_request"
        case .renewReply: return "renew_reply"
        case .whereNowRequest: return "where_now_request"
        case .whereNowReply: return "where_now_reply"
        }
    }
}

extension WireMessage {
    /// Deltas sequenced by `origin` (a delta sequenced elsewhere is allowed and
    /// carries its own origin on the wire).
    public struct DeltaBatch: Hashable, Sendable {
        public var origin: ReplicaID
        public var deltas: [Delta]

        public init(origin: ReplicaID, deltas: [Delta]) {
            self.origin = origin
            self.deltas = deltas
        }
    }

    /// Sequence numbers `first...last` from `origin`.
    public struct MissingRange: Hashable, Sendable {
        public var origin: ReplicaID
        public var first: UInt64
        public var last: UInt64

        public init(origin: ReplicaID, first: UInt64, last: UInt64) {
            self.origin = origin
            self.first = first
            self.last = last
        }
    }

    /// "Send me what I am missing."
    public struct SyncRequest: Hashable, Sendable {
        public var seen: VersionVector
        /// Optional: exact ranges the requester knows it lacks.
        public var missing: [MissingRange]
        /// The requesting user, whose peer messages the patch includes; empty: room messages only.
        public var user: UserID
        /// The requesting client's session: renews its lease at the node hosting it; empty: no lease.
        public var session: SessionID

        public init(seen: VersionVector, missing: [MissingRange] = [], user: UserID = "", session: SessionID = "") {
            self.seen = seen
            self.missing = missing
            self.user = user
            self.session = session
        }
    }

    /// A patch and/or stored deltas, and the responder's version vector.
    public struct SyncResponse: Equatable, Sendable {
        public var patch: RoomState?
        public var batches: [DeltaBatch]
        public var seen: VersionVector
        /// A closed room's topic keys, for the client the token names.
        public var keys: TopicKeys?

        public init(patch: RoomState? = nil, batches: [DeltaBatch] = [], seen: VersionVector, keys: TopicKeys? = nil) {
            self.patch = patch
            self.batches = batches
            self.seen = seen
            self.keys = keys
        }
    }

    /// The keys of a closed room's topics: the room key seals the room topic, the user
    /// key the reader's private topic; each id names its key in sealed messages.
    public struct TopicKeys: Hashable, Sendable {
        public static let idLength = 8
        public static let keyLength = 32
        public var roomKeyID: [UInt8]
        public var roomKey: [UInt8]
        public var userKeyID: [UInt8]
        public var userKey: [UInt8]

        public init(roomKeyID: [UInt8], roomKey: [UInt8], userKeyID: [UInt8], userKey: [UInt8]) {
            self.roomKeyID = roomKeyID
            self.roomKey = roomKey
            self.userKeyID = userKeyID
            self.userKey = userKey
        }
    }

    /// A write a client asks a node to sequence; answered by a `WriteAck` with the same id.
    public struct WriteRequest: Hashable, Sendable {
        public var requestID: UInt64
        public var write: Write

        public init(requestID: UInt64, write: Write) {
            self.requestID = requestID
            self.write = write
        }
    }

    public enum WriteStatus: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
        /// Sequenced: the ack carries the delta's dot.
        case accepted = 1
        /// Already applied (same author and counter): nothing more to do.
        case duplicate = 2
        /// Refused by the authority or admission rules: see `errorCode`.
        case rejected = 3
        /// Malformed or over the limits: fix the request.
        case invalid = 4
        /// Try again later or at another node.
        case unavailable = 5

        public var description: String {
            switch self {
            case .accepted: return "accepted"
            case .duplicate: return "duplicate"
            case .rejected: return "rejected"
            case .invalid: return "invalid"
            case .unavailable: return "unavailable"
            }
        }
    }

    public struct WriteAck: Hashable, Sendable {
        public var requestID: UInt64
        public var status: WriteStatus
        /// Stable machine-readable code (e.g. a `Rejection.code`); empty when accepted.
        public var errorCode: String
        public var message: String
        /// The delta the write became, when accepted.
        public var dot: Dot?
        /// For an accepted property write: the revision it created (0 otherwise).
        public var revision: UInt64
        /// And the revision of its whole set (the room's properties, or the user's) after it.
        public var setRevision: UInt64 = 0
        /// For an accepted lock acquisition: the grant's fence (0 otherwise).
        public var fence: UInt64 = 0

        public init(requestID: UInt64, status: WriteStatus, errorCode: String = "", message: String = "", dot: Dot? = nil,
                    revision: UInt64 = 0) {
            self.requestID = requestID
            self.status = status
            self.errorCode = errorCode
            self.message = message
            self.dot = dot
            self.revision = revision
        }
    }

    public enum PeerStatus: UInt8, CaseIterable, Hashable, Sendable {
        case alive = 1
        case suspect = 2
        case dead = 3

        /// How operators read it (`homeroom cluster`, /cluster): alive, suspect, down.
        public var name: String {
            switch self {
            case .alive: return "alive"
            case .suspect: return "suspect"
            case .dead: return "down"
            }
        }
    }

    public struct Peer: Hashable, Sendable {
        public var node: ReplicaID
        public var address: String
        public var incarnation: UInt64
        public var status: PeerStatus
        /// Where the peer's PUB socket listens.
        public var publishAddress: String
        /// The peer's node-only PUB socket, when it has one (nodes subscribe there).
        public var clusterPublishAddress: String
        /// Only in the answer to a client's hello (an operator's listing): how long ago the
        /// answering node heard from the peer, how many of its writes the peer's last
        /// heartbeat lacked, and how many rooms that heartbeat listed.
        public var heardMillisAgo: UInt64 = 0
        public var behind: UInt64 = 0
        public var rooms: UInt32 = 0
        /// The peer's node name, as its own heartbeats give it; empty while not known.
        public var nodeName = ""
        /// The peer is draining: placement leaves it out.
        public var draining = false

        public init(node: ReplicaID, address: String, incarnation: UInt64, status: PeerStatus, publishAddress: String = "",
                    clusterPublishAddress: String = "") {
            self.node = node
            self.address = address
            self.publishAddress = publishAddress
            self.clusterPublishAddress = clusterPublishAddress
            self.incarnation = incarnation
            self.status = status
        }
    }

    public struct RoomDigest: Hashable, Sendable {
        public var roomID: String
        public var seen: VersionVector
        /// Only in the answer to a client's hello (`homeroom rooms`): user records, users
        /// online, and who is on stage now, in stage order (while a carousel runs, the
        /// stage of its current turn, as every replica derives it).
        public var users: UInt32 = 0
        public var online: UInt32 = 0
        public var stage: [String] = []

        public init(roomID: String, seen: VersionVector) {
            self.roomID = roomID
            self.seen = seen
        }
    }

    /// Gossip between nodes: liveness, room digests and known peers.
    public struct Heartbeat: Hashable, Sendable {
        public var node: ReplicaID
        public var incarnation: UInt64
        /// Where the sender listens.
        public var address: String
        public var rooms: [RoomDigest]
        public var peers: [Peer]
        /// Where the sender's PUB socket listens.
        public var publishAddress: String
        /// Where the sender publishes node-to-node traffic, when it keeps it off `publishAddress`.
        public var clusterPublishAddress: String
        /// The sender's wall clock when it sent this (Unix ms); 0 when unknown (a client's hello).
        public var sentAtMillis: UInt64
        /// Only in the answer to a client's hello: "ok", or what is wrong with the node.
        public var health: String = ""
        /// A client's hello asking for the operator listing (room summaries, peer lag, health).
        public var listing = false
        /// The sender's node name (`--name`); empty in a client's hello.
        public var nodeName = ""
        /// True: `rooms` lists only the rooms whose vector moved lately (an empty vector:
        /// no longer held), and `roomsHash` is the hash of every room the sender holds
        /// (`RoomDigestHash`, summed). False: `rooms` is every room.
        public var roomsPartial = false
        public var roomsHash: UInt64 = 0
        /// The sender is draining (`homeroom node drain`): placement leaves it out.
        public var draining = false
        /// `publishAddress` also serves room streams (SP over WebSocket, one room's topics each).
        public var roomStreams = false

        public init(node: ReplicaID, incarnation: UInt64, address: String, rooms: [RoomDigest] = [], peers: [Peer] = [],
                    publishAddress: String = "", clusterPublishAddress: String = "", sentAtMillis: UInt64 = 0) {
            self.sentAtMillis = sentAtMillis
            self.publishAddress = publishAddress
            self.clusterPublishAddress = clusterPublishAddress
            self.node = node
            self.incarnation = incarnation
            self.address = address
            self.rooms = rooms
            self.peers = peers
        }
    }

    public struct JoinRequest: Hashable, Sendable {
        public var user: UserID
        public var role: Role
        public var session: SessionID
        public var name: String
        /// What the client already has, when it resumes; nil for a fresh join.
        public var resume: VersionVector?

        public init(user: UserID, role: Role, session: SessionID, name: String, resume: VersionVector? = nil) {
            self.user = user
            self.role = role
            self.session = session
            self.name = name
            self.resume = resume
        }
    }

    public struct JoinResponse: Equatable, Sendable {
        public var session: SessionID
        public var host: ReplicaID
        public var incarnation: UInt64
        /// The room: whole (`isSnapshot`) or only what the resume vector lacked.
        public var state: RoomState
        public var isSnapshot: Bool
        /// A closed room's topic keys, for the joining user.
        public var keys: TopicKeys?

        public init(session: SessionID, host: ReplicaID, incarnation: UInt64, state: RoomState, isSnapshot: Bool, keys: TopicKeys? = nil) {
            self.session = session
            self.host = host
            self.incarnation = incarnation
            self.state = state
            self.isSnapshot = isSnapshot
            self.keys = keys
        }
    }

    /// A message to everyone in the room (chat, custom signals).
    public struct RoomMessage: Hashable, Sendable {
        public var sender: UserID
        public var type: String
        public var payload: [UInt8]
        public var senderSequence: UInt64
        public var timestampMillis: UInt64

        public init(sender: UserID, type: String, payload: [UInt8], senderSequence: UInt64, timestampMillis: UInt64) {
            self.sender = sender
            self.type = type
            self.payload = payload
            self.senderSequence = senderSequence
            self.timestampMillis = timestampMillis
        }
    }

    /// A message to one user.
    public struct PeerMessage: Hashable, Sendable {
        public var sender: UserID
        public var recipient: UserID
        public var type: String
        public var payload: [UInt8]
        public var senderSequence: UInt64
        public var timestampMillis: UInt64

        public init(sender: UserID, recipient: UserID, type: String, payload: [UInt8], senderSequence: UInt64, timestampMillis: UInt64) {
            self.sender = sender
            self.recipient = recipient
            self.type = type
            self.payload = payload
            self.senderSequence = senderSequence
            self.timestampMillis = timestampMillis
        }
    }

    /// The answer to a probe: whether the target is the answering node, or one it hears.
    public struct ProbeReply: Hashable, Sendable {
        public var target: ReplicaID
        public var alive: Bool
        /// The target's incarnation as the answering node knows it.
        public var incarnation: UInt64
        /// How long before answering it last heard the target (0: it is the target).
        public var heardAgoMillis: UInt64

        public init(target: ReplicaID, alive: Bool, incarnation: UInt64, heardAgoMillis: UInt64 = 0) {
            self.target = target
            self.alive = alive
            self.incarnation = incarnation
            self.heardAgoMillis = heardAgoMillis
        }
    }

    /// The rooms a user is in now, bounded.
    public struct WhereNowReply: Hashable, Sendable {
        /// Sorted.
        public var rooms: [String]
        /// More rooms than those listed.
        public var truncated: Bool
        /// Live peers that did not answer in time: their rooms may be missing.
        public var unanswered: UInt32

        public init(rooms: [String], truncated: Bool = false, unanswered: UInt32 = 0) {
            self.rooms = rooms
            self.truncated = truncated
            self.unanswered = unanswered
        }
    }

    /// The answer to a request that could not be served.
    public struct ErrorReply: Hashable, Sendable {
        /// Stable code: a `WireError.code`, a `Rejection.code`, or one listed in docs/PROTOCOL.md.
        public var code: String
        public var message: String
        /// Set with code "unsupported-version": the version the replier speaks.
        public var supportedVersion: UInt32
        /// Set with code "not-owner": the nodes that hold the room, best first.
        public var owners: [Peer]

        public init(code: String, message: String, supportedVersion: UInt32 = 0, owners: [Peer] = []) {
            self.code = code
            self.message = message
            self.supportedVersion = supportedVersion
            self.owners = owners
        }

        /// The reply to send for bytes that failed to decode.
        public init(_ error: WireError) {
            self.code = error.code
            self.message = error.description
            self.owners = []
            if case .unsupportedVersion = error {
                self.supportedVersion = WireProtocol.version
            } else {
                self.supportedVersion = 0
            }
        }
    }
}
