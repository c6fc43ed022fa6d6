/// Identifies a replica that sequences deltas: a node. Their number is small,
/// so version vectors keyed by it stay small whatever the roster size.
public struct ReplicaID: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    /// A stable id for a node name (FNV-1a, 64 bit), so a name maps to the same id on every machine.
    public init(name: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        self.rawValue = hash
    }

    public static func < (a: ReplicaID, b: ReplicaID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { String(rawValue, radix: 16) }
}

/// Structured replica ids (docs/PROTOCOL.md, "Replica ids"): a node takes a new id with
/// each new store, made of its name's hash and a generation (when the store was made),
/// so every replica can tell which ids one node name has had and which is the newest.
/// That is what lets the newest retire the others (`Operation.retirePredecessors`):
/// without it, every store a node ever had would leave state behind in every room.
///
/// Layout: bit 63 private-topic origin (`privateForm`), bit 62 set, bits 61-38 the
/// name's hash (24 bits), bits 37-0 the generation (10 ms since 2020, 87 years).
extension ReplicaID {
    static let privateBit: UInt64 = 1 << 63
    static let structuredBit: UInt64 = 1 << 62
    static let generationBits: UInt64 = 38
    static let generationMask: UInt64 = (1 << 38) - 1
    static let nameHashMask: UInt64 = (1 << 24) - 1
    /// 2020-01-01T00:00:00Z in Unix milliseconds.
    static let generationEpochMillis: UInt64 = 1_577_836_800_000

    /// The id of the store a node named `name` made at `generation`.
    public init(node name: String, generation: UInt64) {
        self.rawValue = Self.structuredBit | (UInt64(Self.nameHash(of: name)) << Self.generationBits) | (generation & Self.generationMask)
    }

    /// The 24-bit hash of a node name that structured ids carry (folded FNV-1a).
    public static func nameHash(of name: String) -> UInt32 {
        let full = ReplicaID(name: name).rawValue
        return UInt32(truncatingIfNeeded: (full >> 40) ^ (full >> 16) ^ full) & UInt32(nameHashMask)
    }

    /// The generation of a store made at this wall-clock time (Unix ms).
    public static func generation(atMillis millis: UInt64) -> UInt64 {
        (millis &- generationEpochMillis) / 10 & generationMask
    }

    /// Whether this id has a name hash and a generation (ids of older stores do not).
    public var isStructured: Bool { rawValue & Self.structuredBit != 0 }
    /// The node name's hash (meaningful only when `isStructured`).
    public var nameHash: UInt32 { UInt32((rawValue >> Self.generationBits) & Self.nameHashMask) }
    /// The generation (meaningful only when `isStructured`).
    public var generation: UInt64 { rawValue & Self.generationMask }
    /// The origin that sequences this node's private-topic writes (peer messages).
    public var privateForm: ReplicaID { ReplicaID(rawValue ^ Self.privateBit) }
    /// The node id itself, for an id that may be a private-topic origin.
    public var nodeForm: ReplicaID { isStructured ? ReplicaID(rawValue & ~Self.privateBit) : self }

    /// Whether `other` is an older store of the same node name than this one.
    public func supersedes(_ other: ReplicaID) -> Bool {
        isStructured && other.isStructured && other.nameHash == nameHash && other.generation < generation
    }
}

/// A hybrid logical clock reading: wall-clock milliseconds and a logical counter,
/// packed into one word (48 + 16 bits) so that a counter overflow carries into the
/// milliseconds, plus the replica that made it, which breaks ties.
public struct HybridTimestamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// `millis << 16 | logical`.
    public var packed: UInt64
    public var replica: ReplicaID

    public static let logicalBits: UInt64 = 16
    public static let zero = HybridTimestamp(packed: 0, replica: ReplicaID(0))

    public init(packed: UInt64, replica: ReplicaID) {
        self.packed = packed
        self.replica = replica
    }

    public init(millis: UInt64, logical: UInt16, replica: ReplicaID) {
        self.packed = (millis << Self.logicalBits) | UInt64(logical)
        self.replica = replica
    }

    public var millis: UInt64 { packed >> Self.logicalBits }
    public var logical: UInt16 { UInt16(truncatingIfNeeded: packed) }

    @inline(__always)
    public static func < (a: HybridTimestamp, b: HybridTimestamp) -> Bool {
        a.packed != b.packed ? a.packed < b.packed : a.replica < b.replica
    }

    public var description: String { "\(millis).\(logical)@\(replica)" }
}
