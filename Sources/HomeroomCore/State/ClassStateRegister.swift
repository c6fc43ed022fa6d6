/// Class state as a forward-only lattice: the later state wins; for the same
/// state, the earliest stamp wins (the moment the class really started or ended).
public struct ClassStateRegister: Hashable, Sendable {
    public var state: ClassState
    public var stamp: Stamp

    public init(state: ClassState = .before, stamp: Stamp = .origin) {
        self.state = state
        self.stamp = stamp
    }

    @discardableResult
    public mutating func merge(_ other: ClassStateRegister) -> Bool {
        guard other.state > state || (other.state == state && other.stamp < stamp) else { return false }
        self = other
        return true
    }
}
