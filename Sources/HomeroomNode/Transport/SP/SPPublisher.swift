import Synchronization

/// What a WebSocket subscriber follows, from its request path, or why it may not
/// connect (the reason goes back in an HTTP 404).
public typealias SPStreamRouter = @Sendable (_ resource: String) -> Result<SPStreamFollow, SPStreamRefusal>

public enum SPStreamFollow: Sendable, Equatable {
    /// The messages published under exactly these topics.
    case topics([[UInt8]])
    /// A node named `name`: the messages published to every node or to it by name.
    case node(name: String)
}

public struct SPStreamRefusal: Error, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// The PUB side of SP pub/sub. A subscriber over SP/TCP (or IPC, inproc) gets every
/// message (SP subscribers filter by topic themselves). With a `router`, the TCP
/// listeners also take SP over WebSocket, and such a subscriber gets only the messages
/// published under the topics its request path names: the publisher filters, so a
/// connection costs what it follows. A subscriber that reads too slowly loses its oldest
/// unsent messages once `sendQueueMessages` wait for it, as with nng; one that sends
/// anything (SP subscribers never do) is dropped.
public final class SPPublisher: Sendable {
    private let loop: SPLoop
    private let role: PublishRole

    public init(limits: SPLimitsConfig = SPLimitsConfig(), name: String = "hr-pub-loop", router: SPStreamRouter? = nil) throws(TransportError) {
        role = PublishRole(router: router)
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
        try send(bytes, topic: nil, nodes: .none)
    }

    /// Which node streams a message goes to.
    public enum NodeAudience: Sendable {
        case none, all
        case named(Set<String>)
    }

    /// Publishes `bytes` to every SP/TCP subscriber, to the WebSocket subscribers that
    /// follow `topic` (exactly, not as a prefix), and to the node streams in `nodes`.
    private func send(_ bytes: [UInt8], topic: [UInt8]?, nodes: NodeAudience) throws(TransportError) {
        guard !loop.isStopping else { throw TransportError(.closed, "publish \(bytes.count) bytes") }
        let role = self.role
        guard role.backlog.add(1, ordering: .relaxed).newValue <= Self.maxBacklog else {
            role.backlog.subtract(1, ordering: .relaxed)
            role.dropped.add(1, ordering: .relaxed)
            return
        }
        loop.post { loop in
            role.backlog.subtract(1, ordering: .relaxed)
            role.broadcast(bytes, topic: topic, nodes: nodes, loop: loop)
        }
    }

    /// Messages waiting for the loop, at most.
    public static let maxBacklog = 65_536

    public func send(topic: [UInt8], payload: [UInt8]) throws(TransportError) {
        try send(topic + payload, topic: topic, nodes: .none)
    }

    /// Publishes node-to-node traffic: to every SP/TCP subscriber, and to the node streams
    /// of `nodes` (by name).
    public func send(topic: [UInt8], payload: [UInt8], nodes: NodeAudience) throws(TransportError) {
        try send(topic + payload, topic: nil, nodes: nodes)
    }

    /// Calls `handler` (on the socket's loop thread: it must only note the event) each
    /// time a subscriber's connection opens.
    public func whenSubscriberConnects(_ handler: @escaping @Sendable () -> Void) {
        role.onConnect.withLock { $0 = handler }
    }

    /// Subscribers connected now (both kinds).
    public var subscribers: Int { loop.stats.open.load(ordering: .relaxed) }
    /// WebSocket subscribers connected now.
    public var streamSubscribers: Int { role.streamCount.load(ordering: .relaxed) }
    /// Messages a slow subscriber lost.
    public var dropped: Int { role.dropped.load(ordering: .relaxed) }
    var stats: SPLoopStats { loop.stats }

    public func close() { loop.close() }
}

