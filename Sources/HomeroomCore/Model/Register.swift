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

extension Stamp {
    /// The stamp of a register nobody has written: it loses to every write.
    public static let origin = Stamp(clock: .zero, sequence: 0)
}

/// A room or user property: bytes, or nil once deleted (a tombstone that still
/// carries its stamp so a late write cannot resurrect it), with who wrote it and why.
public struct PropertyValue: Hashable, Sendable {
    public var bytes: [UInt8]?
    public var operatorID: UserID
    public var cause: String

    public init(bytes: [UInt8]?, operatorID: UserID, cause: String) {
        self.bytes = bytes
        self.operatorID = operatorID
        self.cause = cause
    }
}
