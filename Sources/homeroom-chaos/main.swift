import HomeroomChaosKit

// homeroom-chaos: Jepsen-style partition and chaos runs against real `homeroom node`
// processes, with a checker. See docs/CHAOS.md. The harness is the HomeroomChaosKit
// library, which `homeroom verify` shares.

ChaosMain.run(Array(CommandLine.arguments.dropFirst()))
