import HomeroomCore
import HomeroomWire
import Synchronization
import HomeroomSupport

/// A node a client can attach to: its REP address (joins, writes, sync). The PUB
/// address is asked from the node itself.
public struct NodeEndpoint: Sendable, Hashable {
    public var address: String
    public init(_ address: String) { self.address = address }
}

/// Where a client's link is (Signaling's link states). `reconnecting` and `suspended`
/// both try the nodes by themselves (`ReconnectSchedule`); only `aborted` is the end.
public enum ClientLinkState: String, Sendable, Equatable {
    case connecting, connected, reconnecting
    /// Every node failed through the whole backoff: still trying, a round every 30 s.
    case suspended
    /// For good: refused (banned, token, moved out of the group), the first join failed, or closed.
    case aborted
}

public enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The node refused the write; `code` is stable (stage-full, not-allowed, ...).
    case refused(code: String, message: String)
    /// No node answered in time, after every retry.
    case unavailable(String)
    /// The link is over: the client was closed, or the nodes refuse it for good.
    case aborted
    case protocolError(String)

    public var code: String {
        switch self {
        case let .refused(code, _): return code
        case .unavailable: return "unavailable"
        case .aborted: return "aborted"
        case .protocolError: return "protocol-error"
        }
    }

    public var description: String {
        switch self {
        case let .refused(code, message): return "\(message) (\(code))"
        case let .unavailable(detail): return "no node answered: \(detail)"
        case .aborted: return "the connection is closed (left, or refused for good); join again to go on"
        case let .protocolError(detail): return "unexpected reply: \(detail)"
        }
    }
}

/// A peer in one room: it joins through any node, holds a replica of the room,
/// follows live deltas, repairs gaps, sends acknowledged writes, and reconnects
/// (to the same or another node) resuming from its version vector.
public final class RoomClient: Sendable {
    public struct Options: Sendable {
        public var requestTimeoutMillis: UInt64 = 1_000
        public var syncIntervalMillis: UInt64 = 300
        /// Failed probes before switching node.
        public var failuresBeforeReconnect = 2
        /// Once the node is lost: a round over the nodes at once, then the waits between
        /// rounds (2, 4, 8, 16 s, then suspended: every 30 s). Tests shorten them.
        public var reconnect = ReconnectSchedule.Options()
        /// Seeds the reconnect waits' jitter (a test replays it); nil: a random seed.
        public var reconnectJitterSeed: UInt64?
        /// Before the schedule: rounds before giving up. Ignored (a client never gives up now).
        @available(*, deprecated, message: "a client follows `reconnect` and never gives up; this is ignored")
        public var reconnectRounds = 20
        /// Before the schedule: the wait between rounds once given up. Ignored.
        @available(*, deprecated, message: "set `reconnect` (its waits and its suspended interval); this is ignored")
        public var revivalIntervalMillis: UInt64 = 2_000
        /// Read-your-writes: an acknowledged write returns once this replica holds it
        /// (its delta came on the stream, or a sync brought it), so what the caller
        /// reads next includes it. Off by default: it adds the stream's delay to a write.
        public var readsOwnWrites = false
        /// A join token (`homeroom token create`), sent with every request when set.
        public var token: String?
        /// False: read the room and write without a session (no join, no leave, nothing
        /// others see): what a one-shot command does. Writes then need the user to have
        /// joined the room once (`not-joined` otherwise).
        public var joins = true
        /// Joins and syncs bring whole rooms: allow large replies.
        public var limits = WireLimits.largeReplies
        /// How long a message waits for its sender's previous one before it is delivered anyway.
        public var messageHoldMillis: UInt64 = 2_000
        /// Presence events are gathered into interval events above this many online users.
        public var presenceThreshold = 50
        public var presenceIntervalMillis: UInt64 = 1_000
        /// Test hook: drop or duplicate what arrives on the SUB socket (seeded), like the
        /// node's cluster faults; the periodic sync must repair it.
        public var receiveFaults: FaultPolicy?
        public init() {}
    }

    public let room: String
    public let user: UserID
    public let role: Role
    public let name: String
    let endpoints: [NodeEndpoint]
    let options: Options
    let logger: Logger

