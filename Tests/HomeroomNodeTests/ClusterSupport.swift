@preconcurrency import Glibc
import HomeroomCore
import Synchronization
@testable import HomeroomNode

/// Polls `condition` every 20 ms until it holds or `seconds` pass; bounded, never hangs.
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = WallClock.monotonicMillis() + UInt64(seconds * 1000)
    while WallClock.monotonicMillis() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}

/// `eventually` for async tests: sleeps with `Task.sleep`, so the wait holds no thread of
/// the shared pool (a blocking wait there starves the other suites' async tests).
func settles(within seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = WallClock.monotonicMillis() + UInt64(seconds * 1000)
    while WallClock.monotonicMillis() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// A cluster of in-process nodes on loopback (ephemeral ports) or inproc, each
/// seeded with the first node; stops every node it started.
final class TestCluster {
    var nodes: [ClusterNode] = []
    let logger: Logger

    init(size: Int, transport: String = "tcp", label: String, heartbeatMillis: UInt64 = 50,
         configure: (Int, inout NodeConfig) -> Void = { _, _ in }) throws {
        (logger, _) = Logger.capturing(label: label, level: .warning)
        for index in 0..<size {
            try add(name: "\(label)-\(index)", transport: transport, heartbeatMillis: heartbeatMillis) { configure(index, &$0) }
        }
    }

    @discardableResult
    func add(name: String, transport: String = "tcp", heartbeatMillis: UInt64 = 50,
             configure: (inout NodeConfig) -> Void = { _ in }) throws -> ClusterNode {
        let unique = UInt32.random(in: 0...UInt32.max)
        let (listen, publish): (String, String)
        switch transport {
        case "tcp": (listen, publish) = ("tcp://127.0.0.1:0", "tcp://127.0.0.1:0")
        case "ipc": (listen, publish) = ("ipc:///tmp/hr-\(name)-\(unique)-rep.sock", "ipc:///tmp/hr-\(name)-\(unique)-pub.sock")
        default: (listen, publish) = ("inproc://\(name)-rep-\(unique)", "inproc://\(name)-pub-\(unique)")
        }
        var config = NodeConfig(name: name, listen: listen, publish: publish, seeds: nodes.first.map { [$0.listenAddress] } ?? [])
        config.heartbeatMillis = heartbeatMillis
        config.suspectMillis = heartbeatMillis * 6
        config.downMillis = heartbeatMillis * 20
        config.requestTimeoutMillis = 500
        configure(&config)
        let node = try ClusterNode(config: config, logger: logger)
        nodes.append(node)
        return node
    }

    func meshed() -> Bool {
        eventually(10) { nodes.allSatisfy { $0.alivePeers.count == nodes.count - 1 } }
    }

    func converged(room: String, clients: [RoomClient] = []) -> Bool {
        guard let reference = nodes.first?.room(room) else { return false }
        // A client holds the room as its user may see it (without others' peer messages).
        return nodes.allSatisfy { $0.room(room) == reference } && clients.allSatisfy { $0.replica == reference.visible(to: $0.user) }
    }

    func client(_ user: String, _ role: Role, node: Int, room: String, configure: (inout RoomClient.Options) -> Void = { _ in }) -> RoomClient {
        var options = RoomClient.Options()
        options.requestTimeoutMillis = 500
        options.syncIntervalMillis = 100
        configure(&options)
        let endpoints = ([node] + nodes.indices.filter { $0 != node }).map { NodeEndpoint(nodes[$0].listenAddress) }
        return RoomClient(room: room, user: user, role: role, name: user.uppercased(), endpoints: endpoints, options: options, logger: logger)
    }

    deinit {
        for node in nodes {
            node.stop()
            for address in [node.config.listen, node.config.publish] where address.hasPrefix("ipc://") {
                unlink(String(address.dropFirst("ipc://".count)))
            }
        }
    }
}

/// A SUB connection to a node's PUB address, as anyone could open, keeping what it hears.
final class Sniffer: Sendable {
    private final class Log: Sendable {
        let messages = Mutex<[[UInt8]]>([])
    }
    private let subscriber: SPSubscriber
    private let heard = Log()

    init(_ address: String, topic: [UInt8]) throws {
        let heard = self.heard
        subscriber = try SPSubscriber { message in heard.messages.withLock { $0.append(message) } }
        subscriber.subscribe(topic)
        try subscriber.dial(address)
        guard eventually(5, { subscriber.connected == 1 }) else { throw SnifferError(address: address) }
    }

    var messages: [[UInt8]] { heard.messages.withLock { $0 } }
    func close() { subscriber.close() }
}

struct SnifferError: Error, CustomStringConvertible {
    let address: String
    var description: String { "the sniffer did not connect to \(address)" }
}
