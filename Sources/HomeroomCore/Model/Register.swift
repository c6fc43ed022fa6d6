/// A last-writer-wins register: the value with the greatest stamp wins.
public struct Register<Value: Hashable & Sendable>: Hashable, Sendable {
    public var value: Value
    public var stamp: Stamp

    public init(_ value: Value, stamp: Stamp) {
        self.value = value
        self.stamp = stamp
    }

    /// Applies a write; returns true when it won.
    @inline(__always)
    @discardableResult
    public mutating func write(_ newValue: Value, at newStamp: Stamp) -> Bool {
        guard stamp < newStamp else { return false }
        value = newValue
        stamp = newStamp
        return true
    }

    @inline(__always)
    @discardableResult
    public mutating func merge(_ other: Register<Value>) -> Bool {
        write(other.value, at: other.stamp)
    }
}

extension Register {
    /// Whether a snapshot (`missing(since: .empty)`) keeps this register as it is:
    /// it was written (sequence 0 is no write), or it equals the default it would get.
    @inline(__always)
    func isWritten(or fresh: Register<Value>) -> Bool { stamp.sequence != 0 || self == fresh }
}

extension Stamp {
    /// The stamp of a register nobody has written: it loses to every write.
    public static let origin = Stamp(clock: .zero, sequence: 0)
}

/// A room or user property: bytes, or nil once deleted (a tombstone that still
/// carries its stamp so a late write cannot resurrect it), with who wrote it and why.
///
/// Each key has a revision: the origin of a write gives it the key's revision there
/// plus one, and records the writes it replaced (`lineage`). Two property values
/// merge by (revision, stamp), so a key's revision never goes down on a replica; see
/// `RoomState.mergeProperty`.
public struct PropertyValue: Hashable, Sendable {
    public var bytes: [UInt8]?
    public var operatorID: UserID
    public var cause: String
    /// 0 for writes made before revisions existed.
    public var revision: UInt64
    /// The dots of the writes this one replaced at its origin, newest first.
    public var lineage: [Dot]
    /// The lock fence this write was made under (nil: unguarded); see `Locks`.
    public var fence: LockFence?

    public init(bytes: [UInt8]?, operatorID: UserID, cause: String, revision: UInt64 = 0, lineage: [Dot] = [], fence: LockFence? = nil) {
        self.bytes = bytes
        self.operatorID = operatorID
        self.cause = cause
        self.revision = revision
        self.lineage = lineage
        self.fence = fence
    }
}

extension Register where Value == PropertyValue {
    /// The order two writes of one property merge by: lock fence (a write guarded by
    /// a later grant wins over one made by an earlier holder, whatever the clocks say),
    /// then revision, then stamp.
    @inline(__always)
    public func precedes(_ other: Register<PropertyValue>) -> Bool {
        let fence = value.fence?.fence ?? 0, otherFence = other.value.fence?.fence ?? 0
        if fence != otherFence { return fence < otherFence }
        return value.revision != other.value.revision ? value.revision < other.value.revision : stamp < other.stamp
    }

    /// The key's revision (0 for a key never written).
    public var revision: UInt64 { value.revision }
}

extension PropertyValue {
    /// Whether this write's lineage tells which write of `revision` it descends from:
    /// the lineage covers `own - 1` down to `own - lineage.count`, and a lineage
    /// shorter than the maximum goes back to the key's first write.
    @inline(__always)
    func reaches(revision other: UInt64, of own: UInt64) -> Bool {
        guard other <= own, other > 0 else { return false }
        if other == own { return true }
        return lineage.count < PropertyRevision.lineageLength || own - other <= UInt64(lineage.count)
    }
}
