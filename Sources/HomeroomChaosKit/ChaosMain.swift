@preconcurrency import Glibc
import HomeroomHarness

/// `homeroom-chaos`'s whole life, called first thing by its main.swift (the library holds
/// the harness so that `homeroom verify` shares its workload, observatory and checker).
package enum ChaosMain {
    package static func run(_ arguments: [String]) -> Never {
        let options = ChaosOptions.parse(arguments)

        // Before any other thread exists: netns mode moves this process into its own network
        // namespace (every later thread inherits it), and SIGINT/SIGTERM/SIGHUP are blocked
        // here so that only the signal thread takes them.
        var network: ChaosNetwork
        if options.netns {
            do {
                let netns = try NetnsNetwork(prefix: options.subnetPrefix)
                try netns.enterOwnNamespace()
                network = netns
            } catch {
                fputs("homeroom-chaos: --netns cannot run here: \(error); use loopback mode (no --netns) instead\n", stderr)
                exit(77)
            }
        } else {
            let base = options.basePort != 0 ? options.basePort : LoopbackNetwork.freeBasePort(nodes: options.nodes + 1, seed: options.seed)
            network = LoopbackNetwork(basePort: base)
        }
        var blocked = sigset_t()
        sigemptyset(&blocked)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&blocked, signal) }
        pthread_sigmask(SIG_BLOCK, &blocked, nil)
        signal(SIGPIPE, SIG_IGN)

        exit(ChaosRun(options: options, network: network).run())
    }
}
