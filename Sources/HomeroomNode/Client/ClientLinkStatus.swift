import HomeroomSupport

/// What a client's link is doing, told for people: the node it is attached to (or
/// lost), since when, why, and what it tries now. `RoomClient.linkStatus` gives it;
/// the CLI prints it when the link changes and refuses commands with it meanwhile.
public struct ClientLinkStatus: Sendable, Equatable {
    public var state: ClientLinkState
    /// Why the link is in `state` (or, reconnecting, what the last step was): set with
    /// every change of state.
    public var reason: ClientLinkReason
    /// The node attached now (connected), or the one lost (reconnecting, suspended, aborted).
    public var node: String?
    /// Wall-clock milliseconds since which the node is attached (connected), or lost
    /// (reconnecting and suspended count from the loss).
    public var sinceMillis: UInt64
    /// Why the node was lost, in the words of the failure.
    public var cause: String?
    /// The node being tried now.
    public var trying: String?
    /// The last failed attempt: its node and why.
    public var lastFailure: String?
    /// After every node failed: when (wall clock) the next round of attempts starts.
    public var nextRoundMillis: UInt64?
    /// Connected again after a loss: the node lost, for how long, and why.
    public var recoveredFrom: Recovery?

    public struct Recovery: Sendable, Equatable {
        public var node: String?
        public var millis: UInt64
        public var cause: String?
        public init(node: String?, millis: UInt64, cause: String?) {
            self.node = node
            self.millis = millis
            self.cause = cause
        }
    }

    public init(state: ClientLinkState, reason: ClientLinkReason = .starting, node: String? = nil, sinceMillis: UInt64 = 0,
                cause: String? = nil, trying: String? = nil, lastFailure: String? = nil, nextRoundMillis: UInt64? = nil) {
        self.state = state
        self.reason = reason
        self.node = node
        self.sinceMillis = sinceMillis
        self.cause = cause
        self.trying = trying
        self.lastFailure = lastFailure
        self.nextRoundMillis = nextRoundMillis
    }

    /// One line: "connected to tcp://…", or "lost tcp://… 12 s ago (why); trying tcp://…",
    /// or "lost tcp://… 40 s ago (why); every node failed (last: …); next try in 2 s", or
    /// "suspended: lost tcp://… 2 min ago (why); every node failed for 2 min (last: …); next try in 28 s",
    /// or "given up: banned from the room (was on tcp://…)".
    public func summary(nowMillis: UInt64) -> String {
        let age = Self.seconds(nowMillis >= sinceMillis ? nowMillis - sinceMillis : 0)
        switch state {
        case .connected:
            var text = "connected to \(node ?? "a node")"
            if let was = recoveredFrom {
                let from = was.node.map { $0 == node ? "back after" : "moved from \($0) after" } ?? "after"
                text += " (\(from) \(Self.seconds(was.millis))" + (was.cause.map { ": \($0)" } ?? "") + ")"
            }
            return text
        case .connecting:
            return "connecting" + (trying.map { " to \($0)" } ?? "")
        case .reconnecting, .suspended:
            var text = state == .suspended ? "suspended: " : ""
            text += node.map { "lost \($0) \(age) ago" } ?? "not connected for \(age)"
            if let cause { text += " (\(cause))" }
            if let trying {
                text += "; trying \(trying)"
                if let lastFailure { text += " (before: \(lastFailure))" }
            } else if nextRoundMillis != nil || state == .suspended {
                text += "; every node failed" + (state == .suspended ? " for \(age)" : "") + (lastFailure.map { " (last: \($0))" } ?? "")
                if let next = nextRoundMillis {
                    text += next > nowMillis ? "; next try in \(Self.seconds(next - nowMillis))" : "; trying again now"
                }
            } else {
                text += "; trying the nodes"
            }
            return text
        case .aborted:
            var text = "given up: \(reason.text)"
            if reason == .joinFailed, let lastFailure { text += " (last: \(lastFailure))" }
            if let node { text += " (was on \(node))" }
            return text
        }
    }

    /// The status once attached to `address`: connected since now, remembering the
    /// loss it recovers from (which node, how long, why), if there was one.
    func attached(to address: String, after previous: ClientLinkState, nowMillis: UInt64) -> ClientLinkStatus {
        let recovering = previous == .reconnecting || previous == .suspended || previous == .aborted
        var next = ClientLinkStatus(state: .connected, reason: recovering ? .reattached : .joined, node: address, sinceMillis: nowMillis)
        if recovering, cause != nil || node != nil {
            next.recoveredFrom = Recovery(node: node, millis: nowMillis >= sinceMillis ? nowMillis - sinceMillis : 0, cause: cause)
        }
        return next
    }

    /// The node is lost (the state was connected): reconnecting since now, for `reason`.
    func lost(_ reason: ClientLinkReason, cause: String, nowMillis: UInt64) -> ClientLinkStatus {
        ClientLinkStatus(state: .reconnecting, reason: reason, node: node, sinceMillis: nowMillis, cause: cause)
    }

    /// A whole round over the nodes failed: the next one is `step.waitMillis` from now;
    /// suspended once the schedule's backoff is spent.
    func roundFailed(_ step: ReconnectSchedule.Step, nowMillis: UInt64) -> ClientLinkStatus {
        var next = self
        next.trying = nil
        next.nextRoundMillis = nowMillis + step.waitMillis
        if step.suspended {
            if state != .suspended { next.reason = .backoffSpent }
            next.state = .suspended
        } else {
            next.state = .reconnecting
            next.reason = .everyNodeFailed
        }
        return next
    }

    /// Given up for good (a final refusal, a failed first join, or closed): aborted for `reason`.
    func ended(_ reason: ClientLinkReason) -> ClientLinkStatus {
        var next = self
        next.state = .aborted
        next.reason = reason
        next.trying = nil
        next.nextRoundMillis = nil
        return next
    }

    static func seconds(_ millis: UInt64) -> String {
        let seconds = millis / 1_000
        return seconds < 120 ? "\(seconds) s" : "\(seconds / 60) min"
    }
}
