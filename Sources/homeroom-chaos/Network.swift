@preconcurrency import Glibc

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

/// One node per network namespace, on a bridge, in a private /24 that exists only
/// inside namespaces this run made. The harness itself moves into a fresh anonymous
/// namespace that holds the bridge (address PREFIX.1), so nothing is added to the
/// machine's own network, and the bridge vanishes with the harness. Node namespaces
/// are named `hrc<pid>n<i>`; a later run deletes those whose harness is gone.
final class NetnsNetwork: ChaosNetwork {
    let kind = "netns"
    let cutsLinks = true
    let prefix: String
    let tag: String
    private(set) var namespaces: [String] = []
    private let ip: String
    private let iptablesRestore: String

    init(prefix: String) throws(SpawnError) {
        guard getuid() == 0 else { throw SpawnError("network namespaces need root") }
        guard let ip = Spawn.which("ip") else { throw SpawnError("no `ip` command (apt-get install iproute2)") }
        guard let restore = Spawn.which("iptables-restore") else { throw SpawnError("no iptables (apt-get install iptables)") }
        self.ip = ip
        self.iptablesRestore = restore
        self.prefix = prefix
        self.tag = "hrc\(getpid())"
    }

    func namespace(_ index: Int) -> String { "\(tag)n\(index + 1)" }
    func host(_ index: Int) -> String { "\(prefix).\(11 + index)" }
    func port(_ index: Int, _ offset: Int) -> Int { [7100, 7101, 9100][offset] }
    var description: String { "netns: \(namespaces.count) namespaces \(tag)n*, bridge in the harness's own namespace, \(prefix).0/24" }

    /// Call before any other thread starts (see `Spawn.unshareNetwork`).
    func enterOwnNamespace() throws(SpawnError) {
        try Spawn.unshareNetwork()
    }

    func setUp(nodes: Int) throws(SpawnError) {
        Self.removeStale(ip: ip)
        try Spawn.check([ip, "link", "set", "lo", "up"])
        try Spawn.check([ip, "link", "add", "hrbr0", "type", "bridge"])
        try Spawn.check([ip, "addr", "add", "\(prefix).1/24", "dev", "hrbr0"])
        try Spawn.check([ip, "link", "set", "hrbr0", "up"])
        for index in 0..<nodes {
            let name = namespace(index)
            try Spawn.check([ip, "netns", "add", name])
            namespaces.append(name)
            try Spawn.check([ip, "link", "add", "hrv\(index + 1)", "type", "veth", "peer", "name", "eth0", "netns", name])
            try Spawn.check([ip, "link", "set", "hrv\(index + 1)", "master", "hrbr0", "up"])
            try Spawn.check([ip, "-n", name, "addr", "add", "\(host(index))/24", "dev", "eth0"])
            try Spawn.check([ip, "-n", name, "link", "set", "eth0", "up"])
            try Spawn.check([ip, "-n", name, "link", "set", "lo", "up"])
        }
        try apply(cuts: Array(repeating: [], count: nodes), lossPercent: 0)
    }

    func wrap(_ index: Int, _ arguments: [String]) -> [String] {
        [ip, "netns", "exec", namespace(index)] + arguments
    }

    func apply(cuts: [Set<Int>], lossPercent: Int) throws(SpawnError) {
        for (index, name) in namespaces.enumerated() {
            var rules = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n"
            for peer in (index < cuts.count ? cuts[index] : []).sorted() {
                rules += "-A INPUT -s \(host(peer))/32 -j DROP\n"
            }
            if lossPercent > 0 {
                // Cluster links only: the harness (PREFIX.1) is the clients' side.
                let probability = Double(lossPercent) / 100
                rules += "-A INPUT -s \(prefix).1/32 -j ACCEPT\n"
                rules += "-A INPUT -s \(prefix).0/24 -m statistic --mode random --probability \(probability) -j DROP\n"
            }
            rules += "COMMIT\n"
            try Spawn.check([ip, "netns", "exec", name, iptablesRestore], stdinText: rules)
        }
    }

    func tearDown() {
        for name in namespaces {
            if let (_, output) = try? Spawn.run([ip, "netns", "pids", name], timeoutMillis: 5_000) {
                for line in output.split(separator: "\n") { if let pid = Int32(String(line).trimmingSpaces) { kill(pid, SIGKILL) } }
            }
            _ = try? Spawn.run([ip, "netns", "del", name], timeoutMillis: 10_000)
        }
        namespaces = []
        _ = try? Spawn.run([ip, "link", "del", "hrbr0"], timeoutMillis: 5_000)
    }

    /// Namespaces of earlier runs whose harness is gone (killed with -9, say).
    static func removeStale(ip: String) {
        guard let directory = opendir("/run/netns") else { return }
        var stale: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard name.hasPrefix("hrc"), let n = name.dropFirst(3).firstIndex(of: "n"),
                  let pid = Int32(name.dropFirst(3)[..<n]) else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(name) }
        }
        closedir(directory)
        for name in stale {
            if let (_, output) = try? Spawn.run([ip, "netns", "pids", name], timeoutMillis: 5_000) {
                for line in output.split(separator: "\n") { if let pid = Int32(String(line).trimmingSpaces) { kill(pid, SIGKILL) } }
            }
            _ = try? Spawn.run([ip, "netns", "del", name], timeoutMillis: 10_000)
            say("removed namespace \(name) left by an earlier run")
        }
    }
}
