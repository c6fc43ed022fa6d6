/// Bounds on everything a decoder accepts from the network. Every decode checks
/// the input size first, then (after protobuf-c has parsed it, within
/// `maxDecodedBytes` of memory) every count, string and byte length, so a
/// hostile or broken peer costs at most these amounts.
///
/// The defaults suit a lecture hall of 100,000 users split over a few patches;
/// raise them on both ends together (a sender should respect the receiver's
/// limits: a message over them is refused whole, never half applied).
public struct WireLimits: Hashable, Sendable {
    /// Largest encoded message accepted (the whole envelope). Default 4 MiB.
    /// Send larger snapshots as several patches (see docs/PROTOCOL.md).
    public var maxMessageBytes: Int
    /// Memory protobuf-c may allocate to parse one message. Default 64 MiB
    /// (about 16 times `maxMessageBytes`: a parsed struct is bigger than its bytes).
    public var maxDecodedBytes: Int
    /// Deltas in one DeltaBatch. Default 10,000.
    public var maxDeltasPerBatch: Int
    /// DeltaBatches in one SyncResponse. Default 1,024.
    public var maxBatchesPerMessage: Int
    /// Bytes (UTF-8) in any one string: ids, names, keys, causes. Default 1,024.
    public var maxStringBytes: Int
    /// Bytes in one property value, payload or credential. Default 32 KiB.
    public var maxBytesValue: Int
    /// Entries in a string table (DeltaBatch, RoomPatch, WriteRequest). Default 20,000.
    public var maxStringTable: Int
    /// Users in one patch or snapshot. Default 200,000.
    public var maxUsersPerPatch: Int
    /// Entries in any other map: properties, rewards of one user, dead
    /// incarnations, heartbeat rooms and peers, missing ranges. Default 200,000.
    public var maxMapEntries: Int
    /// Session records of one user. Default 1,024 (docs/ARCHITECTURE.md, "Lifetime": a
    /// node admits at most 32 live ones per user, and folds the ended ones away).
    public var maxSessionsPerUser: Int
    /// Origins (nodes) in a version vector, and entries of a replica table. Default 4,096.
    public var maxOrigins: Int
    /// Early (out-of-order) sequence numbers kept per origin. Default 65,536.
    public var maxEarlyPerOrigin: Int
    /// Messages in one patch's history. Default 20,000 (the history keeps at most 10,000).
    public var maxMessagesPerPatch: Int
    /// Items in one presence-state write, and presence keys of one user in a patch. Default 256.
    public var maxPresenceItems: Int
    /// Dots in a property write's lineage. Default 32 (Homeroom sends at most 8).
    public var maxLineage: Int

    public init(maxMessageBytes: Int = 4 << 20,
                maxDecodedBytes: Int = 64 << 20,
                maxDeltasPerBatch: Int = 10_000,
                maxBatchesPerMessage: Int = 1_024,
                maxStringBytes: Int = 1_024,
                maxBytesValue: Int = 32 << 10,
                maxStringTable: Int = 20_000,
                maxUsersPerPatch: Int = 200_000,
                maxMapEntries: Int = 200_000,
                maxSessionsPerUser: Int = 1_024,
                maxOrigins: Int = 4_096,
                maxEarlyPerOrigin: Int = 65_536,
                maxMessagesPerPatch: Int = 20_000,
                maxPresenceItems: Int = 256,
                maxLineage: Int = 32) {
        self.maxMessageBytes = maxMessageBytes
        self.maxDecodedBytes = maxDecodedBytes
        self.maxDeltasPerBatch = maxDeltasPerBatch
        self.maxBatchesPerMessage = maxBatchesPerMessage
        self.maxStringBytes = maxStringBytes
        self.maxBytesValue = maxBytesValue
        self.maxStringTable = maxStringTable
        self.maxUsersPerPatch = maxUsersPerPatch
        self.maxMapEntries = maxMapEntries
        self.maxSessionsPerUser = maxSessionsPerUser
        self.maxOrigins = maxOrigins
        self.maxEarlyPerOrigin = maxEarlyPerOrigin
        self.maxMessagesPerPatch = maxMessagesPerPatch
        self.maxPresenceItems = maxPresenceItems
        self.maxLineage = maxLineage
    }

    public static let `default` = WireLimits()
}
