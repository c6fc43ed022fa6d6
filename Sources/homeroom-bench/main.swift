@preconcurrency import Glibc

/// homeroom-bench: every performance figure Homeroom claims comes from here.
/// Prints one JSON object per line; `--markdown` adds a table at the end.
struct BenchOptions {
    var quick = false
    var markdown = false
    var suites: Set<String> = []

    static let usage = """
        OVERVIEW: Measure Homeroom (release build) and print JSON lines.

        USAGE: homeroom-bench [--quick] [--markdown] [--suite <name> ...]

        OPTIONS:
          --quick           Smaller sizes, for CI (well under 2 minutes).
          --markdown        Also print a Markdown table of the rows.
          --suite <name>    Run only this suite (merge, memory, codec, cluster, join, messaging,
                            messaging-100k, snapshot: the join in process, for profiles); repeatable.
          -h, --help        Show help information.
        """
}

func runBench() {
    var options = BenchOptions()
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        switch argument {
        case "--quick": options.quick = true
        case "--markdown": options.markdown = true
        case "--suite":
            guard let name = arguments.popFirst() else {
                fputs("Error: --suite needs a name\n\n\(BenchOptions.usage)\n", stderr)
                exit(64)
            }
            options.suites.insert(name)
        case "-h", "--help":
            print(BenchOptions.usage)
            exit(0)
        default:
            fputs("Error: unknown argument '\(argument)'\n\n\(BenchOptions.usage)\n", stderr)
            exit(64)
        }
    }

    #if DEBUG
    fputs("warning: this is a debug build; figures are only meaningful from `swift build -c release`\n", stderr)
    #endif

    var rows: [BenchRow] = []
    func emit(_ row: BenchRow) {
        rows.append(row)
        print(row.json)
        fflush(stdout)
    }

    func wants(_ suite: String) -> Bool { options.suites.isEmpty || options.suites.contains(suite) }

    // Memory first: it measures resident-set growth, which memory freed by an earlier
    // suite would hide (the quick run showed 3 bytes/user after the merge suite).
    if wants("memory") { MergeBench.memory(quick: options.quick, emit: emit) }
    if wants("merge") {
        MergeBench.streamed(quick: options.quick, emit: emit)
        MergeBench.catchUp(quick: options.quick, emit: emit)
    }
    if wants("codec") { CodecBench.run(quick: options.quick, emit: emit) }
    if wants("cluster") { ClusterBench.run(quick: options.quick, emit: emit) }
    if wants("join") { JoinBench.run(quick: options.quick, emit: emit) }
    if options.suites.contains("snapshot") {
        // Not part of the full run (the join suite has these rows): the in-process join, for profiles.
        for users in options.quick ? [10_000] : [10_000, 100_000] { JoinBench.stages(users: users, emit: emit) }
    }
    // The 100,000-member hall: in the full run, or alone by name (quick keeps to 10,000).
    // Before the 10,000-member rows: tearing down their 3,000 subscribers can leave
    // nng closes stuck (issue 1543), and sockets stuck closing slowed this row tenfold.
    if (wants("messaging") && !options.quick) || options.suites.contains("messaging-100k") {
        MessagingBench.largeHall(quick: options.quick, emit: emit)
    }
    if wants("messaging") { MessagingBench.run(quick: options.quick, emit: emit) }

    if options.markdown {
        print("")
        print(BenchRow.markdownHeader)
        for row in rows { print(row.markdown) }
    }

}

runBench()
