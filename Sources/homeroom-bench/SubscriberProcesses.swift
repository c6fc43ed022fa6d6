@preconcurrency import Glibc
import HomeroomNode
import HomeroomNNG
import Synchronization

/// Subscribers in child processes of their own (`homeroom-bench --subscriber-child`),
/// so a fan-out to 10,000 real subscribers is measured rather than modelled: the nodes'
/// process holds only the nodes, as in production, and each child holds its share of the
/// SUB sockets. A child notes the first arrival of every message at every subscriber
/// (CLOCK_MONOTONIC, which every process on the machine shares, so the parent's send
/// times and the children's arrival times compare), says `ready` once every one of its
/// subscribers got a probe, and writes its arrivals out when the parent asks it to stop.
enum SubscriberProcesses {
    struct Child {
        var pid: pid_t
        var outputPath: String
        var stopPath: String
        var subscribers: Int
    }

    struct Arrivals {
        /// Per arrival, the message index and its monotonic arrival time (ns).
        var arrivals: [(index: UInt64, nanos: UInt64)] = []
        /// Per subscriber (every child's, in order), the distinct messages it got.
        var perSubscriber: [Int] = []
        /// Messages without a marker (not the benchmark's), over every subscriber.
        var others = 0
        var childrenFailed = 0
    }

    // MARK: - Child

    /// `--subscriber-child <url> <topic hex or -> <count> <stop file>`: never returns.
    static func childMain(_ arguments: [String]) -> Never {
        guard arguments.count == 4, let count = Int(arguments[2]), count > 0 else {
            fputs("usage: homeroom-bench --subscriber-child <url> <topic hex or -> <count> <stop file>\n", stderr)
            exit(64)
        }
        let url = arguments[0], stopPath = arguments[3]
        // One descriptor per subscriber, and nng's own: raise the soft limit to the hard one.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = min(limit.rlim_max, 65_536)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let topic = arguments[1] == "-" ? [] : hexBytes(arguments[1])
        let attached = Mutex<Set<Int>>([])
        let seen = Mutex<Set<UInt64>>([])
        let arrivals = Mutex<[(UInt64, UInt64, Int)]>([])
        let marker = MessagingBench.marker
        let others = Atomic<Int>(0)
        let started = monotonicNanos()
        let group: NNGSubscriberGroup
        do {
            group = try NNGSubscriberGroup(count: count, url: url, topic: topic, dialAttempts: 3) { member, bytes in
                let now = monotonicNanos()
                let indexes = MessagingBench.indexes(in: bytes, marker: marker)
                if indexes.isEmpty { others.add(1, ordering: .relaxed) }
                for index in indexes {
                    if index == UInt64.max {
                        let all = attached.withLock { set -> Bool in
                            let before = set.count
                            set.insert(member)
                            return set.count == count && before < count
                        }
                        if all { writeAll(1, "ready\n") }
                        continue
                    }
                    guard index < UInt64(UInt32.max), seen.withLock({ $0.insert(UInt64(member) << 32 | index).inserted }) else { continue }
                    arrivals.withLock { $0.append((index, now, member)) }
                }
            }
        } catch {
            fputs("subscriber child: \(count) subscribers to \(url): \(error) (after \((monotonicNanos() - started) / 1_000_000) ms)\n", stderr)
            exit(1)
        }
        // Bounded: a child whose parent died stops by itself after ten minutes.
        let deadline = monotonicNanos() + 600_000_000_000
        // Progress for the parent (`got <arrivals>`), so it can wait until nothing more comes.
        var reported = 0, turns = 0
        while access(stopPath, F_OK) != 0 && monotonicNanos() < deadline {
            usleep(20_000)
            turns += 1
            if turns % 10 == 0 {
                let got = arrivals.withLock { $0.count }
                if got != reported { writeAll(1, "got \(got)\n"); reported = got }
            }
        }
        withExtendedLifetime(group) {}
        var text = ""
        text.reserveCapacity(1 << 20)
        for (index, nanos, member) in arrivals.withLock({ $0 }) {
            text += "\(index) \(nanos) \(member)\n"
            if text.utf8.count > 1 << 20 { writeAll(1, text); text = "" }
        }
        writeAll(1, text + "others \(others.load(ordering: .relaxed))\ndone\n")
        // Exit without closing the sockets: closing busy SUB sockets can hang in nng 1.5.2 (issue 1543).
        _exit(0)
    }

    // MARK: - Parent

    /// Starts one child per entry (its URL and how many subscribers it holds).
    static func start(_ shares: [(url: String, subscribers: Int)], topic: [UInt8], index first: Int = 0) -> [Child]? {
        let me = CommandLine.arguments[0]
        let base = "/tmp/homeroom-bench-subscribers-\(getpid())"
        var children: [Child] = []
        for (offset, share) in shares.enumerated() {
            let index = first + offset
            let output = "\(base)-\(index).out", stop = "\(base)-\(index).stop"
            unlink(output)
            unlink(stop)
            let arguments = [me, "--subscriber-child", share.url, topic.isEmpty ? "-" : hexString(topic), String(share.subscribers), stop]
            guard let pid = spawn(arguments, stdout: output) else {
                finish(children, timeoutSeconds: 5)
                return nil
            }
            children.append(Child(pid: pid, outputPath: output, stopPath: stop, subscribers: share.subscribers))
        }
        return children
    }

