@preconcurrency import Glibc
import HomeroomHarness

// homeroom-chaos: Jepsen-style partition and chaos runs against real `homeroom node`
// processes, with a checker. See docs/CHAOS.md.

let options = ChaosOptions.parse(Array(CommandLine.arguments.dropFirst()))

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