    struct State {
        var replica: RoomState
        /// The link's state: `linkStatus.state`, changed only with a reason.
        var connection: ClientLinkState { linkStatus.state }
        var endpointIndex = 0
        var session: SessionID
        var sessionCount = 0
        /// Unique to this client instance (`AuthorCounter`): a counter another client of
        /// the same user also used makes a reward count as a retry of that one.
        var writeCounter: UInt64 = AuthorCounter.initial()
        var requestID: UInt64 = 0
        var failures = 0
        var latencyMicros: Double = 0
        var closing = false
        var link: SPRequester?
        var subscriber: SPSubscriber?
        var listeners: [UInt64: @Sendable ([RoomChange]) -> Void] = [:]
        var nextListener: UInt64 = 0
        var node: ReplicaID = ReplicaID(0)
        /// Counts successful attaches, so concurrent failures reconnect once.
        var generation: UInt64 = 0
        // Messaging (RoomClient+Messaging.swift).
        var inbox = MessageInbox()
        var presence = PresenceBatcher()
        var messageListeners: [UInt64: @Sendable ([MessageInbox.Delivery]) -> Void] = [:]
        var messagingListeners: [UInt64: @Sendable ([MessagingChange]) -> Void] = [:]
        var presenceListeners: [UInt64: @Sendable ([PresenceBatcher.Event]) -> Void] = [:]
        /// Per conversation ("" for the room, else the recipient): the counter of the last message sent.
        var lastSent: [String: UInt64] = [:]
        /// This user's presence state, set again after each reconnect (a new session).
        var presenceItems: [String: [UInt8]] = [:]
        /// Property writes whose fate is not known yet.
        var pendingProperties: [PendingPropertyWrite] = []
        /// Writes already reported lost, so a loss is told once.
        var reportedLost: Set<Dot> = []
        var receiveDice: FaultDice?
        /// A closed room's topic keys, from the last join or sync reply that had them.
        var topicKeys: WireMessage.TopicKeys?
        /// A sealed message named keys this client lacks: sync now for the new ones.
        var keysWanted = false
        /// Sealed messages that did not open (altered or misrouted), dropped.
        var unopenedMessages = 0
        /// Why the nodes refuse this client for good (banned, its token revoked or
        /// expired): it stops syncing and is not revived.
        var finalRefusal: String?
        /// A reconnect was refused for good: its meaning is still to be told to the listeners.
        var finalRefusalUntold = false
        /// The room's owners, as the last `not-owner` reply named them (placement): tried
        /// before the configured nodes (docs/PROTOCOL.md, "Placement"). Only those
        /// `RedirectPolicy` lets through (RoomClient+Redirects.swift).
        var owners: [NodeEndpoint] = []
        /// The link attached or being attached, and the endpoint it dialed: a `not-owner`
        /// reply is judged by the node that sent it.
        var source: (link: SPRequester, endpoint: NodeEndpoint)?
        /// Per configured endpoint (`RedirectPolicy.key`): the members its node named in
        /// its last hello answer (its own address and its peers').
        var members: [String: Set<String>] = [:]
        /// The link told for people (`ClientLinkStatus`): its state, the reason, the node.
        var linkStatus = ClientLinkStatus(state: .connecting)
        /// When the next round over the nodes is due while the node is lost (`ReconnectSchedule`).
        var schedule: ReconnectSchedule
        var nextRoundMonotonic: UInt64 = 0
        var jitter: SplitMix64
        /// The join token sent with every request: `options.token`, then each renewal's.
        var token: String?
        /// That token's `exp` (Unix seconds), read once per token.
        var tokenExpiresAt: Int64?
    }

    let state: Mutex<State>
    /// Held while events are handed to listeners, so they arrive in order from any thread.
    let emitting = Mutex<Void>(())
    private let ticker = Mutex<OSThread?>(nil)
    /// Held while attaching, so the sync loop and a writer never attach twice at once.
    private let attaching = Mutex<Void>(())

    public init(room: String, user: UserID, role: Role, name: String, endpoints: [NodeEndpoint], options: Options = Options(),
                logger: Logger) {
        self.room = room
        self.user = user
        self.role = role
        self.name = name
        self.endpoints = endpoints
        self.options = options
        self.logger = logger.with("user", user)
        var initial = State(replica: RoomState(roomID: room), session: "\(user)-\(UInt32.random(in: 0...UInt32.max))",
                            schedule: ReconnectSchedule(options.reconnect),
                            jitter: SplitMix64(seed: options.reconnectJitterSeed ?? UInt64.random(in: 0...UInt64.max)))
        initial.inbox = MessageInbox(holdMillis: options.messageHoldMillis)
        initial.presence = PresenceBatcher(threshold: options.presenceThreshold, intervalMillis: options.presenceIntervalMillis)
        initial.receiveDice = options.receiveFaults.map { FaultDice(seed: $0.seed) }
        initial.token = options.token
        initial.tokenExpiresAt = options.token.flatMap { JoinToken.peek($0)?.exp }
        self.state = Mutex(initial)
    }

    deinit { close() }

    // MARK: - Observing

    public var connectionState: ClientLinkState { state.withLock { $0.connection } }
    public var replica: RoomState { state.withLock { $0.replica } }
    public var roster: Roster { state.withLock { $0.replica.roster() } }
    /// Sealed topic messages that did not open with this client's keys (altered or
    /// misrouted): dropped. Zero on any honest network.
    public var unopenedMessages: Int { state.withLock { $0.unopenedMessages } }
    /// Whether this client holds a closed room's topic keys.
    public var holdsTopicKeys: Bool { state.withLock { $0.topicKeys != nil } }
    public var seen: VersionVector { state.withLock { $0.replica.seen } }
    /// The last sync round trip, in microseconds.
    public var latencyMicros: Double { state.withLock { $0.latencyMicros } }
    public var attachedNode: ReplicaID { state.withLock { $0.node } }
    /// The link for people: node attached or lost, since when, why, what is tried now.
    public var linkStatus: ClientLinkStatus { state.withLock { $0.linkStatus } }

