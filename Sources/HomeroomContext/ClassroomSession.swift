import Dispatch
#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport

/// How a pool joins a room: who, where, and how patient it is with the link.
public struct ClassroomConfig: Sendable, Equatable {
    public var room: String
    public var user: UserID
    public var name: String
    public var role: Role
    /// REP addresses of nodes (tcp://, tls+tcp://, ipc://, inproc://); the first that answers is used,
    /// the others are where the pool reconnects when it is lost.
    public var nodes: [String]
    /// A join token (`homeroom token create`) for nodes that require one.
    public var token: String?
    public var requestTimeoutMillis: UInt64 = 1_000
    public var syncIntervalMillis: UInt64 = 300
    /// Once the node is lost: a round over the nodes at once, then waits of 2, 4, 8,
    /// 16 s between rounds, then `suspended` with a round every 30 s (never given up).
    public var reconnect = ReconnectOptions()
    /// Before the schedule: rounds before giving up. Ignored (sessions never give up now).
    @available(*, deprecated, message: "sessions follow `reconnect` and never give up; this is ignored")
    public var reconnectRounds = 20
    /// An acknowledged write returns once the local replica holds it (`RoomClient.Options.readsOwnWrites`).
    public var readsOwnWrites = false
    /// False: `join()` reads the room and writes without a session (no join or leave,
    /// nothing others see), as one-shot commands do; writes need the user to have
    /// joined the room once.
    public var joinsWithSession = true
    /// How often the monitor looks at the link.
    public var monitorIntervalMillis: UInt64 = 100
    /// How long a message waits for its sender's previous one before it is delivered anyway (`gap`).
    public var messageHoldMillis: UInt64 = 2_000
    /// Above this many online users, presence joins and leaves come as interval events.
    public var presenceThreshold = 50
    public var presenceIntervalMillis: UInt64 = 1_000
    /// How long before the join token's expiry `ContextEvent.tokenWillExpire` comes (as `TokenExpiryWarning.defaultLeadSeconds`).
    public var tokenWarningSeconds: Int64 = 30

    public init(room: String, user: UserID, name: String = "", role: Role, nodes: [String]) {
        self.room = room
        self.user = user
        self.name = name
        self.role = role
        self.nodes = nodes
    }

    public func validate() throws(ContextError) {
        if let problem = RoomID.validate(room) { throw .invalidArgument(problem) }
        if user.isEmpty || user.utf8.count > 128 { throw .invalidArgument("a user id is 1 to 128 bytes") }
        if name.utf8.count > 128 { throw .invalidArgument("a display name is at most 128 bytes") }
        if role == .system { throw .invalidArgument("no one joins as the system role: use teacher, assistant, student or observer") }
        if nodes.isEmpty { throw .invalidArgument("no node address given: pass at least one, e.g. tcp://127.0.0.1:7100") }
        for node in nodes where !["tcp://", "tls+tcp://", "ipc://", "inproc://"].contains(where: { node.hasPrefix($0) }) {
            throw .invalidArgument("node address '\(node)' must start with tcp://, tls+tcp://, ipc:// or inproc://")
        }
    }
}

/// The engine behind a pool: one `RoomClient` while joined, the handlers, the event
/// streams and the link monitor. Events are delivered on one serial queue, in order.
final class ClassroomSession: Sendable {
    let config: ClassroomConfig
    let logger: Logger
    let queue = DispatchQueue(label: "homeroom.context.events")

    private struct Handler: Sendable {
        weak var object: (AnyObject & Sendable)?
    }

