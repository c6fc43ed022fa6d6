@preconcurrency import Glibc
import HomeroomHarness
import Synchronization

/// `--netns`: the node children of the idle and writes suites each run in a network
/// namespace of their own (`NetworkNamespaces`), on a bridge in this process's own
/// anonymous namespace, as separate hosts would: every heartbeat, delta and sync crosses
/// a veth pair and a bridge rather than loopback. The benchmark process itself, whose
/// raw clients play the users, sits on the bridge (10.78.0.1).
enum BenchNamespaces {
    static let requested = CommandLine.arguments.contains("--netns")
    static let subnet = "10.78.0"
    /// Said at the start of every row whose nodes are child processes.
    static var whereNodesRun: String { requested ? "nodes in network namespaces on a bridge" : "nodes on loopback" }
    /// The namespaces of the cluster running now (one cluster at a time).
    private static let current = Mutex<NetworkNamespaces?>(nil)

    /// Moves this process into its own network namespace with loopback up, so every
    /// suite still has 127.0.0.1. Call before any other thread starts. Exits 77 when
    /// namespaces cannot be made here.
    static func enter() {
        do throws(SpawnError) {
            let namespaces = try NetworkNamespaces(prefix: subnet, tagPrefix: "hrb")
            try namespaces.enterOwnNamespace()
            try Spawn.check(["ip", "link", "set", "lo", "up"])
        } catch {
            fputs("homeroom-bench: --netns cannot run here: \(error)\n", stderr)
            exit(77)
        }
    }

    /// A namespace for each of `count` nodes (none without `--netns`).
    static func setUp(count: Int) -> Bool {
        guard requested else { return true }
        var made: NetworkNamespaces?
        do throws(SpawnError) {
            let namespaces = try NetworkNamespaces(prefix: subnet, tagPrefix: "hrb")
            made = namespaces
            try namespaces.setUp(count: count)
            current.withLock { $0 = namespaces }
            return true
        } catch {
            fputs("homeroom-bench: cannot set up \(count) network namespaces: \(error)\n", stderr)
            // What was made so far goes too, or the next cluster's setup would find it.
            made?.tearDown()
            return false
        }
    }

    /// The command line for node `index`, and the host it listens on.
    static func place(_ index: Int, _ arguments: [String]) -> (command: [String], host: String) {
        current.withLock { namespaces in
            guard let namespaces else { return (arguments, "127.0.0.1") }
            return (namespaces.wrap(index, arguments), namespaces.host(index))
        }
    }

    static func tearDown() {
        let namespaces = current.withLock { value -> NetworkNamespaces? in
            defer { value = nil }
            return value
        }
        namespaces?.tearDown()
    }
}
