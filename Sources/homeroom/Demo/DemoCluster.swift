@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport

/// The demo's cluster: in-process nodes on loopback (ephemeral tcp ports on 127.0.0.1)
/// or ipc sockets in /tmp, never any other address. Stops every node it started.
final class DemoCluster: Sendable {
    let transport: String
    let logger: Logger
    private let running = Mutex<[ClusterNode]>([])
    private let everStarted = Mutex<[ClusterNode]>([])

    init(size: Int, transport: String, logger: Logger) throws(NodeError) {
        self.transport = transport
        self.logger = logger
        for index in 1...size { try add(name: "demo-\(index)") }
    }

    @discardableResult
    func add(name: String) throws(NodeError) -> ClusterNode {
        let (listen, publish): (String, String)
        if transport == "ipc" {
            let base = "/tmp/homeroom-demo-\(getpid())-\(name)"
            (listen, publish) = ("ipc://\(base)-rep.sock", "ipc://\(base)-pub.sock")
        } else {
            (listen, publish) = ("tcp://127.0.0.1:0", "tcp://127.0.0.1:0")
        }
        let seeds = running.withLock { $0.first.map { [$0.listenAddress] } ?? [] }
        var config = NodeConfig(name: name, listen: listen, publish: publish, seeds: seeds)
        config.heartbeatMillis = 100
        config.suspectMillis = 500
        config.downMillis = 1_500
        config.requestTimeoutMillis = 400
        let node = try ClusterNode(config: config, logger: logger)
        running.withLock { $0.append(node) }
        everStarted.withLock { $0.append(node) }
        return node
    }

    var nodes: [ClusterNode] { running.withLock { $0 } }
    var addresses: [String] { nodes.map(\.listenAddress) }

    /// Stops one node (as if it crashed or was shut down) and forgets it.
    func stop(_ node: ClusterNode) {
        running.withLock { $0.removeAll { $0 === node } }
        node.stop()
    }

    /// Every running node sees every other as alive.
    func meshed() -> Bool {
        let nodes = self.nodes
        return nodes.allSatisfy { $0.alivePeers.count >= nodes.count - 1 }
    }

    /// The room on every running node, identical? Returns the reference copy when so.
    func agreedRoom(_ room: String) -> RoomState? {
        let copies = nodes.map { $0.room(room) }
        guard let first = copies.first, let reference = first else { return nil }
        return copies.allSatisfy { $0 == reference } ? reference : nil
    }

    func stopAll() {
        let all = everStarted.withLock { $0 }
        running.withLock { $0.removeAll() }
        for node in all {
            node.stop()
            for address in [node.config.listen, node.config.publish] where address.hasPrefix("ipc://") {
                unlink(String(address.dropFirst("ipc://".count)))
            }
        }
    }

    deinit { stopAll() }
}

/// Polls `condition` every 20 ms until it holds or `millis` pass (or the demo is cancelled).
func waitUntil(millis: UInt64, cancelled: () -> Bool = { false }, _ condition: () -> Bool) -> Bool {
    let deadline = WallClock.monotonicMillis() + millis
    while WallClock.monotonicMillis() < deadline {
        if condition() { return true }
        if cancelled() { return false }
        usleep(20_000)
    }
    return condition()
}