    private struct State {
        var client: RoomClient?
        var everJoined = false
        var kickedOut = false
        var handlers: [Handler] = []
        var streams: [Int: AsyncStream<ContextEvent>.Continuation] = [:]
        var nextStream = 0
        var listeners: [Int: @Sendable (ContextEvent) -> Void] = [:]
        /// Bumped on every join and leave, so a monitor tick of an old link stops.
        var generation = 0
        var lastConnection: ConnectionState?
        var lastLinkMark: LinkMark?
        var lastLatency: Double = 0
        var lastLatencyReport: UInt64 = 0
        var tokenWarning = TokenExpiryWarning()
        /// Invitations seen pending, by invited user: each is reported once if it times out.
        var watchedInvitations: [UserID: Stamp] = [:]
    }

    private let state = Mutex(State())

    /// The UI's roster (`LiveRoster`), held only while a frame is made, and what the
    /// current client's change sets named since (its own small lock: a client applying
    /// deltas never waits for a frame, however long a first build of a hall takes).
    private struct RosterNotes {
        var generation: Int?
        var notes = LiveRoster.Notes()
    }
    private struct RosterModel {
        var generation: Int?
        var model = LiveRoster()
    }
    private let rosterNotes = Mutex(RosterNotes())
    private let roster = Mutex(RosterModel())

    init(config: ClassroomConfig, logger: Logger) {
        self.config = config
        self.logger = logger.with("room", config.room)
    }

    var localUser: UserInfo {
        if let client = state.withLock({ $0.client }) {
            let info = ReadModel.userInfo(client.replica, config.user)
            if !info.name.isEmpty { return UserInfo(id: config.user, name: info.name, role: config.role) }
        }
        return UserInfo(id: config.user, name: config.name, role: config.role)
    }

    // MARK: - Joining and leaving

    var isJoined: Bool { state.withLock { $0.client != nil } }

    func join() throws(ContextError) {
        try config.validate()
        guard state.withLock({ $0.client == nil }) else { return }
        var options = RoomClient.Options()
        options.requestTimeoutMillis = config.requestTimeoutMillis
        options.syncIntervalMillis = config.syncIntervalMillis
        options.reconnect = config.reconnect.schedule
        options.readsOwnWrites = config.readsOwnWrites
        options.token = config.token
        options.joins = config.joinsWithSession
        options.messageHoldMillis = config.messageHoldMillis
        options.presenceThreshold = config.presenceThreshold
        options.presenceIntervalMillis = config.presenceIntervalMillis
        // An empty name joins keeping the user's name in the room (docs/PROTOCOL.md, JoinRequest).
        let client = RoomClient(room: config.room, user: config.user, role: config.role, name: config.name,
                                endpoints: config.nodes.map(NodeEndpoint.init), options: options, logger: logger)
        client.onChange { [weak self, weak client] changes in
            guard let self, let client else { return }
            self.received(changes, from: client)
        }
        listenForMessaging(client)
        do {
            try client.connect()
        } catch {
            client.close()
            throw ContextError(error)
        }
        let generation = state.withLock { state -> Int in
            state.client = client
            state.everJoined = true
            state.kickedOut = false
            state.tokenWarning = TokenExpiryWarning(leadSeconds: config.tokenWarningSeconds)
            state.generation += 1
            state.lastConnection = .connected
            let link = client.linkStatus
            state.lastLinkMark = LinkMark(node: link.node, sinceMillis: link.sinceMillis, reason: LinkReason(link.reason))
            return state.generation
        }
        scheduleMonitor(generation)
        emit([.joinedRoom(ReadModel.roomInfo(client.replica)), .connectionStateUpdated(.connected)])
    }

    func leave() {
        let client = state.withLock { state -> RoomClient? in
            defer { state.client = nil; state.generation += 1; state.lastConnection = .aborted }
            return state.client
        }
        guard let client else { return }
        client.close()
        emit([.connectionStateUpdated(.aborted), .leftRoom])
    }

    /// Leaves and ends every event stream.
    func close() {
        leave()
        let streams = state.withLock { state -> [AsyncStream<ContextEvent>.Continuation] in
            defer { state.streams.removeAll() }
            return Array(state.streams.values)
        }
        queue.async { for stream in streams { stream.finish() } }
    }