    /// Calls `handler` with every change set this client applies; returns a token for `removeListener`.
    @discardableResult
    public func onChange(_ handler: @escaping @Sendable ([RoomChange]) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextListener += 1
            state.listeners[state.nextListener] = handler
            return state.nextListener
        }
    }

    public func removeListener(_ token: UInt64) { _ = state.withLock { $0.listeners.removeValue(forKey: token) } }

    // MARK: - Connecting

    /// Joins through the first node that answers; then keeps the replica in sync in the background.
    /// How often a join refused `rate-limited` is tried again (100 ms, 200 ms, ... apart: 2.8 s in all).
    static let rateLimitedJoinRetries = 7

    public func connect() throws(ClientError) {
        try attachToSomeNode(initial: true)
        // Without its sync loop a client would never repair gaps or reconnect: no client.
        do {
            let thread = try OSThread(name: "hr-client") { [weak self] in self?.syncLoop() }
            ticker.withLock { $0 = thread }
        } catch {
            state.withLock { $0.linkStatus = $0.linkStatus.ended(.closedByClient) }
            detach()
            throw .unavailable("this client could not start its sync thread (\(error.reason)): the process is at its thread limit")
        }
    }

    /// Owners a round of attaches tries at most (a node's `not-owner` reply names a few).
    static let ownersTriedPerRound = 16

    /// `countsInSchedule`: a failed round moves the schedule on (the round right after a
    /// loss, and the sync loop's scheduled ones); a writer's extra round while the client
    /// is already lost only notes its failure, so writes do not hasten `suspended`.
    func attachToSomeNode(initial: Bool, countsInSchedule: Bool = true) throws(ClientError) {
        do {
            try attachInOneRound()
        } catch {
            if initial {
                state.withLock { state in
                    if state.connection != .aborted { state.linkStatus = state.linkStatus.ended(.joinFailed) }
                }
            } else if countsInSchedule, state.withLock({ $0.finalRefusal == nil && !$0.closing }) {
                roundFailed()
            }
            throw error
        }
    }

    /// One round: the room's owners, once a node named them, then every configured node
    /// in turn; returns attached to the first that takes the client. No waits: the
    /// schedule between rounds is the caller's (`ReconnectSchedule`).
    private func attachInOneRound() throws(ClientError) {
        var lastError = ClientError.unavailable("no node endpoints given")
        var configuredTried = 0
        var ownersTried: Set<NodeEndpoint> = []
        while true {
            if state.withLock({ $0.closing }) { throw .aborted }
            // The room's owners first, once a node named them (also when the last
            // configured node is what named them); then the configured nodes in turn.
            let owner = ownersTried.count < Self.ownersTriedPerRound
                ? state.withLock { $0.owners.first { !ownersTried.contains($0) } } : nil
            if owner == nil && configuredTried >= endpoints.count { break }
            let index = state.withLock { $0.endpointIndex }
            let endpoint: NodeEndpoint
            if let owner {
                ownersTried.insert(owner)
                endpoint = owner
            } else {
                configuredTried += 1
                endpoint = endpoints[index % endpoints.count]
            }
            state.withLock { $0.linkStatus.trying = endpoint.address }
            do {
                try attach(to: endpoint)
                return
            } catch {
                lastError = error
                state.withLock { state in
                    state.linkStatus.trying = nil
                    state.linkStatus.lastFailure = "\(endpoint.address): \(error.description)"
                }
                if case let .refused(code, _) = error, Self.isFinal(code) {
                    state.withLock { state in
                        state.finalRefusal = code
                        state.linkStatus = state.linkStatus.ended(.finalRefusal(code))
                        // Refused on a reconnect (not the first join, whose caller hears it): the
                        // sync loop tells the listeners, outside the attach lock.
                        if state.generation > 0 { state.finalRefusalUntold = true }
                    }
                    throw error
                }
                logger.debug("attach failed", ["node": endpoint.address, "error": error.description])
                if owner == nil { state.withLock { $0.endpointIndex = (index + 1) % max(1, endpoints.count) } }
            }
        }
        throw lastError
    }

    /// A whole round failed: the schedule says when the next is due, and whether the
    /// client is suspended now.
    private func roundFailed() {
        let (status, wait) = state.withLock { state -> (ClientLinkStatus, UInt64) in
            let step = state.schedule.roundFailed(using: &state.jitter)
            state.nextRoundMonotonic = WallClock.monotonicMillis() + step.waitMillis
            state.linkStatus = state.linkStatus.roundFailed(step, nowMillis: WallClock.nowMillis())
            return (state.linkStatus, step.waitMillis)
        }
        logger.info(status.state == .suspended ? "every node failed; suspended" : "every node failed",
                    ["room": room, "next_try_ms": "\(wait)", "reason": status.reason.rawValue])
    }

    private func attach(to endpoint: NodeEndpoint) throws(ClientError) {
        detach()
        let requester: SPRequester
        let limits = SPLimitsConfig(maxMessageBytes: max(options.limits.maxMessageBytes, 64 << 20), reconnectMinMillis: 50, reconnectMaxMillis: 300)
        do {
            requester = try SPRequester(limits: limits, name: "hr-client-req")
            try requester.dial(endpoint.address)
        } catch {
            throw .unavailable("\(endpoint.address): \(error)")
        }
        state.withLock { $0.source = (requester, endpoint) }
        // Where does this node publish?
        let hello = WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: "")
        let reply = try request(requester, .heartbeat(hello))
        guard case let .heartbeat(nodeInfo) = reply.message, !nodeInfo.publishAddress.isEmpty else {
            requester.close()
            throw .protocolError("the node did not say where it publishes")
        }
        recordMembers(nodeInfo, from: endpoint)
        // Subscribe before joining, so no delta falls between the snapshot and the stream.
        let subscriber: SPSubscriber
        do {
            subscriber = try SPSubscriber(limits: limits, name: "hr-client-sub") { [weak self] message in self?.receive(message) }
            subscriber.subscribe(Topics.clientRoom(room))
            subscriber.subscribe(Topics.clientUser(room, user))
            // A node that serves room streams sends this connection the room's topics and
            // nothing else; an older one sends everything, and the subscriptions filter.
            let stream = nodeInfo.roomStreams ? RoomStreams.url(publishAddress: nodeInfo.publishAddress, room: room, user: user) : nil
            try subscriber.dial(stream ?? nodeInfo.publishAddress)
        } catch {
            requester.close()
            throw .unavailable("subscribe to \(nodeInfo.publishAddress): \(error)")
        }
        // The stream open before the join (up to a second): a delta between the join's
        // snapshot and the stream would otherwise wait for the next sync.
        for _ in 0..<200 where subscriber.connected == 0 { Sleep.milliseconds(5) }
        if !options.joins {
            try attachWithoutSession(requester, subscriber, endpoint)
            return
        }
        let (previousSession, hadSession) = state.withLock { ($0.session, $0.sessionCount > 0) }
        let (session, resume) = state.withLock { state -> (SessionID, VersionVector?) in
            state.sessionCount += 1
            state.session = "\(user)-\(UInt32.random(in: 0...UInt32.max))-\(state.sessionCount)"
            return (state.session, state.replica.seen.count > 0 ? state.replica.seen : nil)
        }
        let join = WireMessage.JoinRequest(user: user, role: role, session: session, name: name, resume: resume)
        let joined: WireEnvelope
        do {
            joined = try requestWaitingOutRateLimits(requester, .joinRequest(join))
        } catch {
            subscriber.close()
            requester.close()
            throw error
        }
        switch joined.message {
        case let .joinResponse(response):
            adopt(response.keys)
            // A first join brings the history: known, not delivered. A resume brings what
            // was missed while away: delivered (catch-up).
            merge(response.state, deliver: response.isSnapshot == false)
            state.withLock { state in
                state.link = requester
                state.subscriber = subscriber
                state.linkStatus = state.linkStatus.attached(to: endpoint.address, after: state.connection, nowMillis: WallClock.nowMillis())
                state.schedule.reset()
                state.failures = 0
                state.node = response.host
                state.generation += 1
            }
            // The session on the old node is over (its node may be gone, so say it here).
            if hadSession {
                let leave = Write(author: user, authorRole: role, authorCounter: state.withLock { state in
                    state.writeCounter += AuthorCounter.stride
                    return state.writeCounter
                }, operation: .leaveSession(user: user, session: previousSession))
                _ = try? request(requester, .writeRequest(WireMessage.WriteRequest(requestID: 0, write: leave)))
            }
            restorePresence(through: requester, session: session)
            logger.info("joined", ["room": room, "node": endpoint.address, "resumed": "\(resume != nil)"])
        case let .error(reply):
            subscriber.close()
            requester.close()
            throw .refused(code: reply.code, message: reply.message)
        default:
            subscriber.close()
            requester.close()
            throw .protocolError("a join was answered with \(joined.message.kind)")
        }
    }

    /// Reads the room with a sync instead of a join: no session, so nobody sees a reader.
    private func attachWithoutSession(_ requester: SPRequester, _ subscriber: SPSubscriber, _ endpoint: NodeEndpoint) throws(ClientError) {
        let seen = state.withLock { state -> VersionVector in
            state.session = ""
            return state.replica.seen
        }
        let reply: WireEnvelope
        do {
            reply = try requestWaitingOutRateLimits(requester, .syncRequest(WireMessage.SyncRequest(seen: seen, user: user)))
        } catch {
            subscriber.close()
            requester.close()
            throw error
        }
        switch reply.message {
        case let .syncResponse(response):
            adopt(response.keys)
            if let patch = response.patch { merge(patch, deliver: false) }
            state.withLock { state in
                state.link = requester
                state.subscriber = subscriber
                state.linkStatus = state.linkStatus.attached(to: endpoint.address, after: state.connection, nowMillis: WallClock.nowMillis())
                state.schedule.reset()
                state.failures = 0
                state.generation += 1
            }
            logger.info("reading", ["room": room, "node": endpoint.address])
        case let .error(refusal):
            subscriber.close()
            requester.close()
            throw .refused(code: refusal.code, message: refusal.message)
        default:
            subscriber.close()
            requester.close()
            throw .protocolError("a sync was answered with \(reply.message.kind)")
        }
    }

    /// Sends a join or a sync; refused `rate-limited` (a script of one-shots joins or
    /// reads faster than a user's budget), waits for the node's bucket to refill and asks
    /// again, a few times, rather than fail.
    private func requestWaitingOutRateLimits(_ requester: SPRequester, _ message: WireMessage) throws(ClientError) -> WireEnvelope {
        var reply = try request(requester, message)
        var waits = 0
        while case let .error(refusal) = reply.message, refusal.code == "rate-limited", waits < Self.rateLimitedJoinRetries,
              !state.withLock({ $0.closing }) {
            waits += 1
            Sleep.milliseconds(100 * UInt64(waits))
            reply = try request(requester, message)
        }
        return reply
    }

    private func detach() {
        let (link, subscriber) = state.withLock { state -> (SPRequester?, SPSubscriber?) in
            defer { state.link = nil; state.subscriber = nil; state.source = nil }
            return (state.link, state.subscriber)
        }
        subscriber?.close()
        link?.close()
    }

    /// Whether this client's current session was ended by someone else (not a kick or
    /// a ban, which end it for good): the node's lease expiry, typically.
    private func sessionWasEndedForUs() -> Bool {
        state.withLock { state in
            guard !state.closing, let record = state.replica.users[user],
                  let mine = record.sessions.first(where: { $0.id == state.session }) else { return false }
            return mine.ended != nil && !record.isBanned && record.kicked < mine.started
        }
    }

    /// Stops as a crash would: the sync loop and the sockets, without leaving. The node
    /// ends the session when its lease runs out (`NodeConfig.sessionTimeoutMillis`).
    /// For tests and fault injection; a program leaving normally calls `close()`.
    public func abandon() {
        let alreadyClosing = state.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        if alreadyClosing { return }
        if let thread = ticker.withLock({ $0 }) { thread.join() }
        detach()
        state.withLock { state in
            if state.connection != .aborted { state.linkStatus = state.linkStatus.ended(.closedByClient) }
        }
    }

    /// Leaves the room (best effort) and closes every socket.
    public func close() {
        let alreadyClosing = state.withLock { state -> Bool in
            defer { state.closing = true }
            return state.closing
        }
        if alreadyClosing { return }
        let session = state.withLock { $0.session }
        if connectionState == .connected && options.joins {
            _ = try? sendWrite(.leaveSession(user: user, session: session), retries: 0)
        }
        if let thread = ticker.withLock({ $0 }) { thread.join() }
        detach()
        state.withLock { state in
            if state.connection != .aborted { state.linkStatus = state.linkStatus.ended(.closedByClient) }
        }
    }

    // MARK: - Writing

    /// Sends a write and waits for the node's acknowledgement (the change is merged
    /// there). Retried through reconnects with the same author counter, so a
    /// retried reward still counts once.
    @discardableResult
    public func write(_ operation: Operation) throws(ClientError) -> Dot {
        try sendWrite(operation, retries: 3).ack.dot ?? Dot(origin: ReplicaID(0), sequence: 0)
    }

    /// Sends a write and returns the node's acknowledgement (ACCEPTED or DUPLICATE) and
    /// the write as sent (with its author counter). A DUPLICATE may carry no dot (a
    /// message that has left the history): treat it as done.
    func sendWrite(_ operation: Operation, retries: Int) throws(ClientError) -> (ack: WireMessage.WriteAck, write: Write) {
        var operation = operation
        // A reward carries when it was first sent; the retries below send the same write.
        if case let .reward(target, amount, 0) = operation {
            operation = .reward(user: target, amount: amount, issuedAtMillis: WallClock.nowMillis())
        }
        let (write, requestID) = state.withLock { [operation] state -> (Write, UInt64) in
            state.writeCounter += AuthorCounter.stride
            state.requestID += 1
            return (Write(author: user, authorRole: role, authorCounter: state.writeCounter, operation: operation), state.requestID)
        }
        var attempt = 0
        var sends = 0
        while true {
            let (current, generation) = state.withLock { ($0.link, $0.generation) }
            guard let link = current else {
                if attempt >= retries { throw .unavailable("not connected") }
                attempt += 1
                try reconnectForWrite(sent: sends > 0, observed: generation, .linkLost, cause: "not connected")
                continue
            }
            do throws(ClientError) {
                sends += 1
                let reply = try request(link, .writeRequest(WireMessage.WriteRequest(requestID: requestID, write: write)))
                switch reply.message {
                case let .writeAck(ack):
                    switch ack.status {
                    case .accepted:
                        guard let dot = ack.dot else { throw ClientError.protocolError("an accepted write without a dot") }
                        if options.readsOwnWrites { awaitOwn(dot, through: link) }
                        return (ack, write)
                    case .duplicate where sends > 1:
                        return (ack, write)   // a retry of what an earlier send did
                    case .duplicate:
                        // The first send of this write, and the node holds one with its counter:
                        // another client of this user used the same counter. Not done.
                        throw ClientError.refused(code: "duplicate-counter", message:
                            "the node already holds a write of \(user) with author counter \(write.authorCounter), which this client never sent: another client of \(user) uses the same counters; this write was not applied")
                    case .unavailable where attempt < retries:
                        attempt += 1
                        try reconnectForWrite(sent: sends > 0, observed: generation, .nodeUnavailable, cause: "the node could not take the write: \(ack.message)")
                    default:
                        throw ClientError.refused(code: ack.errorCode, message: ack.message)
                    }
                case let .error(reply) where reply.code == "not-owner" && attempt < retries:
                    // The room moved (placement): to its owners, then the same write again.
                    attempt += 1
                    try reconnectForWrite(sent: sends > 0, observed: generation, .roomMoved, cause: "the room moved to other nodes")
                case let .error(reply):
                    throw ClientError.refused(code: reply.code, message: reply.message)
                default:
                    throw ClientError.protocolError("a write was answered with \(reply.message.kind)")
                }
            } catch {
                guard case .unavailable = error, attempt < retries else { throw error }
                attempt += 1
                try reconnectForWrite(sent: sends > 0, observed: generation, .linkLost, cause: error.description)
            }
        }
    }

    /// A write's reconnect. Once the write was sent, a round that fails leaves its fate
    /// unknown (the lost node may have applied it before it went): never a refusal of it.
    private func reconnectForWrite(sent: Bool, observed: UInt64, _ reason: ClientLinkReason, cause: String) throws(ClientError) {
        do throws(ClientError) {
            try reconnect(observed: observed, reason, cause: cause)
        } catch {
            guard sent else { throw error }
            switch error {
            case .unavailable, .aborted: throw error
            case .refused, .protocolError:
                throw .unavailable("the write was sent, then its node was lost and no node took the client again (\(error.description)): whether it was applied is unknown")
            }
        }
    }

    /// Moves to the next node, unless someone else already did since `observed`: one
    /// round over the nodes, now. Connected until now, the node is lost for `reason`
    /// (`cause` in the failure's words) and the reconnect schedule starts over; already
    /// lost, this is one more round (a scheduled one, or a writer's), whose failure
    /// counts in the schedule.
    /// `scheduled`: the sync loop's round, run only if still due once the lock is held
    /// (a writer's round may have failed meanwhile, and moved the next one on).
    private func reconnect(observed: UInt64, _ reason: ClientLinkReason, cause: String, scheduled: Bool = false) throws(ClientError) {
        try attaching.withLock { _ throws(ClientError) in
            var wasConnected = false
            let current = state.withLock { state -> Bool in
                if state.generation != observed && state.connection == .connected { return true }
                if state.closing || state.connection == .aborted { return true }
                if scheduled && (state.connection == .connected || WallClock.monotonicMillis() < state.nextRoundMonotonic) { return true }
                wasConnected = state.connection == .connected
                if state.connection == .connected {
                    // The node is lost now: say which, since when and why (it stays named until another attaches).
                    state.linkStatus = state.linkStatus.lost(reason, cause: cause, nowMillis: WallClock.nowMillis())
                    state.schedule.reset()
                }
                state.linkStatus.nextRoundMillis = nil
                state.endpointIndex = (state.endpointIndex + 1) % max(1, endpoints.count)
                return false
            }
            if current {
                if state.withLock({ $0.connection == .aborted }) { throw .aborted }
                return
            }
            try attachToSomeNode(initial: false, countsInSchedule: scheduled || wasConnected)
        }
    }

    // MARK: - Receiving

    func receive(_ message: [UInt8]) {
        guard let (kind, payload) = Topics.split(message), kind == 0 || kind == Topics.privateKind,
              let body = opened(payload, topic: message[..<payload.startIndex], isPrivate: kind == Topics.privateKind),
              let envelope = try? WireCodec.decode(body, limits: options.limits), envelope.roomID == room else { return }
        let copies = state.withLock { state -> Int in
            guard let faults = options.receiveFaults, state.receiveDice != nil else { return 1 }
            return state.receiveDice!.copies(faults)
        }
        for _ in 0..<copies {
            switch envelope.message {
            case let .deltaBatch(batch):
                emitting.withLock { _ in
                    var messaging: [MessagingChange] = []
                    let (changes, listeners) = state.withLock { state -> ([RoomChange], [@Sendable ([RoomChange]) -> Void]) in
                        var changes: [RoomChange] = []
                        for delta in batch.deltas { changes += state.replica.apply(delta, messaging: &messaging).changes }
                        return (changes, Array(state.listeners.values))
                    }
                    if !changes.isEmpty { for listener in listeners { listener(changes) } }
                    dispatch(changes, messaging, deliver: true)
                }
            case let .patch(patch):
                merge(patch, deliver: true)
            default:
                break
            }
        }
    }

    /// A topic message's envelope bytes: opened with this client's keys in a closed room
    /// (nil, and a sync for new keys, when it names keys this client lacks); as it is
    /// in an open room. A closed room's node never publishes in clear.
    private func opened(_ payload: ArraySlice<UInt8>, topic: ArraySlice<UInt8>, isPrivate: Bool) -> [UInt8]? {
        let keys = state.withLock { $0.topicKeys }
        guard TopicSeal.isSealed(payload) else { return keys == nil ? Array(payload) : nil }
        guard let keys else {
            state.withLock { $0.keysWanted = true }
            return nil
        }
        let key = isPrivate ? TopicKeyring.Key(id: keys.userKeyID, secret: keys.userKey) : TopicKeyring.Key(id: keys.roomKeyID, secret: keys.roomKey)
        switch TopicSeal.open(payload, topic: topic, keys: [key]) {
        case let .opened(plain):
            return plain
        case .unknownKey:
            state.withLock { $0.keysWanted = true }
            return nil
        case .forged:
            state.withLock { $0.unopenedMessages += 1 }
            return nil
        }
    }

    /// Keeps the keys a reply brought (a reply without keys leaves them as they were).
    /// `keysWanted` stays: a message under newer keys may have come while this reply
    /// was on its way (the sync loop clears it when it asks).
    private func adopt(_ keys: WireMessage.TopicKeys?) {
        guard let keys else { return }
        state.withLock { $0.topicKeys = keys }
    }

    /// Waits (100 ms at most) for this replica to hold `dot`, then pulls it with a sync.
    private func awaitOwn(_ dot: Dot, through link: SPRequester) {
        let deadline = WallClock.monotonicMillis() + 100
        while WallClock.monotonicMillis() < deadline {
            if state.withLock({ $0.replica.seen.contains(dot) }) { return }
            Sleep.milliseconds(1)
        }
        let (seen, session) = state.withLock { ($0.replica.seen, $0.session) }
        guard let reply = try? request(link, .syncRequest(WireMessage.SyncRequest(seen: seen, user: user, session: session))),
              case let .syncResponse(response) = reply.message else { return }
        adopt(response.keys)
        if let patch = response.patch { merge(patch) }
    }

    /// Refusals no retry can change: the user is banned, or its token is not valid.
    /// `not-in-group`: a breakout group's room whose group the user was moved out of.
    /// `room-closed`: the class is over and the room closed (or removed); nobody rejoins.
    static func isFinal(_ code: String) -> Bool {
        code == "banned" || code == "not-in-group" || code == "room-closed" || code.hasPrefix("token-")
    }

    /// The nodes refuse this client for good: it stops syncing, is not revived, and
    /// tells its listeners that the local user is out (a ban, as a revocation is).
    private func endForGood(code: String, message: String) {
        let first = state.withLock { state -> Bool in
            guard state.finalRefusal == nil else { return false }
            state.finalRefusal = code
            state.linkStatus = state.linkStatus.ended(.finalRefusal(code))
            return true
        }
        guard first else { return }
        logger.notice("the nodes refuse this client for good", ["code": code, "reason": message])
        detach()
        tellFinalRefusal(code)
    }

    /// Tells the listeners what a final refusal means for the local user, when it means
    /// something: out of the room (banned, revoked, moved out of its group) or the room closed.
    private func tellFinalRefusal(_ code: String) {
        guard code == "banned" || code == "token-revoked" || code == "not-in-group" || code == "room-closed" else { return }
        // Out of a group's room (moved elsewhere) reads as a kick there, not a ban.
        let change: RoomChange = code == "room-closed" ? .roomClosed : code == "not-in-group" ? .userKicked(user) : .userBanned(user)
        emitting.withLock { _ in
            let listeners = state.withLock { Array($0.listeners.values) }
            for listener in listeners { listener([change]) }
        }
    }

    /// Why the nodes refuse this client for good, or nil.
    public var finalRefusal: String? { state.withLock { $0.finalRefusal } }

    func merge(_ patch: RoomState, deliver: Bool = true) {
        guard patch.roomID == room else { return }
        emitting.withLock { _ in
            var messaging: [MessagingChange] = []
            let (changes, listeners) = state.withLock { state in
                (state.replica.merge(patch, messaging: &messaging), Array(state.listeners.values))
            }
            if !changes.isEmpty { for listener in listeners { listener(changes) } }
            dispatch(changes, messaging, deliver: deliver)
        }
    }

    /// Every sync interval: pull what is missing (which also measures the link), and
    /// switch node after repeated failures.
    func syncLoop() {
        // The join (or first read) just brought the room: the first sync is one interval later.
        var started = WallClock.monotonicMillis()
        while !state.withLock({ $0.closing }) {
            let elapsed = WallClock.monotonicMillis() &- started
            if elapsed < options.syncIntervalMillis, !state.withLock({ $0.keysWanted && $0.link != nil }) {
                Sleep.milliseconds(min(20, options.syncIntervalMillis - elapsed))
                continue
            }
            started = WallClock.monotonicMillis()
            let untold = state.withLock { state -> String? in
                guard state.finalRefusalUntold else { return nil }
                state.finalRefusalUntold = false
                return state.finalRefusal
            }
            if let untold { tellFinalRefusal(untold) }
            // Asked for once: a refused sync waits for the next interval, it does not spin.
            let (current, generation, roundDue) = state.withLock { state in
                state.keysWanted = false
                let lost = state.connection == .reconnecting || state.connection == .suspended
                return (state.link, state.generation, lost && state.finalRefusal == nil && started >= state.nextRoundMonotonic)
            }
            if current == nil, roundDue {
                // Every node failed (all down, or this machine offline): a live view or an
                // interactive session keeps trying on the schedule, and heals by itself.
                logger.info("trying the nodes again", ["room": room])
                try? reconnect(observed: generation, .everyNodeFailed, cause: "every node failed", scheduled: true)
            }
            if let link = current {
                let (seen, session) = state.withLock { ($0.replica.seen, $0.session) }
                let clock = ContinuousClock()
                let begin = clock.now
                do throws(ClientError) {
                    let reply = try request(link, .syncRequest(WireMessage.SyncRequest(seen: seen, user: user, session: session)))
                    // A node that stepped aside (wedged) answers, but will not serve: move.
                    if case let .error(refusal) = reply.message, refusal.code == "unavailable" { throw ClientError.unavailable(refusal.message) }
                    // The room moved to other nodes (placement): to its owners, now.
                    if case let .error(refusal) = reply.message, refusal.code == "not-owner" {
                        logger.info("the room is kept on other nodes; moving", ["room": room, "reason": refusal.message])
                        try? reconnect(observed: generation, .roomMoved, cause: "the room moved to other nodes")
                        continue
                    }
                    // Banned, or the token revoked or expired: no node will serve this client again.
                    if case let .error(refusal) = reply.message, Self.isFinal(refusal.code) {
                        endForGood(code: refusal.code, message: refusal.message)
                        continue
                    }
                    let elapsed = clock.now - begin
                    if case let .syncResponse(response) = reply.message {
                        adopt(response.keys)
                        if let patch = response.patch { merge(patch) }
                    }
                    state.withLock { state in
                        state.failures = 0
                        state.latencyMicros = Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6
                        // A sync through the link still attached answered while a reconnect
                        // was under way (not one another thread has already let go).
                        if state.connection == .reconnecting, state.link === link {
                            state.linkStatus.state = .connected
                            state.linkStatus.reason = .reattached
                        }
                    }
                    if sessionWasEndedForUs() {
                        // The node ended this session (its lease ran out while this process
                        // was frozen, or a sync could not get through): join again.
                        logger.notice("this session was ended by the node; joining again", ["session": session])
                        try? reconnect(observed: generation, .sessionEnded, cause: "the node ended this session")
                    }
                } catch {
                    let failures = state.withLock { state -> Int in
                        state.failures += 1
                        return state.failures
                    }
                    if failures >= options.failuresBeforeReconnect {
                        logger.notice("node unreachable, reconnecting", ["error": error.description])
                        try? reconnect(observed: generation, .linkLost, cause: error.description)
                    }
                }
            }
            tickMessaging()
        }
    }

    /// `token`: sent instead of the current one (a renewal's new token).
    func request(_ link: SPRequester, _ message: WireMessage, token: String? = nil) throws(ClientError) -> WireEnvelope {
        let credential = token ?? state.withLock { $0.token }
        let envelope = WireEnvelope(roomID: room, sender: ReplicaID(0), sequence: 0, clock: .zero,
                                    credential: credential.map { Array($0.utf8) } ?? [], message: message)
        let reply: [UInt8]
        do {
            reply = try link.request(WireCodec.encode(envelope), timeout: .milliseconds(Int64(options.requestTimeoutMillis)))
        } catch {
            throw .unavailable("\(error)")
        }
        let decoded: WireEnvelope
        do {
            decoded = try WireCodec.decode(reply, limits: options.limits)
        } catch {
            throw .protocolError("\(error)")
        }
        if case let .error(refusal) = decoded.message, refusal.code == "not-owner" {
            adoptOwners(refusal.owners, namedOn: link)
        }
        return decoded
    }
}
