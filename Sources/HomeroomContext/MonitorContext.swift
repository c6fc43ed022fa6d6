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

    /// The link for people: which node, since when, why it was lost (`reason`), what is
    /// tried now and when the next round over the nodes starts.
    public var link: LinkInfo { session.link }

    /// The last sync round trip to the node, in microseconds (0 before the first).
    public var latencyMicros: Double { session.latencyMicros }

    /// The node this pool is attached to now (its replica id, as text; empty when not joined).
    public var attachedNode: String { session.attachedNode }

    /// The join token's expiry (Unix seconds), nil without a token or before joining.
    public var tokenExpiresAt: Int64? { try? session.client().tokenExpiresAt }

    /// Renews the join token without leaving (Signaling's `renewToken`): the session,
    /// presence and subscriptions stay. Returns the new expiry (Unix seconds). Refused
    /// `token-renewal-mismatch` for a token of another user or role, `token-wrong-room`
    /// for another room, and with the token's own `token-*` code when it is not valid.
    @discardableResult
    public func renewToken(_ token: String) throws(ContextError) -> Int64 { try session.renewToken(token) }

    /// Diagnostics for tools and tests (never for drawing): whether this pool's replica
    /// is identical to `other`, e.g. a node's copy of the room, as this user may see it
    /// (nodes also hold other users' peer messages).
    public func replicaMatches(_ other: RoomState) -> Bool { session.replica == other.visible(to: session.config.user) }

    /// Diagnostics: how many deltas the local replica holds, per sequencing node.
    public var seenCount: UInt64 {
        session.replica.seen.count
    }
}
