@preconcurrency import Glibc
import HomeroomHarness

/// Where the nodes live and how links between them are cut.
protocol ChaosNetwork: AnyObject {
    var kind: String { get }
    /// Partitions of any shape and packet loss on chosen links (netns + iptables).
    /// Without it only whole-node isolation (the node's SIGUSR1 hook) is possible.
    var cutsLinks: Bool { get }
    func host(_ index: Int) -> String
    func port(_ index: Int, _ offset: Int) -> Int
    func setUp(nodes: Int) throws(SpawnError)
    /// The command line that runs `arguments` where node `index` lives.
    func wrap(_ index: Int, _ arguments: [String]) -> [String]
    /// Node i drops every packet from the nodes in cuts[i], and `lossPercent` of the
    /// rest of its cluster traffic. Empty cuts and 0 heal everything.
    func apply(cuts: [Set<Int>], lossPercent: Int) throws(SpawnError)
    func tearDown()
    var description: String { get }
}

/// Nodes on 127.0.0.1 ports.
final class LoopbackNetwork: ChaosNetwork {
    let kind = "loopback"
    let cutsLinks = false
    let basePort: Int

    init(basePort: Int) { self.basePort = basePort }

    func host(_ index: Int) -> String { "127.0.0.1" }
    func port(_ index: Int, _ offset: Int) -> Int { basePort + 10 * index + offset }
    func setUp(nodes: Int) throws(SpawnError) {}
    func wrap(_ index: Int, _ arguments: [String]) -> [String] { arguments }
    func apply(cuts: [Set<Int>], lossPercent: Int) throws(SpawnError) {
        if cuts.contains(where: { !$0.isEmpty }) || lossPercent > 0 {
            throw SpawnError("loopback mode cannot cut single links or drop packets: use --netns")
        }
    }
    func tearDown() {}
    var description: String { "loopback 127.0.0.1, ports \(basePort)+" }

    /// A base port whose whole range (nodes x 10) is free right now.
    static func freeBasePort(nodes: Int, seed: UInt64) -> Int {
        var candidate = 20_000 + Int(seed % 2_000) * 10
        for _ in 0..<200 {
            if (0..<(nodes * 10)).allSatisfy({ isFree(candidate + $0) }) { return candidate }
            candidate = 20_000 + (candidate - 20_000 + 997 * 10) % 30_000
        }
        return candidate
    }

    static func isFree(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// One node per network namespace (`NetworkNamespaces`: a bridge in the harness's own
/// anonymous namespace, a private /24); links are cut and packets dropped with iptables
/// in the nodes' namespaces.
final class NetnsNetwork: ChaosNetwork {
    let kind = "netns"
    let cutsLinks = true
    private let namespaces: NetworkNamespaces

    init(prefix: String) throws(SpawnError) {
        namespaces = try NetworkNamespaces(prefix: prefix, tagPrefix: "hrc")
        guard namespaces.canFilter else { throw SpawnError("no iptables (apt-get install iptables)") }
    }

    var names: [String] { namespaces.names }
    func host(_ index: Int) -> String { namespaces.host(index) }
    func port(_ index: Int, _ offset: Int) -> Int { [7100, 7101, 9100][offset] }
    var description: String { "netns: \(namespaces.names.count) namespaces \(namespaces.tag)n*, bridge in the harness's own namespace, \(namespaces.prefix).0/24" }

    /// Call before any other thread starts (see `Spawn.unshareNetwork`).
    func enterOwnNamespace() throws(SpawnError) {
        try namespaces.enterOwnNamespace()
    }

    func setUp(nodes: Int) throws(SpawnError) {
        try namespaces.setUp(count: nodes)
        try apply(cuts: Array(repeating: [], count: nodes), lossPercent: 0)
    }

    func wrap(_ index: Int, _ arguments: [String]) -> [String] { namespaces.wrap(index, arguments) }

    func apply(cuts: [Set<Int>], lossPercent: Int) throws(SpawnError) {
        for index in namespaces.names.indices {
            var rules = ""
            for peer in (index < cuts.count ? cuts[index] : []).sorted() {
                rules += "-A INPUT -s \(host(peer))/32 -j DROP\n"
            }
            if lossPercent > 0 {
                // Cluster links only: the harness (PREFIX.1) is the clients' side.
                let probability = Double(lossPercent) / 100
                rules += "-A INPUT -s \(namespaces.prefix).1/32 -j ACCEPT\n"
                rules += "-A INPUT -s \(namespaces.prefix).0/24 -m statistic --mode random --probability \(probability) -j DROP\n"
            }
            try namespaces.filter(index, rules: rules)
        }
    }

    func tearDown() { namespaces.tearDown() }
}