final class PublishRole: SPRole, @unchecked Sendable {
    let dropped = Atomic<Int>(0)
    /// Messages posted to the loop and not yet broadcast.
    let backlog = Atomic<Int>(0)
    let streamCount = Atomic<Int>(0)
    let onConnect = Mutex<(@Sendable () -> Void)?>(nil)
    private let router: SPStreamRouter?
    // Loop-confined.
    /// SP/TCP subscribers: every message.
    private var subscribers: [UInt64: SPConnection] = [:]
    /// WebSocket subscribers by the topics they follow.
    private var followers: [[UInt8]: [UInt64: SPConnection]] = [:]
    private var following: [UInt64: [[UInt8]]] = [:]
    /// Node streams, by node name.
    private var nodes: [String: [UInt64: SPConnection]] = [:]
    private var nodeNames: [UInt64: String] = [:]

    init(router: SPStreamRouter? = nil) { self.router = router }

    var servesWebSocket: Bool { router != nil }

    func refusal(resource: String) -> String? {
        guard let router else { return "this socket serves no streams" }
        if case .failure(let refusal) = router(resource) { return refusal.reason }
        return nil
    }

    func opened(_ c: SPConnection, loop: SPLoop) {
        if c.framing == .websocket, let resource = c.resource, let router, case .success(let follow) = router(resource) {
            switch follow {
            case .topics(let topics):
                following[c.id] = topics
                for topic in topics { followers[topic, default: [:]][c.id] = c }
            case .node(let name):
                following[c.id] = []
                nodeNames[c.id] = name
                nodes[name, default: [:]][c.id] = c
            }
            streamCount.add(1, ordering: .relaxed)
        } else if c.framing == .websocket {
            loop.drop(c)
            return
        } else {
            subscribers[c.id] = c
        }
        onConnect.withLock { $0 }?()
    }

    func received(_ message: [UInt8], on c: SPConnection, loop: SPLoop) { loop.drop(c) }

    func closed(_ c: SPConnection, loop: SPLoop) {
        subscribers.removeValue(forKey: c.id)
        guard let topics = following.removeValue(forKey: c.id) else { return }
        streamCount.subtract(1, ordering: .relaxed)
        if let name = nodeNames.removeValue(forKey: c.id) {
            nodes[name]?.removeValue(forKey: c.id)
            if nodes[name]?.isEmpty == true { nodes.removeValue(forKey: name) }
        }
        for topic in topics {
            followers[topic]?.removeValue(forKey: c.id)
            if followers[topic]?.isEmpty == true { followers.removeValue(forKey: topic) }
        }
    }

    func broadcast(_ bytes: [UInt8], topic: [UInt8]?, nodes audience: SPPublisher.NodeAudience, loop: SPLoop) {
        // One frame per framing for every subscriber: prefix and body shared, not copied.
        var tcpFrame: SPOutFrame?, ipcFrame: SPOutFrame?
        for c in subscribers.values {
            let frame: SPOutFrame
            if c.framing == .ipc {
                frame = ipcFrame ?? SPOutFrame(prefix: SPFraming.ipc.prefix(length: bytes.count), body: bytes)
                ipcFrame = frame
            } else {
                frame = tcpFrame ?? SPOutFrame(prefix: SPFraming.tcp.prefix(length: bytes.count), body: bytes)
                tcpFrame = frame
            }
            if !loop.send(frame: frame, on: c, dropOldest: true) { dropped.add(1, ordering: .relaxed) }
        }
        var streams: [SPConnection] = []
        if let topic, let followers = followers[topic] { streams += followers.values }
        switch audience {
        case .none: break
        case .all: for group in nodes.values { streams += group.values }
        case .named(let names): for name in names { if let group = nodes[name] { streams += group.values } }
        }
        guard !streams.isEmpty else { return }
        // One frame for every stream: its header and body are shared, not copied.
        let frame = SPWebSocket.message(bytes, masked: false)
        for c in streams where !loop.send(frame: frame, on: c, dropOldest: true) {
            dropped.add(1, ordering: .relaxed)
        }
    }
}
