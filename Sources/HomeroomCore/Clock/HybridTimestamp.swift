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
