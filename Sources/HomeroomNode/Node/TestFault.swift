import HomeroomCore
import Synchronization

/// Faults compiled into the node for tests only (`homeroom node --test-fault`, refused
/// without `--test-only`): they break a promise on purpose, so that the tools that check
/// the promise (`homeroom verify`, the chaos checker) are shown to catch the breach.
public enum TestFault: String, Sendable, Equatable, CaseIterable {
    /// Every 4th write a client sends here is answered ACCEPTED with a dot no node ever
    /// makes, and is neither stored, applied nor published: an acknowledged write lost.
    case loseAcknowledgedWrites = "lose-acknowledged-writes"

    /// One write in this many is lost.
    static let lossPeriod: UInt64 = 4
    /// The lost writes' dots: far above any sequence a replica reaches, so no replica's
    /// version vector ever covers one.
    static let lostSequenceBase: UInt64 = 1 << 56
}

/// Counts the client writes a node under `TestFault.loseAcknowledgedWrites` took, to pick which it loses.
final class WriteLoss: Sendable {
    private let count = Atomic<UInt64>(0)

    /// The dot to acknowledge a lost write with, or nil for a write to carry out as usual.
    func lose(_ operation: Operation, origin: ReplicaID) -> Dot? {
        // A leave is left alone: a client that cannot leave would hold the check up, not fail it.
        if case .leaveSession = operation { return nil }
        let n = count.add(1, ordering: .relaxed).newValue
        guard n % TestFault.lossPeriod == 0 else { return nil }
        return Dot(origin: origin, sequence: TestFault.lostSequenceBase + n)
    }
}
