import Synchronization

/// The PUB side of SP pub/sub: every message goes to every connected subscriber (SP
/// subscribers filter by topic themselves). A subscriber that reads too slowly loses
/// its oldest unsent messages once `sendQueueMessages` wait for it, as with nng; one that
/// sends anything (SP subscribers never do) is dropped.
public final class SPPublisher: Sendable {
    private let loop: SPLoop
    private let role: PublishRole

    public init(limits: SPLimitsConfig = SPLimitsConfig(), name: String = "hr-pub-loop") throws(TransportError) {
        role = PublishRole()
        loop = try SPLoop(name: name, protocolKind: .pub, limits: limits.limits, role: role)
    }

    deinit { close() }

    @discardableResult
    public func listen(_ url: String) throws(TransportError) -> String {
        try loop.listen(url)
    }

    /// Dials a subscriber that listens (rare; subscribers usually dial).
    public func dial(_ url: String) throws(TransportError) {
        _ = try loop.dial(url)
    }

    /// Publishes `bytes` (topic first) to every subscriber. Never blocks: when the
    /// loop is `maxBacklog` messages behind the publisher, the message is dropped (and
    /// counted in `dropped`), as a full nng send queue drops.
    public func send(_ bytes: [UInt8]) throws(TransportError) {
        guard !loop.isStopping else { throw TransportError(.closed, "publish \(bytes.count) bytes") }
        let role = self.role
        guard role.backlog.add(1, ordering: .relaxed).newValue <= Self.maxBacklog else {
            role.backlog.subtract(1, ordering: .relaxed)
            role.dropped.add(1, ordering: .relaxed)
            return
        }
        loop.post { loop in
            role.backlog.subtract(1, ordering: .relaxed)
            role.broadcast(bytes, loop: loop)
        }
    }

    /// Messages waiting for the loop, at most.
    public static let maxBacklog = 65_536

    public func send(topic: [UInt8], payload: [UInt8]) throws(TransportError) {
        try send(topic + payload)
    }

    /// Calls `handler` (on the socket's loop thread: it must only note the event) each
    /// time a subscriber's connection opens.
    public func whenSubscriberConnects(_ handler: @escaping @Sendable () -> Void) {
        role.onConnect.withLock { $0 = handler }
    }

    /// Subscribers connected now.
    public var subscribers: Int { loop.stats.open.load(ordering: .relaxed) }
    /// Messages a slow subscriber lost.
    public var dropped: Int { role.dropped.load(ordering: .relaxed) }
    var stats: SPLoopStats { loop.stats }

    public func close() { loop.close() }
}

final class PublishRole: SPRole, @unchecked Sendable {
    let dropped = Atomic<Int>(0)
    /// Messages posted to the loop and not yet broadcast.
    let backlog = Atomic<Int>(0)
    let onConnect = Mutex<(@Sendable () -> Void)?>(nil)
    // Loop-confined.
    private var subscribers: [UInt64: SPConnection] = [:]

    func opened(_ c: SPConnection, loop: SPLoop) {
        subscribers[c.id] = c
        onConnect.withLock { $0 }?()
    }

    func received(_ message: [UInt8], on c: SPConnection, loop: SPLoop) { loop.drop(c) }

    func closed(_ c: SPConnection, loop: SPLoop) { subscribers.removeValue(forKey: c.id) }

    func broadcast(_ bytes: [UInt8], loop: SPLoop) {
        for c in subscribers.values where !loop.send(bytes, on: c, dropOldest: true) {
            dropped.add(1, ordering: .relaxed)
        }
    }
}
