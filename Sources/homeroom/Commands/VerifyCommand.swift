@preconcurrency import Glibc
import HomeroomChaosKit
import HomeroomNode
import HomeroomSupport

/// `homeroom verify`: does this running cluster keep every write it acknowledges? The
/// chaos harness's workload and checker (HomeroomChaosKit) against the operator's nodes.
enum VerifyCommand {
    static let usage = """
        OVERVIEW: Check a running cluster: real clients write in a room of their own for a while
        (inject faults by hand meanwhile), then the chaos checker judges what the nodes kept:
        acknowledged writes lost (must be 0), duplicates, convergence, invariants, catch-up,
        and a join storm's roster latency. Exits 1 on any violation, with a one-line verdict.

        USAGE: homeroom verify --node <address> [--node <address> ...] [--seconds <n>] [options]

        OPTIONS:
          --node <address>       A node's listen address; give every node (one observer each).
          --seconds <n>          How long the workload runs (default 30, 5 to 86400).
          --key <file>           The token-signing secret key, for nodes started with --token-key
                                 (verify signs its own clients' tokens).
          --tls-ca <file>        The authority that signed the nodes' certificates, for tls+tcp://
                                 addresses.                                       (HOMEROOM_TLS_CA)
          --room <id>            The run's room (default verify-<random>: a new room each run).
          --seed <n>             Seed of the workload (default random, printed).
          --storm <n>            Clients in the join storm (default 20, 1 to 500).
          --json                 Print the report as JSON instead of the summary.
          -h, --help             Show help information.

        The nodes are observed only through protocol clients: verify needs no node access,
        and reads no node logs (check those for crashes yourself). Exit 0: no violation;
        1: a violation (the first line says which); 2: the run could not be made.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let environment = ProcessEnvironment.current
        let nodes = try reader.strings("--node").flatMap { $0.split(separator: ",").map { String($0).trimmed } }.filter { !$0.isEmpty }
        let seconds = try reader.integer("--seconds", in: 5...86_400) ?? 30
        let keyPath = try reader.string("--key")
        let authority = try reader.string("--tls-ca") ?? environment["HOMEROOM_TLS_CA"]
        let room = try reader.string("--room")
        let seed = try reader.integer("--seed", in: UInt64(0)...UInt64.max)
        let storm = try reader.integer("--storm", in: 1...500) ?? 20
        let json = reader.flag("--json")
        try reader.finish()
        guard !nodes.isEmpty else {
            throw .usage("missing --node: give every node's listen address, e.g. --node tcp://127.0.0.1:7100", usage: usage)
        }
        for node in nodes where !["tcp://", "tls+tcp://", "ipc://"].contains(where: { node.hasPrefix($0) }) {
            throw .usage("node address '\(node)' must start with tcp://, tls+tcp:// or ipc://", usage: usage)
        }
        try ClientTLS.configure(authority: authority, nodes: nodes, usage: usage)
        let chosenSeed = seed ?? UInt64.random(in: 1...999_999)
        let roomID = room ?? "verify-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        if let problem = RoomID.validate(roomID) { throw .usage(problem, usage: usage) }
        var options = VerifyOptions(nodes: nodes, seconds: Int(seconds), room: roomID, seed: chosenSeed)
        options.stormClients = Int(storm)
        options.json = json
        if let keyPath {
            do {
                options.signing = try SigningKeys(secret: KeyFiles.read(keyPath, secret: true))
            } catch {
                throw .failure("cannot read the token-signing key \(keyPath): \(error.description)")
            }
        }
        let status = VerifyRun(options: options).run()
        if status != 0 { exit(status) }
    }
}
