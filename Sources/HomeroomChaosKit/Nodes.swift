@preconcurrency import Glibc
import HomeroomHarness

/// One `homeroom node` of the cluster across its restarts: same name, addresses and
/// data directory, so a restart is the same replica coming back.
final class NodeHandle {
    let index: Int
    let name: String
    let listen: String
    let publish: String
    let httpHost: String
    let httpPort: Int
    let dataDirectory: String
    let logPath: String
    let outPath: String
    let pidPath: String
    private(set) var pid: Int32?
    private(set) var paused = false
    /// Fault flags of the running incarnation (clock skew, drop, delay).
    private(set) var faultFlags: [String] = []
    private(set) var starts = 0
    private(set) var replica = ""
    /// Exits nobody asked for: (time, how).
    private(set) var unexpectedExits: [String] = []
    /// Asked to drain: it stops by itself once its rooms are handed off, and that exit is expected.
    var draining = false

    /// `name` defaults to `n<index + 1>`; the join fault's newcomer has one of its own.
    init(index: Int, network: ChaosNetwork, runDirectory: String, name: String? = nil) {
        self.index = index
        let name = name ?? "n\(index + 1)"
        self.name = name
        let host = network.host(index)
        listen = "tcp://\(host):\(network.port(index, 0))"
        publish = "tcp://\(host):\(network.port(index, 1))"
        httpHost = host
        httpPort = network.port(index, 2)
        dataDirectory = "\(runDirectory)/\(name)/data"
        logPath = "\(runDirectory)/\(name)/node.log"
        outPath = "\(runDirectory)/\(name)/stdout"
        pidPath = "\(runDirectory)/\(name)/pid"
        tokenPath = "\(runDirectory)/\(name)/http.token"
        operatorToken = String((0..<64).map { _ in "0123456789abcdef".randomElement()! })
    }

    /// The node's operator token (`--http-token-file`): the harness reaches its HTTP
    /// address from outside the node's namespace, where POST /drain needs it.
    let tokenPath: String
    let operatorToken: String

    var isRunning: Bool { pid != nil }

    /// Starts the node and waits (bounded) for its ready line.
    func start(binary: String, seeds: [String], network: ChaosNetwork, heartbeatMillis: UInt64?, faultFlags: [String] = []) throws(SpawnError) {
        precondition(pid == nil, "\(name) is already running")
        _ = makeDirectories(dataDirectory)
        writeFile(outPath, "")
        _ = writeFile(tokenPath, operatorToken + "\n")
        chmod(tokenPath, 0o600)
        var arguments = [binary, "node", "--name", name, "--listen", listen, "--publish", publish,
                         "--data-dir", dataDirectory, "--http", "http://\(httpHost):\(httpPort)", "--http-token-file", tokenPath, "--log-level", "info"]
        for seed in seeds { arguments += ["--seed", seed] }
        if let heartbeatMillis {
            arguments += ["--heartbeat-ms", "\(heartbeatMillis)", "--suspect-ms", "\(heartbeatMillis * 5)", "--down-ms", "\(heartbeatMillis * 10)"]
        }
        arguments += faultFlags
        starts += 1
        appendLine(logPath, "==== homeroom-chaos: start #\(starts) at \(Clock.now) ms: \(arguments.dropFirst().joined(separator: " "))")
        let started = try Spawn.start(network.wrap(index, arguments), stdout: outPath, stderr: logPath, label: "node \(name)")
        pid = started
        paused = false
        self.faultFlags = faultFlags
        writeFile(pidPath, "\(started)\n")
        let deadline = Clock.now + 20_000
        while Clock.now < deadline {
            if let text = readFile(outPath), let line = text.split(separator: "\n").first(where: { $0.contains("\"event\":\"ready\"") }) {
                if let range = line.firstRange(of: "\"replica\":\"") {
                    replica = String(line[range.upperBound...].prefix { $0 != "\"" })
                }
                return
            }
            if let status = Spawn.wait(started, timeoutMillis: 0) {
                pid = nil
                throw SpawnError("node \(name) exited (status \(status)) before it was ready; log tail:\n\(logTail(20))")
            }
            usleep(20_000)
        }
        kill(started, SIGKILL)
        _ = Spawn.wait(started, timeoutMillis: 3_000)
        pid = nil
        throw SpawnError("node \(name) was not ready within 20 s; log tail:\n\(logTail(20))")
    }

