import HomeroomCore

/// The limits a node's engine enforces on what clients write (from `NodeConfig`).
public struct EnginePolicy: Sendable, Hashable {
    /// Rooms one node holds; a write that would open one more is refused `node-full`.
    public var maxRooms: Int
    /// Users one room holds; a new user's join beyond it is refused `room-full`.
    public var maxUsersPerRoom: Int
    /// How far back a reward's issue time may lie (`RoomState.admit`).
    public var rewardWindowMillis: UInt64
    /// How far ahead of this node's clock a remote delta's clock may run before it is refused.
    public var maxClockDriftMillis: UInt64
    /// When a user's sessions this node started are folded: this many over, or the last
    /// over this long ago (`RoomState.sessionFoldPlan`).
    public var sessionFoldThreshold = RoomState.sessionFoldThreshold
    public var sessionFoldQuietMillis = RoomState.sessionFoldQuietMillis
    /// How long after a boot (or a refutation) sessions of this node's earlier, dead
    /// incarnations count as over: their clients reclaim them at their next sync
    /// (`ClusterNode.reclaimSession`), and a client that has not by then is gone with them.
    public var reclaimGraceMillis: UInt64 = 60_000
    /// How long a session's lease lasts without a sync from its client before the node
    /// ends the session (`NodeEngine+Leases`); 0: no leases.
    public var sessionTimeoutMillis: UInt64 = 0
    /// The same for the rewards it sequenced (`RoomState.rewardFoldPlan`).
    public var rewardFoldThreshold = RoomState.rewardFoldThreshold
    public var rewardFoldQuietMillis = RoomState.rewardFoldQuietMillis
    /// How fast clients may write, join, say hello and sync (`AdmissionLimits`).
    public var rates = AdmissionRates()

    public init(maxRooms: Int = 10_000, maxUsersPerRoom: Int = 200_000,
                rewardWindowMillis: UInt64 = RoomState.defaultRewardWindowMillis,
                maxClockDriftMillis: UInt64 = HybridClock.defaultMaxForwardDriftMillis) {
        self.maxRooms = maxRooms
        self.maxUsersPerRoom = maxUsersPerRoom
        self.rewardWindowMillis = rewardWindowMillis
        self.maxClockDriftMillis = maxClockDriftMillis
    }
}
