/// One delta's identity: the replica that sequenced it and its sequence number there (from 1).
public struct Dot: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var origin: ReplicaID
    public var sequence: UInt64

    public init(origin: ReplicaID, sequence: UInt64) {
        self.origin = origin
        self.sequence = sequence
    }

    public static func < (a: Dot, b: Dot) -> Bool {
        a.origin != b.origin ? a.origin < b.origin : a.sequence < b.sequence
    }

    public var description: String { "\(origin):\(sequence)" }
}

/// When and where a register was last written: the writer's clock and its dot.
/// The dot's origin is the clock's replica, so it is not stored twice.
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var clock: HybridTimestamp
    public var sequence: UInt64

    public init(clock: HybridTimestamp, sequence: UInt64) {
        self.clock = clock
        self.sequence = sequence
    }

    public var dot: Dot { Dot(origin: clock.replica, sequence: sequence) }

    @inline(__always)
    public static func < (a: Stamp, b: Stamp) -> Bool {
        a.clock != b.clock ? a.clock < b.clock : a.sequence < b.sequence
    }

    public var description: String { "\(clock)#\(sequence)" }
}
