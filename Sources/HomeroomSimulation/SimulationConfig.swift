import HomeroomCore
import HomeroomEngine

/// The shape of one simulated schedule.
public struct SimulationConfig: Sendable, Hashable {
    public var replicas = 3
    /// Ordinary rooms, each with its own clients; and whether a breakout group's room of
    /// the first one is added (for small classrooms, whose groups it admits by).
    public var rooms = 2
    public var breakoutRoom = true
    public var students = 8
    public var steps = 300
    public var stageLimit: UInt32 = 3
    public var handLimit: UInt32 = 4
    /// Percent of messages lost, duplicated; and of steps that flip a partition.
    public var dropPercent = 15
    public var duplicatePercent = 10
    public var partitionPercent = 3
    /// Percent of writes that skip the origin's admission check, as a forged or
    /// racing write would: the merge rules alone must then keep the invariants.
    public var forgedPercent = 15
    public var roomType = RoomType.smallClassroom
    /// Percent of random writes that are messaging (messages, presence state, chat
    /// mutes, history limits, conditional property writes).
    public var messagingPercent = 30
    /// A small history, so the count limit and the floor are exercised.
    public var historyLimit: UInt32 = 25
    /// Percent of store appends that fail: a client write is refused `store-failed`; a
    /// remote delta or patch is applied but not stored (a restart loses it).
    public var storeFailurePercent = 3
    /// Percent of client writes left in flight (stamped, being stored, the node's lock free)
    /// while other steps go on, one per room and node (node writes: half as often); and of
    /// steps at which one such write finishes (is stored and committed, or fails).
    public var inFlightPercent = 30
    public var inFlightFinishPercent = 20
    /// Percent of nodes whose clock runs beyond the drift limit ahead of the others.
    public var farSkewPercent = 5
    /// The nodes' tick (a heartbeat to every node), and the silence after which a node
    /// is suspect, then declared down: the node's defaults (200, 1,000, 2,000 ms) scaled
    /// down, so partitions of a few simulated seconds declare nodes down that are alive.
    public var heartbeatMillis: UInt64 = 100
    public var suspectMillis: UInt64 = 400
    public var downMillis: UInt64 = 800
    /// Probes of a node not heard for `suspectMillis`: itself and this many others are
    /// asked (the engine's `IndirectProber`, as the node runs it); nil: silence alone decides.
    public var probeHelpers: Int? = 2
    /// Replays only: what happened to this user (its writes, the nodes' writes about it,
    /// its leases, restarts), in `SimulationReport.trace`.
    public var traceUser: UserID? = nil
    /// Whether nodes crash and restart (off only to show the restart floor trips).
    public var restarts = true
    /// Test only, to show the acknowledged-write oracle fails: writes of these kinds
    /// (`Operation.name`) are acknowledged and never applied anywhere, as the nodes
    /// sequence an empty message of their author in their place. Meant for kinds the
    /// origin fills nothing into (not properties or locks).
    public var unappliedOperations: Set<String> = []
    /// The engine's limits: the node's, but with a 3 s reward window, folds due after two
    /// sessions or rewards (or half a second of quiet), and sessions of a crashed
    /// incarnation over 300 ms after the restart, so a schedule of a few simulated
    /// seconds folds sessions and rewards under the faults.
    public var policy: EnginePolicy = {
        // A drift limit above the ordinary skews (0-2 s) and far below the node's 60 s, so
        // reward folds (which allow for it) come within a schedule.
        var policy = EnginePolicy(rewardWindowMillis: 3_000, maxClockDriftMillis: 2_500)
        policy.sessionFoldThreshold = 2
        policy.sessionFoldQuietMillis = 500
        policy.reclaimGraceMillis = 300
        policy.rewardFoldThreshold = 2
        policy.rewardFoldQuietMillis = 500
        // Leases a few simulated seconds can see run out.
        policy.sessionTimeoutMillis = 1_000
        return policy
    }()

    public init() {}
}

