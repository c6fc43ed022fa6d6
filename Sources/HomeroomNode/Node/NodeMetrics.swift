import Synchronization

/// Counters a node keeps for /metrics and for tests.
public final class NodeMetrics: Sendable {
    private let counters = Mutex<[String: UInt64]>([:])

    public init() {}

    public func add(_ name: String, _ amount: UInt64 = 1) {
        counters.withLock { $0[name, default: 0] &+= amount }
    }

    public subscript(_ name: String) -> UInt64 { counters.withLock { $0[name] ?? 0 } }

    public var snapshot: [String: UInt64] { counters.withLock { $0 } }
}