    /// SIGKILL: a crash, nothing flushed but what was committed.
    func crash() {
        guard let pid else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
        _ = Spawn.wait(pid, timeoutMillis: 5_000)
        self.pid = nil
        paused = false
        appendLine(logPath, "==== homeroom-chaos: SIGKILL at \(Clock.now) ms")
    }

    /// SIGTERM and wait (bounded); SIGKILL if it does not stop.
    func stop() {
        guard let pid else { return }
        if paused { kill(pid, SIGCONT) }
        kill(pid, SIGTERM)
        if Spawn.wait(pid, timeoutMillis: 8_000) == nil {
            appendLine(logPath, "==== homeroom-chaos: did not stop within 8 s of SIGTERM; SIGKILL")
            kill(pid, SIGKILL)
            _ = Spawn.wait(pid, timeoutMillis: 3_000)
        }
        self.pid = nil
        paused = false
    }

    func signal(_ number: Int32) {
        guard let pid else { return }
        kill(pid, number)
        if number == SIGSTOP { paused = true }
        if number == SIGCONT { paused = false }
    }

    /// Notices a node that died on its own (reaps it); returns a description once. A
    /// draining node's exit 0 is its drain ending, not a failure.
    func checkExited() -> String? {
        guard let pid, let status = Spawn.wait(pid, timeoutMillis: 0) else { return nil }
        self.pid = nil
        if draining && status == 0 {
            appendLine(logPath, "==== homeroom-chaos: drained and stopped by itself at \(Clock.now) ms")
            return nil
        }
        let how = (status & 0x7f) == 0 ? "exit code \((status >> 8) & 0xff)" : "signal \(status & 0x7f)"
        let entry = "\(name) exited on its own at \(Clock.now) ms (\(how))"
        unexpectedExits.append(entry)
        appendLine(logPath, "==== homeroom-chaos: \(entry)")
        return entry
    }

    func logTail(_ lines: Int) -> String {
        let all = (readFile(logPath) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
        return all.suffix(lines).joined(separator: "\n")
    }

    /// GET a path from the node's HTTP endpoint (plain sockets), bounded by 2 s.
    func get(_ path: String) -> (status: Int, body: String)? { request("GET", path) }

    /// One HTTP/1.0 request to the node's HTTP endpoint (plain sockets), bounded by 2 s.
    func request(_ method: String, _ path: String, headers: [String] = []) -> (status: Int, body: String)? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(httpPort).bigEndian
        address.sin_addr.s_addr = inet_addr(httpHost)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let head = ([ "\(method) \(path) HTTP/1.0", "Host: \(httpHost)", "Content-Length: 0", "Authorization: Bearer \(operatorToken)"] + headers)
            .joined(separator: "\r\n")
        let request = Array((head + "\r\n\r\n").utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var response: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while response.count < 4 << 20 {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            response.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: response, as: UTF8.self)
        guard let statusLine = text.split(separator: "\r\n").first,
              let code = Int(statusLine.split(separator: " ").dropFirst().first ?? "") else { return nil }
        let parts = text.split(separator: "\r\n\r\n", maxSplits: 1, omittingEmptySubsequences: false)
        let body = parts.count > 1 ? String(parts[1]) : ""
        return (code, body)
    }

    /// Selected /metrics series (name with labels -> value).
    func metrics() -> [String: Double] {
        guard let (status, body) = get("/metrics"), status == 200 else { return [:] }
        var result: [String: Double] = [:]
        for line in body.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            result[String(line[..<space])] = value
        }
        return result
    }
}

func appendLine(_ path: String, _ line: String) {
    guard let handle = fopen(path, "a") else { return }
    defer { fclose(handle) }
    fputs(line + "\n", handle)
}


/// The nodes of one run and the network they live on.
final class Cluster {
    let network: ChaosNetwork
    let nodes: [NodeHandle]
    let binary: String
    let heartbeatMillis: UInt64?
    /// Flags every start of every node gets (before the fault flags).
    let nodeFlags: [String]
    /// Told when a node goes down or comes up (the observers re-attach only to running nodes).
    var onNodeState: ((Int, Bool) -> Void)?
    private(set) var unexpectedExits: [String] = []
    /// The join fault's node: a name the members have never seen, on the network slot
    /// after theirs; not observed, and stopped (drained) whenever no join runs.
    let newcomer: NodeHandle?

