import HomeroomCore

/// A stamp an operation carries as three flat fields (`<name>_clock`, `<name>_replica`,
/// `<name>_sequence`) rather than as a nested message. No stamp has sequence 0, so all
/// three 0 means "none" (an older sender, or nothing to name).
struct FlatStamp {
    var clock: UInt64 = 0
    var replica: UInt64 = 0
    var sequence: UInt64 = 0

    init(clock: UInt64, replica: UInt64, sequence: UInt64) {
        self.clock = clock
        self.replica = replica
        self.sequence = sequence
    }

    /// `.origin` and nil both travel as the three zeros.
    init(_ stamp: Stamp?) {
        guard let stamp, stamp != .origin else { return }
        clock = stamp.clock.packed
        replica = stamp.clock.replica.rawValue
        sequence = stamp.sequence
    }

    /// Clock, replica and sequence, in the order the fields are declared.
    var fields: (UInt64, UInt64, UInt64) { (clock, replica, sequence) }

    /// The stamp, or nil for the three zeros.
    var stamp: Stamp? {
        sequence == 0 ? nil : Stamp(clock: HybridTimestamp(packed: clock, replica: ReplicaID(replica)), sequence: sequence)
    }
}
