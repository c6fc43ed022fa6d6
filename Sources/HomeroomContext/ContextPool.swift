import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// The door between a UI and the engine (AgoraEduContextPool): one local user in one
/// room, with a context per concern. A UI holds a pool and never a client or a replica.
///
///     let pool = try ContextPool(config: ClassroomConfig(room: "maths", user: "ada", role: .teacher,
///                                                        nodes: ["tcp://127.0.0.1:7100"]), logger: logger)
///     pool.stream.registerEventHandler(myRosterView)
///     try pool.room.join()
///     try pool.user.addCoHost("bob")
public final class ContextPool: Sendable {
    public let room: RoomContext
    public let user: UserContext
    public let stream: StreamContext
    /// Room and peer messages, history, chat moderation and presence.
    public let message: MessageContext
    public let monitor: MonitorContext
    /// Locks with fencing (Signaling's locks).
    public let lock: LockContext
    /// Breakout groups (Flexible Classroom's).
    public let group: GroupContext
    let session: ClassroomSession

    /// Checks the config; joins nothing until `room.join()`.
    public init(config: ClassroomConfig, logger: Logger) throws(ContextError) {
        try config.validate()
        let session = ClassroomSession(config: config, logger: logger)
        self.session = session
        room = RoomContext(session)
        user = UserContext(session)
        stream = StreamContext(session)
        message = MessageContext(session)
        monitor = MonitorContext(session)
        lock = LockContext(session)
        group = GroupContext(session)
    }

    deinit { session.close() }

    public var config: ClassroomConfig { session.config }

    /// Everything a UI draws, read now. `page` pages the students (for large rooms);
    /// without it every student is in `students`.
    public func snapshot(page: Int? = nil, pageSize: Int = 50) -> RoomSnapshot {
        session.snapshot(page: page.map { ($0, pageSize) })
    }

    /// Every event from now on, as an async sequence (keeps the newest `limit` when the
    /// reader falls behind). Ends when the pool is closed or the task is cancelled.
    public func events(bufferingNewest limit: Int = 10_000) -> AsyncStream<ContextEvent> {
        session.events(bufferingNewest: limit)
    }

    /// Registers one object for every handler protocol it adopts (held weakly).
    public func registerEventHandler(_ handler: AnyObject & Sendable) { session.register(handler) }
    public func unregisterEventHandler(_ handler: AnyObject & Sendable) { session.unregister(handler) }

    /// Calls `listener` with every event, on the pool's event queue, in order; returns a
    /// token for `removeEventListener`. The closure form of the handler protocols.
    @discardableResult
    public func addEventListener(_ listener: @escaping @Sendable (ContextEvent) -> Void) -> Int { session.addListener(listener) }
    public func removeEventListener(_ token: Int) { session.removeListener(token) }

    /// Leaves the room and ends every event stream.
    public func close() { session.close() }
}