    /// Starts the children one at a time, each once the one before it is ready (every
    /// subscriber of it got a probe): 10,000 subscribers dialling at once wedge a node's
    /// publish loop on this 2-core VM (see docs/PERFORMANCE.md), and this measures the
    /// fan-out, not the connection storm. Nil when one did not start or get ready in time.
    static func startOneByOne(_ shares: [(url: String, subscribers: Int)], topic: [UInt8], timeoutSeconds: Double,
                              probe: () -> Void) -> [Child]? {
        var children: [Child] = []
        for (index, share) in shares.enumerated() {
            guard let started = start([share], topic: topic, index: index) else {
                finish(children, timeoutSeconds: 5)
                return nil
            }
            children += started
            // A probe reaches every subscriber started so far: a few a second, or probes alone
            // would keep the publishers busy.
            guard waitReady(started, timeoutSeconds: timeoutSeconds, probeEveryMillis: 250, probe: probe) else {
                fputs("subscriber processes: child \(index + 1) of \(shares.count) (\(share.url)) not ready\n", stderr)
                finish(children, timeoutSeconds: 5)
                return nil
            }
        }
        return children
    }

    /// Whether every child said `ready` (each of its subscribers got a probe) in time;
    /// `probe` is called every `probeEveryMillis` meanwhile.
    static func waitReady(_ children: [Child], timeoutSeconds: Double, probeEveryMillis: UInt32 = 20, probe: () -> Void) -> Bool {
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        while monotonicNanos() < deadline {
            if children.allSatisfy({ (readFile($0.outputPath) ?? "").contains("ready") }) { return true }
            probe()
            usleep(probeEveryMillis * 1_000)
        }
        let waiting = children.filter { !(readFile($0.outputPath) ?? "").contains("ready") }
        fputs("subscriber processes: \(waiting.count) of \(children.count) not ready after \(Int(timeoutSeconds)) s "
              + "(\(waiting.map { "pid \($0.pid), \($0.subscribers) subscribers" }.joined(separator: "; ")))\n", stderr)
        return false
    }

    /// Deliveries noted so far by all children (their latest `got` lines).
    static func progress(_ children: [Child]) -> Int {
        children.reduce(0) { total, child in
            let text = readFile(child.outputPath) ?? ""
            guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("got ") }) else { return total }
            return total + (Int(line.dropFirst(4)) ?? 0)
        }
    }

    /// Waits until the children have `expected` deliveries, or none came for `quietSeconds`,
    /// or `maxSeconds` passed; returns the seconds waited.
    @discardableResult
    static func drain(_ children: [Child], expected: Int, quietSeconds: Double = 2, maxSeconds: Double = 60) -> Double {
        let start = monotonicNanos()
        var last = -1, lastChange = start
        while true {
            let now = monotonicNanos()
            let got = progress(children)
            if got != last { last = got; lastChange = now }
            if got >= expected || Double(now - lastChange) / 1e9 >= quietSeconds || Double(now - start) / 1e9 >= maxSeconds { break }
            usleep(100_000)
        }
        return Double(monotonicNanos() - start) / 1e9
    }

    /// Asks every child to stop, waits for it (bounded, then SIGKILL), and reads its arrivals.
    @discardableResult
    static func finish(_ children: [Child], timeoutSeconds: Double = 60) -> Arrivals {
        var result = Arrivals()
        for child in children { close(open(child.stopPath, O_WRONLY | O_CREAT, 0o644)) }
        let deadline = monotonicNanos() + UInt64(timeoutSeconds * 1e9)
        for child in children {
            let exited = waitOrKill(child.pid, deadlineNanos: deadline)
            let text = readFile(child.outputPath) ?? ""
            if !exited || !text.hasSuffix("done\n") { result.childrenFailed += 1 }
            var counts = [Int](repeating: 0, count: child.subscribers)
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.count == 2, parts[0] == "others", let others = Int(parts[1]) { result.others += others; continue }
                guard parts.count == 3, let index = UInt64(parts[0]), let nanos = UInt64(parts[1]), let member = Int(parts[2]) else { continue }
                result.arrivals.append((index, nanos))
                if member >= 0 && member < counts.count { counts[member] += 1 }
            }
            result.perSubscriber += counts
            unlink(child.outputPath)
            unlink(child.stopPath)
        }
        return result
    }

    // MARK: - Helpers

    /// Waits for the child to exit until the deadline (monotonic ns), then kills it; true
    /// when it exited by itself. Shared by every kind of benchmark child.
    @discardableResult
    static func waitOrKill(_ pid: pid_t, deadlineNanos: UInt64) -> Bool {
        var status: Int32 = 0
        while monotonicNanos() < deadlineNanos {
            if waitpid(pid, &status, WNOHANG) == pid { return true }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
        return false
    }

    /// posix_spawn (never fork: nng runs in this process), stdout to a file.
    static func spawn(_ arguments: [String], stdout path: String) -> pid_t? {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        return posix_spawn(&pid, arguments[0], &actions, nil, argv, environ) == 0 ? pid : nil
    }

    static func writeAll(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { return }
            offset += written
        }
        bytes.removeAll()
    }

    static func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] }, as: UTF8.self)
    }

    static func hexBytes(_ text: String) -> [UInt8] {
        let utf8 = Array(text.utf8)
        func value(_ c: UInt8) -> UInt8 { c >= 0x61 ? c - 0x61 + 10 : c - 0x30 }
        return stride(from: 0, to: utf8.count - 1, by: 2).map { value(utf8[$0]) << 4 | value(utf8[$0 + 1]) }
    }
}
