/// One sequenced change: what, by whom, when and where it was sequenced.
///
/// `author` and `authorRole` are checked against the authority rules on every
/// replica. `authorCounter` is the author's own count of its writes: a client that
/// retries a write (perhaps through another node) sends the same counter, and a
/// reward carrying a counter already applied is not counted twice.
public struct Delta: Hashable, Sendable {
    public var origin: ReplicaID { clock.replica }
    public var sequence: UInt64
    public var clock: HybridTimestamp
    public var author: UserID
    public var authorRole: Role
    public var authorCounter: UInt64
    public var operation: Operation

    public init(sequence: UInt64, clock: HybridTimestamp, author: UserID, authorRole: Role, authorCounter: UInt64, operation: Operation) {
        self.sequence = sequence
        self.clock = clock
        self.author = author
        self.authorRole = authorRole
        self.authorCounter = authorCounter
        self.operation = operation
    }

    public var dot: Dot { Dot(origin: clock.replica, sequence: sequence) }
    public var stamp: Stamp { Stamp(clock: clock, sequence: sequence) }
}

/// A write that a client (or the node itself) asks a node to sequence.
public struct Write: Hashable, Sendable {
    public var author: UserID
    public var authorRole: Role
    public var authorCounter: UInt64
    public var operation: Operation

    public init(author: UserID, authorRole: Role, authorCounter: UInt64, operation: Operation) {
        self.author = author
        self.authorRole = authorRole
        self.authorCounter = authorCounter
        self.operation = operation
    }
}

/// Stamps writes at their origin: the node's clock and its next sequence number.
public struct Sequencer: Sendable, Equatable {
    public private(set) var clock: HybridClock
    public private(set) var lastSequence: UInt64

    public init(replica: ReplicaID, lastSequence: UInt64 = 0, maxForwardDriftMillis: UInt64 = HybridClock.defaultMaxForwardDriftMillis) {
        self.clock = HybridClock(replica: replica, maxForwardDriftMillis: maxForwardDriftMillis)
        self.lastSequence = lastSequence
    }

    public var replica: ReplicaID { clock.replica }

    public mutating func stamp(_ write: Write, nowMillis: UInt64) -> Delta {
        lastSequence += 1
        return Delta(sequence: lastSequence, clock: clock.tick(nowMillis: nowMillis), author: write.author,
                     authorRole: write.authorRole, authorCounter: write.authorCounter, operation: write.operation)
    }

    /// Stamps a write with a sequence number the caller keeps (a node numbers each
    /// room's deltas separately, so a room's version vector has no holes).
    public mutating func stamp(_ write: Write, sequence: UInt64, nowMillis: UInt64) -> Delta {
        lastSequence = max(lastSequence, sequence)
        return Delta(sequence: sequence, clock: clock.tick(nowMillis: nowMillis), author: write.author,
                     authorRole: write.authorRole, authorCounter: write.authorCounter, operation: write.operation)
    }

    /// Stamps a write under another origin than this replica (a node's private origin
    /// for peer messages, see docs/MESSAGING.md): the same clock, the given origin and
    /// sequence number, and `lastSequence` untouched.
    public mutating func stamp(_ write: Write, origin: ReplicaID, sequence: UInt64, nowMillis: UInt64) -> Delta {
        var clock = clock.tick(nowMillis: nowMillis)
        clock.replica = origin
        return Delta(sequence: sequence, clock: clock, author: write.author, authorRole: write.authorRole,
                     authorCounter: write.authorCounter, operation: write.operation)
    }

    /// Lets the clock see a remote delta's reading before it is applied.
    public mutating func observe(_ clockReading: HybridTimestamp, nowMillis: UInt64) throws(ClockError) {
        try clock.observe(clockReading, nowMillis: nowMillis)
    }

    public func admits(_ clockReading: HybridTimestamp, nowMillis: UInt64) -> Bool {
        clock.admits(clockReading, nowMillis: nowMillis)
    }

    /// After a restart: never reuse a sequence number or run the clock backwards.
    public mutating func restore(lastSequence: UInt64, lastClock: UInt64) {
        self.lastSequence = max(self.lastSequence, lastSequence)
        clock.restore(atLeast: lastClock)
    }
}
