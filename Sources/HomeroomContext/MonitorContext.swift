import HomeroomCore
import HomeroomNode

/// The link (AgoraEduMonitorContext): connection state (connecting, connected,
/// reconnecting, aborted) and the round trip of the last sync.
public final class MonitorContext: Sendable {
    let session: ClassroomSession
    init(_ session: ClassroomSession) { self.session = session }

    public func registerEventHandler(_ handler: any MonitorHandler) { session.register(handler) }
    public func unregisterEventHandler(_ handler: any MonitorHandler) { session.unregister(handler) }

    public var connectionState: ConnectionState { session.connectionState }

    /// The link for people: which node, since when, why it was lost, what is tried now.
    public var link: LinkInfo { session.link }

    /// The last sync round trip to the node, in microseconds (0 before the first).
    public var latencyMicros: Double { session.latencyMicros }

    /// The node this pool is attached to now (its replica id, as text; empty when not joined).
    public var attachedNode: String { session.attachedNode }

    /// Diagnostics for tools and tests (never for drawing): whether this pool's replica
    /// is identical to `other`, e.g. a node's copy of the room, as this user may see it
    /// (nodes also hold other users' peer messages).
    public func replicaMatches(_ other: RoomState) -> Bool { session.replica == other.visible(to: session.config.user) }

    /// Diagnostics: how many deltas the local replica holds, per sequencing node.
    public var seenCount: UInt64 {
        session.replica.seen.count
    }
}
