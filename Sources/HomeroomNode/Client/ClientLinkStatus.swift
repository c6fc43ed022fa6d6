import HomeroomSupport

/// What a client's link is doing, told for people: the node it is attached to (or
/// lost), since when, why, and what it tries now. `RoomClient.linkStatus` gives it;
/// the CLI prints it when the link changes and refuses commands with it meanwhile.
public struct ClientLinkStatus: Sendable, Equatable {
    public var state: ClientLinkState
    /// The node attached now (connected), or the one lost (reconnecting, aborted).
    public var node: String?
    /// Wall-clock milliseconds when `state` began.
    public var sinceMillis: UInt64
    /// Why the node was lost.
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

    public init(state: ClientLinkState, node: String? = nil, sinceMillis: UInt64 = 0, cause: String? = nil,
                trying: String? = nil, lastFailure: String? = nil, nextRoundMillis: UInt64? = nil) {
        self.state = state
        self.node = node
        self.sinceMillis = sinceMillis
        self.cause = cause
        self.trying = trying
        self.lastFailure = lastFailure
        self.nextRoundMillis = nextRoundMillis
    }

    /// One line: "connected to tcp://…", or "lost tcp://… 12 s ago (why); trying tcp://…",
    /// or "lost tcp://… 40 s ago (why); every node failed (last: …); next try in 2 s".
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
        case .reconnecting, .aborted:
            var text = node.map { "lost \($0) \(age) ago" } ?? "not connected for \(age)"
            if let cause { text += " (\(cause))" }
            if state == .reconnecting {
                text += "; " + (trying.map { "trying \($0)" } ?? "trying the nodes")
                if let lastFailure, trying != nil { text += " (before: \(lastFailure))" }
            } else {
                text += "; every node failed" + (lastFailure.map { " (last: \($0))" } ?? "")
                if let next = nextRoundMillis {
                    text += next > nowMillis ? "; next try in \(Self.seconds(next - nowMillis))" : "; trying again now"
                }
            }
            return text
        }
    }

    /// The status once attached to `address`: connected since now, remembering the
    /// loss it recovers from (which node, how long, why), if there was one.
    func attached(to address: String, after previous: ClientLinkState, nowMillis: UInt64) -> ClientLinkStatus {
        var next = ClientLinkStatus(state: .connected, node: address, sinceMillis: nowMillis)
        if previous == .reconnecting || previous == .aborted, cause != nil || node != nil {
            next.recoveredFrom = Recovery(node: node, millis: nowMillis >= sinceMillis ? nowMillis - sinceMillis : 0, cause: cause)
        }
        return next
    }

    static func seconds(_ millis: UInt64) -> String {
        let seconds = millis / 1_000
        return seconds < 120 ? "\(seconds) s" : "\(seconds / 60) min"
    }
}