    // MARK: - Reading

    /// Renews the join token on the live session (`RoomClient.renewToken`).
    func renewToken(_ token: String) throws(ContextError) -> Int64 {
        let client = try client()
        do {
            return try client.renewToken(token)
        } catch {
            throw ContextError(error)
        }
    }

    /// The client while joined; a coded error otherwise.
    func client() throws(ContextError) -> RoomClient {
        let (client, kicked) = state.withLock { ($0.client, $0.kickedOut) }
        if let client { return client }
        if kicked { throw ContextError(code: ContextError.kicked, message: "you were removed from room \(config.room); join again if the teacher allows it") }
        throw .notJoinedYet(config.room)
    }

    /// The replica (empty before joining).
    var replica: RoomState {
        state.withLock { $0.client }?.replica ?? RoomState(roomID: config.room)
    }

    /// The read model UIs draw: the roster kept from the change sets (`LiveRoster`),
    /// the students paged. The notes are taken and the replica copied under the notes'
    /// lock, so every change noted is in the copy (a client notes a change after
    /// applying it); the frame is then made under the roster's lock alone.
    func snapshot(page: (index: Int, size: Int)?) -> RoomSnapshot {
        let local = localUser, connection = connectionState, latency = latencyMicros
        return roster.withLock { roster in
            let (replica, generation, notes) = rosterNotes.withLock { feed -> (RoomState, Int, LiveRoster.Notes) in
                let (client, generation) = state.withLock { ($0.client, $0.generation) }
                var notes = LiveRoster.Notes()
                if feed.generation == generation { swap(&notes, &feed.notes) } else { feed.generation = generation; feed.notes = LiveRoster.Notes() }
                return (client?.replica ?? RoomState(roomID: config.room), generation, notes)
            }
            if roster.generation != generation {
                roster.generation = generation
                roster.model.reset()
            }
            return roster.model.snapshot(replica, nowMillis: WallClock.nowMillis(), local: local, connection: connection,
                                         latencyMicros: latency, page: page, notes: notes)
        }
    }

    var connectionState: ConnectionState {
        let (client, everJoined) = state.withLock { ($0.client, $0.everJoined) }
        if let client { return ConnectionState(client.connectionState) }
        return everJoined ? .aborted : .connecting
    }

    var link: LinkInfo {
        let (client, everJoined) = state.withLock { ($0.client, $0.everJoined) }
        if let client { return LinkInfo(client.linkStatus) }
        return LinkInfo(ClientLinkStatus(state: everJoined ? .aborted : .connecting, reason: everJoined ? .closedByClient : .starting))
    }

    var attachedNode: String { state.withLock { $0.client }.map { $0.attachedNode.description } ?? "" }

    var latencyMicros: Double { state.withLock { $0.client }?.latencyMicros ?? 0 }

    // MARK: - Writing

    /// Sends a write and waits for the node's acknowledgement, then (briefly) for the
    /// write to reach the local replica, so what the contexts read next includes it.
    @discardableResult
    func write(_ operation: Operation) throws(ContextError) -> Dot {
        let client = try client()
        let dot: Dot
        do {
            dot = try client.write(operation)
        } catch {
            logger.debug("write refused", ["operation": operation.name, "code": error.code])
            throw ContextError(error)
        }
        waitUntilApplied(dot, client)
        return dot
    }

    /// A property write: the client's result, once the local replica has it.
    func writeProperty(owner: UserID?, key: String,
                       _ body: (RoomClient) throws(ClientError) -> PropertyWriteResult) throws(ContextError) -> PropertyWriteReceipt {
        let client = try client()
        let result: PropertyWriteResult
        do { result = try body(client) } catch { throw ContextError(error) }
        waitUntilApplied(result.dot, client)
        return PropertyWriteReceipt(key: key, owner: owner, revision: result.revision, setRevision: result.setRevision, result: result)
    }

