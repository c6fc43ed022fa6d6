@preconcurrency import Glibc
import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Nodes in child processes of their own (`homeroom-bench --node-child`), so a node's
/// CPU time is read from the kernel for that node alone (/proc/<pid>/stat), as an
/// operator would read it, and nothing else in the benchmark weighs on it.
///
/// A child starts one node on loopback, or with `--netns` in a network namespace of its
/// own (the given seeds), creates `rooms` rooms if asked
/// (one teacher joins each, in process), writes `ready <listen address>` to its stdout file, and then once a second its
/// counters (`metric <name> <value>`), until its stop file appears.
enum NodeProcesses {
    struct Child {
        var pid: pid_t
        var outputPath: String
        var stopPath: String
        var address = ""
    }

    // MARK: - Child

    /// `--node-child <rooms> <seeds, comma-separated, or -> <stop file> [replicas [host]]`: never returns.
    static func childMain(_ arguments: [String]) -> Never {
        guard (3...5).contains(arguments.count), let rooms = Int(arguments[0]), rooms >= 0,
              let replicas = arguments.count >= 4 ? Int(arguments[3]) : 0, replicas >= 0 else {
            fputs("usage: homeroom-bench --node-child <rooms> <seeds or -> <stop file> [replicas [host]]\n", stderr)
            exit(64)
        }
        let seeds = arguments[1] == "-" ? [] : arguments[1].split(separator: ",").map(String.init)
        let stopPath = arguments[2]
        let host = arguments.count == 5 ? arguments[4] : "127.0.0.1"
        var config = NodeConfig(name: "idle-\(getpid())", listen: "tcp://\(host):0", publish: "tcp://\(host):0", seeds: seeds)
        config.joinsPerSecond = 1_000_000
        config.roomCreationsPerSecond = 1_000_000
        config.writesPerSecond = 1_000_000
        config.writeBytesPerSecond = 1 << 40
        config.maxRooms = max(config.maxRooms, rooms + 1)
        config.replicas = replicas
        // The benchmarks' raw clients join and never sync: no lease would be renewed, and
        // their expiry (a write per room 10 s after the joins) would fall in the window.
        config.sessionTimeoutMillis = 0
        let node: ClusterNode
        do {
            node = try ClusterNode(config: config, logger: Logger(label: "bench-node", level: .error))
        } catch {
            fputs("node child: \(error)\n", stderr)
            exit(1)
        }
        for index in 0..<rooms {
            _ = node.join(room: roomName(index), user: "teacher", role: .teacher, session: "s\(index)", name: "Teacher")
        }
        SubscriberProcesses.writeAll(1, "ready \(node.listenAddress)\n")
        // Bounded: a child whose parent died stops by itself after an hour.
        let deadline = monotonicNanos() + 3_600_000_000_000
        while access(stopPath, F_OK) != 0 && monotonicNanos() < deadline {
            let metrics = node.metrics.snapshot
            let lines = ["heartbeat_bytes_total", "sync_bytes_total", "reply_bytes_total", "peers_declared_down_total", "gossip_view_mismatches_total",
                         "writes_accepted_total", "deltas_in_total"]
                .map { "metric \($0) \(metrics[$0] ?? 0)\n" }.joined()
            SubscriberProcesses.writeAll(1, lines)
            for _ in 0..<50 where access(stopPath, F_OK) != 0 { usleep(20_000) }
        }
        node.stop()
        SubscriberProcesses.writeAll(1, "done\n")
        _exit(0)
    }

    static func roomName(_ index: Int) -> String { "idle-room-\(index)" }

    // MARK: - Parent

    /// Starts `count` node children one after another, each seeded with the ones before
    /// it; the first creates `rooms` rooms. Nil (and every child stopped) when one did not
    /// get ready within 60 s.
    static func start(count: Int, rooms: Int, replicas: Int = 0) -> [Child]? {
        // With --netns, each child in a namespace of its own (BenchNamespaces).
        guard BenchNamespaces.setUp(count: count) else { return nil }
        let me = CommandLine.arguments[0]
        let base = "/tmp/homeroom-bench-nodes-\(getpid())"
        var children: [Child] = []
        for index in 0..<count {
            let output = "\(base)-\(index).out", stop = "\(base)-\(index).stop"
            unlink(output)
            unlink(stop)
            let seeds = children.isEmpty ? "-" : children.map(\.address).joined(separator: ",")
            let (command, host) = BenchNamespaces.place(index, [me, "--node-child", String(index == 0 ? rooms : 0), seeds, stop, String(replicas)])
            guard let pid = SubscriberProcesses.spawn(command + [host], stdout: output) else {
                finish(children)
                return nil
            }
            var child = Child(pid: pid, outputPath: output, stopPath: stop)
            let deadline = monotonicNanos() + 60_000_000_000
            while monotonicNanos() < deadline, child.address.isEmpty {
                let text = SubscriberProcesses.readFile(output) ?? ""
                if let line = text.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }) { child.address = String(line.dropFirst(6)) }
                usleep(20_000)
            }
            children.append(child)
            if child.address.isEmpty {
                fputs("node processes: node \(index) (pid \(pid)) did not get ready within 60 s\n", stderr)
                finish(children)
                return nil
            }
        }
        return children
    }

    /// The child's CPU time so far (user + system), in seconds.
    static func cpuSeconds(_ pid: pid_t) -> Double? {
        guard let text = SubscriberProcesses.readFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return nil }
        // After the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The child's last reported counter `name`.
    static func metric(_ child: Child, _ name: String) -> UInt64 {
        let text = SubscriberProcesses.readFile(child.outputPath) ?? ""
        let prefix = "metric \(name) "
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix(prefix) }) else { return 0 }
        return UInt64(line.dropFirst(prefix.count)) ?? 0
    }

    /// Asks every child to stop and waits for it (bounded, then SIGKILL).
    static func finish(_ children: [Child], timeoutSeconds: Double = 20) {
        for child in children { close(open(child.stopPath, O_WRONLY | O_CREAT, 0o644)) }
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        for child in children {
            SubscriberProcesses.waitOrKill(child.pid, deadlineNanos: deadline)
            unlink(child.outputPath)
            unlink(child.stopPath)
        }
        BenchNamespaces.tearDown()
    }
}