    init(network: ChaosNetwork, count: Int, binary: String, runDirectory: String, heartbeatMillis: UInt64?, nodeFlags: [String] = [],
         newcomerName: String? = nil) {
        self.network = network
        self.binary = binary
        self.heartbeatMillis = heartbeatMillis
        self.nodeFlags = nodeFlags
        nodes = (0..<count).map { NodeHandle(index: $0, network: network, runDirectory: runDirectory) }
        newcomer = newcomerName.map { NodeHandle(index: count, network: network, runDirectory: runDirectory, name: $0) }
    }

    /// Every node that may run: the members, and the newcomer when a join is planned.
    var everyNode: [NodeHandle] { nodes + (newcomer.map { [$0] } ?? []) }

    /// The join fault: the newcomer starts, seeded with every member's address.
    func startNewcomer() throws(SpawnError) {
        guard let newcomer, !newcomer.isRunning else { return }
        try newcomer.start(binary: binary, seeds: nodes.map(\.listen), network: network, heartbeatMillis: heartbeatMillis,
                           faultFlags: nodeFlags)
    }

    func stopNewcomer() { newcomer?.stop() }

    /// Notices the newcomer's exit: its drain's exit 0 is expected (true), any other a
    /// failure (false, recorded); nil while it runs.
    @discardableResult
    func reapNewcomer() -> Bool? {
        guard let newcomer, newcomer.isRunning else { return nil }
        guard let exit = newcomer.checkExited() else { return newcomer.isRunning ? nil : true }
        unexpectedExits.append(exit)
        say("\(exit); log tail:\n\(newcomer.logTail(15))")
        return false
    }

    /// Every other node's listen address: any one is enough, all of them survive any crash.
    func seeds(for index: Int) -> [String] { nodes.filter { $0.index != index }.map(\.listen) }

    func start(_ index: Int, faultFlags: [String]) throws(SpawnError) {
        try nodes[index].start(binary: binary, seeds: seeds(for: index), network: network, heartbeatMillis: heartbeatMillis,
                               faultFlags: nodeFlags + faultFlags)
        onNodeState?(index, true)
    }

    func stop(_ index: Int) {
        onNodeState?(index, false)
        nodes[index].stop()
    }

    func crash(_ index: Int) {
        onNodeState?(index, false)
        nodes[index].crash()
    }

    func startAll() throws(SpawnError) {
        for index in nodes.indices { try start(index, faultFlags: []) }
    }

    /// SIGTERM every node (graceful: the store is consistent for --keep).
    func stopAll() {
        for index in nodes.indices { nodes[index].stop() }
        newcomer?.stop()
    }

    /// A node asked to drain: its exit (once its rooms are handed off) is expected.
    func expectDrain(_ index: Int) { nodes[index].draining = true }

    /// Reaps a draining node that has stopped by itself (its observer then waits).
    func reapDrained(_ index: Int) {
        let node = nodes[index]
        guard node.draining, node.isRunning else { return }
        if let exit = node.checkExited() {
            // It stopped, but not with its drain's exit 0: a failure.
            unexpectedExits.append(exit)
        }
        if !node.isRunning { onNodeState?(index, false) }
    }

    /// The drain is over (the node stopped or is about to be stopped).
    func endDrain(_ index: Int) { nodes[index].draining = false }

    /// Nodes that died without being told to: recorded, and restarted so the run goes on.
    /// A draining node that stopped is left stopped (the nemesis starts it at the heal).
    func reapUnexpected() -> [String] {
        var found: [String] = []
        // A newcomer that died is not restarted: the exit is recorded (the run fails
        // `no-crash`), and its join's heal finds nothing to drain.
        reapNewcomer()
        for node in nodes where node.draining { reapDrained(node.index) }
        for node in nodes where !node.draining {
            if let exit = node.checkExited() {
                found.append(exit)
                unexpectedExits.append(exit)
                say("\(exit); log tail:\n\(node.logTail(15))")
                onNodeState?(node.index, false)
                do {
                    try start(node.index, faultFlags: [])
                } catch {
                    unexpectedExits.append("\(node.name) could not be restarted: \(error)")
                }
            }
        }
        return found
    }
}
