import HomeroomCore

/// What a write's author is told: the engine's answer, mapped to a `WriteAck` by the node.
public struct WriteOutcome: Sendable, Hashable {
    public enum Status: Sendable, Hashable {
        /// Sequenced, stored and applied: `dot` names the delta.
        case accepted
        /// Already there (same author and counter): nothing more to do.
        case duplicate
        /// Refused by the rules: `code` says why.
        case rejected
        /// Not now, or not here: retry later or on another node.
        case unavailable
    }

    public var status: Status
    public var code: String
    public var message: String
    public var dot: Dot?
    /// For an accepted property write: the revision it created, and its set's revision after it.
    public var revision: UInt64 = 0
    public var setRevision: UInt64 = 0
    /// For an accepted lock acquisition: the grant's fence.
    public var fence: UInt64 = 0

    public init(_ status: Status, code: String = "", message: String = "", dot: Dot? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.dot = dot
    }

    static func refused(_ error: WriteError, dot: Dot? = nil) -> WriteOutcome {
        WriteOutcome(.rejected, code: error.code, message: error.description, dot: dot)
    }

    static func refused(_ code: String, _ message: String) -> WriteOutcome {
        WriteOutcome(.rejected, code: code, message: message)
    }

    public var isAccepted: Bool { status == .accepted }
}

/// A write the engine numbered but has not taken yet: the shell stores `delta`, then
/// calls `NodeEngine.commit` (the sequence number is consumed only then). A write whose
/// store failed is dropped, and the number is given out again.
public struct StampedWrite: Sendable {
    public let room: String
    public let delta: Delta
    /// The write as the origin prepared it (a property's revision, a lock's fence filled in).
    public let prepared: Write
    let sequencer: Sequencer
    let nowMillis: UInt64
}

/// The engine's first answer to a write: told at once, or to be stored then committed.
public enum WriteDecision: Sendable {
    case answer(WriteOutcome)
    case persist(StampedWrite)
}

/// A committed write: what the author is told, and what changed.
public struct CommittedWrite: Sendable {
    public let room: String
    public let delta: Delta
    public let outcome: WriteOutcome
    public let changes: [RoomChange]
    public let messaging: [MessagingChange]
}
