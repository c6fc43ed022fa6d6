/// What one browser, or many, may cost the web process. Every buffer and count is
/// bounded, and every wait has a deadline, so a slow or hostile browser is dropped
/// rather than wedging the loop or holding memory.
public struct WebLimits: Sendable, Equatable {
    /// Open connections (page loads and sockets), and per peer address.
    public var maxConnections = 128
    public var maxConnectionsPerPeer = 32
    /// Classroom sessions (sockets with a pool): each holds a room client.
    public var maxSessions = 32
    /// Sessions per peer address: well below `maxSessions`, so one machine cannot take them all.
    public var maxSessionsPerPeer = 8
    /// How long an upgraded socket has to log in (a pool joined) before it is closed (1008):
    /// a socket without a login holds a session slot and nothing else.
    public var loginTimeoutMillis: UInt64 = 10_000
    /// A request head, and how long it may take to arrive (from the accept, not the last
    /// byte: a trickle of bytes does not extend it); a reply gets as long again to be written.
    public var maxHead = 8 << 10
    public var headTimeoutMillis: UInt64 = 5_000
    /// A WebSocket message (all its fragments), from the page.
    public var maxMessage = 64 << 10
    /// Bytes queued for a browser that does not read: over this it is dropped.
    public var maxQueued = 4 << 20
    /// Above this many queued bytes a session skips read models until the page catches up.
    public var pushBackpressure = 256 << 10
    /// A socket silent this long is pinged; silent for `idleTimeoutMillis`, dropped.
    public var pingAfterMillis: UInt64 = 15_000
    public var idleTimeoutMillis: UInt64 = 45_000
    /// After a close frame is sent, how long the browser has to answer it.
    public var closeTimeoutMillis: UInt64 = 2_000
    /// Actions a page may have waiting for the cluster at once.
    public var maxPendingActions = 16

    public init() {}
}