    func waitUntilApplied(_ dot: Dot, _ client: RoomClient) {
        let deadline = WallClock.monotonicMillis() + min(config.requestTimeoutMillis, 1_000)
        while !client.seen.contains(dot) && WallClock.monotonicMillis() < deadline {
            usleep(1_000)
        }
    }

    // MARK: - Events

    func register(_ handler: AnyObject & Sendable) {
        state.withLock { state in
            state.handlers.removeAll { $0.object == nil || $0.object === handler }
            state.handlers.append(Handler(object: handler))
        }
    }

    func unregister(_ handler: AnyObject & Sendable) {
        state.withLock { $0.handlers.removeAll { $0.object == nil || $0.object === handler } }
    }

    func events(bufferingNewest limit: Int) -> AsyncStream<ContextEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ContextEvent.self, bufferingPolicy: .bufferingNewest(max(1, limit)))
        let id = state.withLock { state -> Int in
            state.nextStream += 1
            state.streams[state.nextStream] = continuation
            return state.nextStream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.streams.removeValue(forKey: id) }
        }
        return stream
    }

    func addListener(_ listener: @escaping @Sendable (ContextEvent) -> Void) -> Int {
        state.withLock { state in
            state.nextStream += 1
            state.listeners[state.nextStream] = listener
            return state.nextStream
        }
    }

    func removeListener(_ token: Int) { _ = state.withLock { $0.listeners.removeValue(forKey: token) } }

    func emit(_ events: [ContextEvent]) {
        guard !events.isEmpty else { return }
        queue.async { [self] in deliverNow(events) }
    }

    /// On the queue only.
    private func deliverNow(_ events: [ContextEvent]) {
        let (handlers, streams, listeners) = state.withLock { state in
            state.handlers.removeAll { $0.object == nil }
            return (state.handlers.compactMap(\.object), Array(state.streams.values), Array(state.listeners.values))
        }
        for event in events {
            for handler in handlers { event.deliver(to: handler) }
            for listener in listeners { listener(event) }
            for stream in streams { stream.yield(event) }
        }
    }

    /// From the client's threads: translate, and notice the local user's own kick or ban.
    private func received(_ changes: [RoomChange], from client: RoomClient) {
        // Noted before the events go out, so the frame an event asks for draws the change.
        if let generation = state.withLock({ $0.client === client ? $0.generation : nil }) {
            rosterNotes.withLock { feed in if feed.generation == generation { feed.notes.note(changes) } }
        }
        let replica = client.replica
        var events = ContextEvent.translate(changes, localUser: config.user, room: { ReadModel.roomInfo(replica) },
                                            groups: { replica.breakout }, isOnline: { replica.isOnline($0) },
                                            invitation: { ReadModel.invitation(replica, $0) },
                                            lookup: { ReadModel.userInfo(replica, $0) })
        let local = config.user
        // The class closed (`.roomClosed`, from the client's final refusal), or the local
        // user was banned or kicked: the pool leaves the room, once.
        let closed = changes.contains(.roomClosed)
        let banned = changes.contains(.userBanned(local))
        let kicked = changes.contains(.userKicked(local)) && !replica.isOnline(local)
        if closed || banned || kicked {
            let first = state.withLock { state -> Bool in
                guard state.client === client, !state.kickedOut else { return false }
                state.kickedOut = true
                return true
            }
            if first {
                logger.notice(closed ? "the class closed: the room refuses everyone now" : banned ? "banned from the room" : "kicked out of the room")
                // `.roomClosed` is among the translated events already.
                if !closed { events.append(.localUserKickedOut(banned: banned)) }
                emit(events)
                // Closing joins the client's threads: never from one of them.
                queue.async { [self] in leave() }
                return
            }
        }
        emit(events)
    }

    /// Messages, messaging changes and presence from the client's threads, as events.
    private func listenForMessaging(_ client: RoomClient) {
        let local = config.user
        client.onMessage { [weak self, weak client] deliveries in
            guard let self, let client else { return }
            let replica = client.replica
            self.emit(ContextEvent.messages(deliveries, lookup: { ReadModel.userInfo(replica, $0) }))
        }
        client.onMessagingChange { [weak self, weak client] changes in
            guard let self, let client else { return }
            let replica = client.replica
            self.emit(ContextEvent.translate(changes, localUser: local, lookup: { ReadModel.userInfo(replica, $0) }))
        }
        client.onPresence { [weak self, weak client] events in
            guard let self, let client else { return }
            let replica = client.replica
            self.emit(ContextEvent.presence(events, lookup: { ReadModel.userInfo(replica, $0) }))
        }
    }

    private func scheduleMonitor(_ generation: Int) {
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(config.monitorIntervalMillis))) { [weak self] in
            guard let self, self.monitorTick(generation) else { return }
            self.scheduleMonitor(generation)
        }
    }

    /// On the queue, every monitor interval while joined: connection state changes and
    /// latency (at most once a second). False once the link it watched is gone.
    private func monitorTick(_ generation: Int) -> Bool {
        let now = WallClock.monotonicMillis()
        var events: [ContextEvent] = []
        let current = state.withLock { state -> Bool in
            guard state.generation == generation, let client = state.client else { return false }
            let link = client.linkStatus
            let connection = ConnectionState(link.state)
            // A failover quicker than a tick changes the node, not the state: an event too.
            // A new reason in the same state (reconnecting: the first round failed too) is one as well.
            let mark = LinkMark(node: link.node, sinceMillis: link.sinceMillis, reason: LinkReason(link.reason))
            if connection != state.lastConnection || mark.reason != state.lastLinkMark?.reason
                || (connection == .connected && mark != state.lastLinkMark) {
                state.lastConnection = connection
                events.append(.connectionStateUpdated(connection))
            }
            state.lastLinkMark = mark
            let latency = client.latencyMicros
            if latency > 0, latency != state.lastLatency, now &- state.lastLatencyReport >= 1_000 {
                state.lastLatency = latency
                state.lastLatencyReport = now
                events.append(.latencyUpdated(micros: latency))
            }
            if let left = state.tokenWarning.due(expiresAt: client.tokenExpiresAt, nowSeconds: Int64(WallClock.nowMillis() / 1000)) {
                events.append(.tokenWillExpire(inSeconds: left))
            }
            events += invitationTimeouts(client.replica, &state.watchedInvitations)
            return true
        }
        if !events.isEmpty { deliverNow(events) }
        return current
    }
}

extension ClassroomSession {
    /// Invitations seen pending that are now past their duration, unanswered: a timeout is
    /// a matter of time, not of a write, so the monitor tick notices it.
    func invitationTimeouts(_ replica: RoomState, _ watched: inout [UserID: Stamp]) -> [ContextEvent] {
        let now = WallClock.nowMillis()
        var events: [ContextEvent] = []
        for (user, invitation) in replica.invitations where invitation.answer == nil && watched[user] != invitation.issued {
            if invitation.status(nowMillis: now) == .pending { watched[user] = invitation.issued }
        }
        for (user, issued) in watched {
            guard let invitation = replica.invitations[user], invitation.issued == issued, invitation.answer == nil,
                  replica.openInvitation(for: user) != nil else {
                watched[user] = nil
                continue
            }
            guard invitation.status(nowMillis: now) == .expired, let info = ReadModel.invitation(replica, user, nowMillis: now) else { continue }
            watched[user] = nil
            events.append(.invitationTimedOut(info))
        }
        return events
    }
}

/// Which node a link is on, since when, and why: a new mark while connected is a failover.
struct LinkMark: Equatable, Sendable {
    var node: String?
    var sinceMillis: UInt64
    var reason: LinkReason
}