/// What a finished schedule found.
public struct SimulationReport: Sendable, CustomStringConvertible {
    public var seed: UInt64
    public var rooms = 0
    public var writes = 0
    public var refusedAtOrigin = 0
    public var rejectedByMerge = 0
    public var messagesSent = 0
    public var messagesDropped = 0
    public var messagesDuplicated = 0
    public var partitions = 0
    public var syncRounds = 0
    public var patchesSent = 0
    public var messagesAccepted = 0
    public var messagesKept = 0
    public var messageRetries = 0
    public var duplicateMessagesRefused = 0
    /// A message retried after it had left a node's history comes back there (documented).
    public var messagesReadded = 0
    public var propertyConflicts = 0
    public var propertyWritesLost = 0
    public var lockGrants = 0
    public var guardedWrites = 0
    public var breakoutGroups = 0
    /// Retried writes (rewards, messages) a node answered DUPLICATE.
    public var duplicatesAcknowledged = 0
    public var storeFailures = 0
    /// Snapshots a node stored after its store missed an append.
    public var snapshotsAfterMisses = 0
    public var sessionFolds = 0
    public var rewardFolds = 0
    /// The most session and reward records one user keeps at the end (after the final folds).
    public var sessionRecordsLeft = 0
    public var rewardRecordsLeft = 0
    public var restarts = 0
    /// Nodes declared down by failure detection, those of them alive (a partition longer
    /// than the down period), and the refutations they made; users the presence check
    /// expected online.
    public var downsDetected = 0
    public var falseDowns = 0
    public var refutations = 0
    /// Probes sent (direct and through another node) and those whose answer moved a
    /// silent node's last sign of life (so it was not declared down then).
    public var probesSent = 0
    public var probeVouches = 0
    public var presenceChecked = 0
    /// Clients that vanished without a leave, those checked offline at the end, the leases
    /// that ran out, clients that stayed attached across their node's restart, and the
    /// sessions reclaimed for them.
    public var vanished = 0
    public var vanishedChecked = 0
    public var leasesExpired = 0
    public var attachedAcrossRestarts = 0
    public var reclaims = 0
    /// Remote deltas refused for a clock beyond the drift limit, and nodes with such a clock.
    public var clockRefusals = 0
    public var farSkewedNodes = 0
    /// Patches that showed a node's own writes above its numbering (never expected here).
    public var ownSequencesBehind = 0
    /// Writes left in flight while other steps went on, and those a crash lost.
    public var writesInFlight = 0
    public var inFlightLost = 0
    /// Clock readings checked to rise with their sequence numbers (per room, origin, replica).
    public var clockReadingsChecked = 0
    /// Client writes to the breakout group's room the main room's state refused, and let in.
    public var groupRoomRefusals = 0
    public var groupRoomAdmissions = 0
    /// Acknowledged writes checked against a replica's registers (writes times replicas).
    public var acknowledgedWritesChecked = 0
    /// Per kind (`Operation.name`), acknowledged writes a replica holds no trace of (each is a violation).
    public var writesWithoutEffect: [String: Int] = [:]
    public var violations: [String] = []
    /// `SimulationConfig.traceUser`'s events, in order.
    public var trace: [String] = []
    public var finalRoster: Roster?
    /// FNV-1a over every delivery (the delta's dot, where it went, in which room), in
    /// order: two runs of one seed agree on it exactly, in any process, or a replay is
    /// not exact (an unsorted dictionary feeding an order, say).
    public var deliveryDigest: UInt64 = 0xcbf2_9ce4_8422_2325

    mutating func noteDelivery(origin: UInt64, sequence: UInt64, to replica: Int, room: Int) {
        for value in [origin, sequence, UInt64(replica), UInt64(room)] {
            var rest = value
            for _ in 0..<8 {
                deliveryDigest = (deliveryDigest ^ (rest & 0xff)) &* 0x100_0000_01b3
                rest >>= 8
            }
        }
    }

    public var converged: Bool { violations.isEmpty }

    public var description: String {
        var lines = [
            "seed \(seed): \(rooms) rooms, \(writes) writes (\(refusedAtOrigin) refused at origin, \(rejectedByMerge) rejected by merge), "
                + "\(messagesSent) messages (\(messagesDropped) dropped, \(messagesDuplicated) duplicated), "
                + "\(partitions) partitions, \(patchesSent) repair patches, \(syncRounds) final sync rounds",
            "messaging: \(messagesAccepted) messages accepted, \(messagesKept) kept, \(messageRetries) retries "
                + "(\(duplicateMessagesRefused) refused as duplicates, \(messagesReadded) back after leaving), "
                + "\(propertyConflicts) property conflicts reported, \(propertyWritesLost) property writes lost",
            "locks: \(lockGrants) grants, \(guardedWrites) guarded writes accepted; \(breakoutGroups) breakout groups at the end",
            "lifetime: \(sessionFolds) session folds, \(rewardFolds) reward folds; at most \(sessionRecordsLeft) session and \(rewardRecordsLeft) reward records per user left",
            "pipeline: \(writesInFlight) writes left in flight (\(inFlightLost) lost in a crash), \(clockReadingsChecked) clock readings checked; "
                + "group room: \(groupRoomRefusals) writes refused by the main room, \(groupRoomAdmissions) let in; "
                + "\(acknowledgedWritesChecked) acknowledged writes checked on the replicas",
            "faults: \(restarts) restarts, \(storeFailures) store failures, \(duplicatesAcknowledged) retries answered duplicate, "
                + "\(clockRefusals) deltas refused for a clock \(farSkewedNodes > 0 ? "beyond the limit (\(farSkewedNodes) far-skewed nodes)" : "ahead")",
            "presence: \(downsDetected) downs detected (\(falseDowns) of alive nodes), \(refutations) refutations; \(presenceChecked) users expected online at the end; "
                + "\(probesSent) probes, \(probeVouches) vouched for a silent node",
            "leases: \(vanished) clients vanished (\(vanishedChecked) checked offline at the end), \(leasesExpired) leases ran out; "
                + "\(attachedAcrossRestarts) clients stayed attached across a restart, \(reclaims) sessions reclaimed",
        ]
        lines.append(violations.isEmpty ? "all replicas identical, every invariant held" : "VIOLATIONS:\n  " + violations.joined(separator: "\n  "))
        if !trace.isEmpty { lines.append("trace:\n  " + trace.joined(separator: "\n  ")) }
        return lines.joined(separator: "\n")
    }
}
