@preconcurrency import Glibc

// homeroom-chaos: Jepsen-style partition and chaos runs against real node processes.
// The harness is being built (issue 8); until then this entry point only explains itself.
fputs("homeroom-chaos: the chaos harness is not built yet; see issue 8\n", stderr)
exit(1)
