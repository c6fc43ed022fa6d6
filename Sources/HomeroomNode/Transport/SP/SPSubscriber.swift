import Synchronization

/// The SUB side of SP pub/sub: dials any number of publishers (each dialer reconnects
/// by itself, with back-off) and calls `handler` on its loop thread with every message
/// whose bytes start with a subscribed topic.
public final class SPSubscriber: Sendable {
    private let loop: SPLoop
    private let role: SubscribeRole

    public init(limits: SPLimitsConfig = SPLimitsConfig(), name: String = "hr-sub",
                handler: @escaping @Sendable ([UInt8]) -> Void) throws(TransportError) {
        role = SubscribeRole(handler: handler)
        loop = try SPLoop(name: name, protocolKind: .sub, limits: limits.limits, role: role)
    }

    deinit { close() }

    /// Delivers messages that start with `topic` (an empty topic means all).
    public func subscribe(_ topic: [UInt8]) { role.topics.withLock { if !$0.contains(topic) { $0.append(topic) } } }
    public func subscribe(_ topic: String) { subscribe(Array(topic.utf8)) }
    public func unsubscribe(_ topic: [UInt8]) { role.topics.withLock { $0.removeAll { $0 == topic } } }

    /// Starts dialing a publisher and returns the dialer's id (for `removeDialer`, `redial`).
    @discardableResult
    public func dial(_ url: String) throws(TransportError) -> UInt64 {
        try loop.dial(url)
    }

    /// Listens for publishers that dial in.
    @discardableResult
    public func listen(_ url: String) throws(TransportError) -> String {
        try loop.listen(url)
    }

    public func removeDialer(_ id: UInt64) { loop.removeDialer(id) }
    /// Replaces the dialer's connection with a fresh attempt, unless its TCP is up and it
    /// is exchanging headers, or it is an attempt younger than `youngMillis` still connecting.
    public func redial(_ id: UInt64, keepingAttemptsYoungerThan youngMillis: UInt64 = 0) {
        loop.redial(id, keepingAttemptsYoungerThan: youngMillis)
    }

    /// Messages delivered to the handler.
    public var received: Int { role.delivered.load(ordering: .relaxed) }
    /// Publishers connected now.
    public var connected: Int { loop.stats.open.load(ordering: .relaxed) }
    var stats: SPLoopStats { loop.stats }

    /// Stops the loop (a handler that is running finishes first) and closes everything.
    public func close() { loop.close() }
}

final class SubscribeRole: SPRole, @unchecked Sendable {
    let topics = Mutex<[[UInt8]]>([])
    let delivered = Atomic<Int>(0)
    private let handler: @Sendable ([UInt8]) -> Void

    init(handler: @escaping @Sendable ([UInt8]) -> Void) { self.handler = handler }

    func opened(_ c: SPConnection, loop: SPLoop) {}
    func closed(_ c: SPConnection, loop: SPLoop) {}

    func received(_ message: [UInt8], on c: SPConnection, loop: SPLoop) {
        let wanted = topics.withLock { topics in
            topics.contains { topic in topic.count <= message.count && message.starts(with: topic) }
        }
        guard wanted else { return }
        delivered.add(1, ordering: .relaxed)
        handler(message)
    }
}
