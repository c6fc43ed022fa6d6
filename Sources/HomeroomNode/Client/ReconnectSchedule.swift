import HomeroomCore

/// When a client that lost its node tries the nodes again (Signaling's reconnect
/// schedule). The first round over the nodes runs at once (failover to a live node
/// stays immediate); after each round in which every node failed, the client waits
/// 2, 4, 8, then 16 s (a little more, at random, so the clients of a node that comes
/// back do not all arrive at once), then counts as `suspended` and tries a round every
/// 30 s, until it is attached again or closed. Pure: the caller passes the generator.
public struct ReconnectSchedule: Sendable, Equatable {
    public struct Options: Sendable, Equatable {
        /// The waits after the first failed rounds, in order: Signaling's 2, 4, 8, 16 s.
        public var backoffMillis: [UInt64] = [2_000, 4_000, 8_000, 16_000]
        /// Once the backoff is spent (suspended): the wait between rounds.
        public var suspendedIntervalMillis: UInt64 = 30_000
        /// Each wait is lengthened by up to this share of itself, at random (0 ... 1).
        public var jitter = 0.1

        public init() {}

        public init(backoffMillis: [UInt64], suspendedIntervalMillis: UInt64, jitter: Double = 0.1) {
            self.backoffMillis = backoffMillis
            self.suspendedIntervalMillis = suspendedIntervalMillis
            self.jitter = jitter
        }
    }

    /// What follows a failed round: how long to wait, and whether the client is suspended now.
    public struct Step: Sendable, Equatable {
        public var waitMillis: UInt64
        public var suspended: Bool
        public init(waitMillis: UInt64, suspended: Bool) {
            self.waitMillis = waitMillis
            self.suspended = suspended
        }
    }

    public let options: Options
    /// Rounds failed since the link was lost (0: the next round is the immediate first one).
    public private(set) var failedRounds = 0

    public init(_ options: Options = Options()) { self.options = options }

    /// Whether the backoff is spent: rounds come every `suspendedIntervalMillis`.
    public var isSuspended: Bool { failedRounds > options.backoffMillis.count }

    /// A whole round failed: the wait before the next one (jittered with `random`).
    public mutating func roundFailed(using random: inout some RandomNumberGenerator) -> Step {
        let base = failedRounds < options.backoffMillis.count ? options.backoffMillis[failedRounds] : options.suspendedIntervalMillis
        failedRounds += 1
        let spread = UInt64(Double(base) * min(max(options.jitter, 0), 1))
        let extra = spread == 0 ? 0 : UInt64.random(in: 0...spread, using: &random)
        return Step(waitMillis: base + extra, suspended: isSuspended)
    }

    /// Attached again: the next loss starts with an immediate round and the full backoff.
    public mutating func reset() { failedRounds = 0 }
}
