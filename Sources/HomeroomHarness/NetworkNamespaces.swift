@preconcurrency import Glibc
import Synchronization

/// Network namespaces for real processes on one machine: one namespace per process,
/// each on a veth pair to a bridge, in a private /24 that exists only inside namespaces
/// this process made. The caller first moves itself into a fresh anonymous namespace
/// (`enterOwnNamespace`, before any other thread starts), which holds the bridge
/// (address PREFIX.1): nothing is added to the machine's own network, and the bridge
/// vanishes with the caller. Namespaces are named `<tag prefix><pid>n<i>`; a later
/// run deletes those whose process is gone.
public final class NetworkNamespaces: Sendable {
    public let prefix: String
    public let tag: String
    private let tagPrefix: String
    /// The namespaces made so far, in node order.
    public var names: [String] { made.withLock { $0 } }
    private let made = Mutex<[String]>([])
    private let ip: String
    private let iptablesRestore: String?

    /// `tagPrefix` names this tool's namespaces (a few letters, for example `hrc`).
    /// Without iptables, `filter` is unavailable and everything else works.
    public init(prefix: String, tagPrefix: String) throws(SpawnError) {
        guard getuid() == 0 else { throw SpawnError("network namespaces need root") }
        guard let ip = Spawn.which("ip") else { throw SpawnError("no `ip` command (apt-get install iproute2)") }
        self.ip = ip
        iptablesRestore = Spawn.which("iptables-restore")
        self.prefix = prefix
        self.tagPrefix = tagPrefix
        tag = "\(tagPrefix)\(getpid())"
    }

    /// Whether `filter` can run (iptables is installed).
    public var canFilter: Bool { iptablesRestore != nil }

    public func name(_ index: Int) -> String { "\(tag)n\(index + 1)" }
    public func host(_ index: Int) -> String { "\(prefix).\(11 + index)" }

    /// Call before any other thread starts (see `Spawn.unshareNetwork`).
    public func enterOwnNamespace() throws(SpawnError) {
        try Spawn.unshareNetwork()
    }

    /// The bridge and `count` namespaces, each with its address and loopback up.
    public func setUp(count: Int) throws(SpawnError) {
        Self.removeStale(ip: ip, tagPrefix: tagPrefix)
        try Spawn.check([ip, "link", "set", "lo", "up"])
        try Spawn.check([ip, "link", "add", "hrbr0", "type", "bridge"])
        try Spawn.check([ip, "addr", "add", "\(prefix).1/24", "dev", "hrbr0"])
        try Spawn.check([ip, "link", "set", "hrbr0", "up"])
        for index in 0..<count {
            let namespace = name(index)
            try Spawn.check([ip, "netns", "add", namespace])
            made.withLock { $0.append(namespace) }
            try Spawn.check([ip, "link", "add", "hrv\(index + 1)", "type", "veth", "peer", "name", "eth0", "netns", namespace])
            try Spawn.check([ip, "link", "set", "hrv\(index + 1)", "master", "hrbr0", "up"])
            try Spawn.check([ip, "-n", namespace, "addr", "add", "\(host(index))/24", "dev", "eth0"])
            try Spawn.check([ip, "-n", namespace, "link", "set", "eth0", "up"])
            try Spawn.check([ip, "-n", namespace, "link", "set", "lo", "up"])
        }
    }

    /// The command line that runs `arguments` in namespace `index` (`ip netns exec`
    /// execs it: the pid started is the program's own).
    public func wrap(_ index: Int, _ arguments: [String]) -> [String] {
        [ip, "netns", "exec", name(index)] + arguments
    }

    /// Replaces the iptables filter table of namespace `index` with `rules`
    /// (iptables-restore input, without the table header and COMMIT).
    public func filter(_ index: Int, rules: String) throws(SpawnError) {
        guard let iptablesRestore else { throw SpawnError("no iptables (apt-get install iptables)") }
        let table = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n" + rules + "COMMIT\n"
        try Spawn.check([ip, "netns", "exec", name(index), iptablesRestore], stdinText: table)
    }

    /// Kills whatever still runs in the namespaces and deletes them and the bridge.
    public func tearDown() {
        let namespaces = made.withLock { list -> [String] in
            defer { list = [] }
            return list
        }
        for (index, namespace) in namespaces.enumerated() {
            // The veth pair goes at once with its bridge end; a deleted namespace (and the
            // end inside it) is only destroyed later by the kernel, and a setup right after
            // would find the old pair's name taken.
            _ = try? Spawn.run([ip, "link", "del", "hrv\(index + 1)"], timeoutMillis: 5_000)
            Self.delete(namespace, ip: ip)
        }
        _ = try? Spawn.run([ip, "link", "del", "hrbr0"], timeoutMillis: 5_000)
    }

    private static func delete(_ namespace: String, ip: String) {
        if let (_, output) = try? Spawn.run([ip, "netns", "pids", namespace], timeoutMillis: 5_000) {
            for line in output.split(separator: "\n") { if let pid = Int32(String(line).trimmingSpaces) { kill(pid, SIGKILL) } }
        }
        _ = try? Spawn.run([ip, "netns", "del", namespace], timeoutMillis: 10_000)
    }

    /// Namespaces of earlier runs whose process is gone (killed with -9, say).
    public static func removeStale(ip: String, tagPrefix: String) {
        guard let directory = opendir("/run/netns") else { return }
        var stale: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            let rest = name.dropFirst(tagPrefix.count)
            guard name.hasPrefix(tagPrefix), let n = rest.firstIndex(of: "n"), let pid = Int32(rest[..<n]) else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { stale.append(name) }
        }
        closedir(directory)
        for name in stale {
            delete(name, ip: ip)
            fputs("removed namespace \(name) left by an earlier run\n", stderr)
        }
    }
}
