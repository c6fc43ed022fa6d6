@preconcurrency import Glibc

/// homeroom-bench: every performance figure Homeroom claims comes from here.
/// Prints one JSON object per line; `--markdown` adds a table at the end.
struct BenchOptions {
    var quick = false
    var markdown = false
    var suites: Set<String> = []
    /// Set in the child processes of a full run: print the Markdown rows (no header)
    /// after the JSON lines, for the parent's table.
    var rowsForParent = false
    /// The node children of the idle and writes suites in network namespaces (root).
    var netns = false

    static let usage = """
        OVERVIEW: Measure Homeroom (release build) and print JSON lines.

        USAGE: homeroom-bench [--quick] [--markdown] [--suite <name> ...]

        OPTIONS:
          --quick           Smaller sizes, for CI (well under 2 minutes).
          --markdown        Also print a Markdown table of the rows.
          --netns           The idle, idle-placed and writes suites' nodes each in a network
                            namespace of their own, on a bridge (root, iproute2; exit 77 otherwise).
          --suite <name>    Run only this suite (merge, memory, codec, cluster, join, lifetime, resources, security, lock-scope, rooms, convergence, ui, idle, writes, teacher-lane, idle-placed, messaging,
                            messaging-100k, messaging-processes: 10,000 subscribers in child
                            processes, snapshot: the join in process, for profiles, school: room streams
                            against v1 subscribers on 3 homeroom node processes, then NATS and Redis on the
                            same workload, by name only; school-nats, school-redis: one baseline alone;
                            node-streams: 9 node processes with --replicas 3, bytes each receives from
                            its peers, against --node-streams off, by name only); repeatable.
          -h, --help        Show help information.
        """
}

func runBench() {
    if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "--subscriber-child" {
        SubscriberProcesses.childMain(Array(CommandLine.arguments.dropFirst(2)))
    }
    if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "--node-child" {
        NodeProcesses.childMain(Array(CommandLine.arguments.dropFirst(2)))
    }
    if CommandLine.arguments.count > 1 && CommandLine.arguments[1] == "--school-child" {
        SchoolBench.childMain(Array(CommandLine.arguments.dropFirst(2)))
    }
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
        case "--rows": options.rowsForParent = true
        case "--netns": options.netns = true
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

    if options.netns && getuid() != 0 {
        fputs("homeroom-bench: --netns cannot run here: network namespaces need root\n", stderr)
        exit(77)
    }
    if options.suites.isEmpty {
        runEachSuiteInItsOwnProcess(options)
        return
    }
    // Before any thread starts: every thread of this process must live in the namespace.
    if options.netns { BenchNamespaces.enter() }

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
    if wants("lifetime") { LifetimeBench.run(quick: options.quick, emit: emit) }
    if wants("resources") { ResourceBench.run(quick: options.quick, emit: emit) }
    if wants("security") { SecurityBench.run(quick: options.quick, emit: emit) }
    if wants("lock-scope") { LockScopeBench.run(quick: options.quick, emit: emit) }
    if wants("rooms") { RoomParallelismBench.run(quick: options.quick, emit: emit) }
    if wants("convergence") { ConvergenceBench.run(quick: options.quick, emit: emit) }
    if wants("ui") { RosterFrameBench.run(quick: options.quick, emit: emit) }
    if wants("idle") { IdleCostBench.run(quick: options.quick, emit: emit) }
    if wants("writes") { WriteCapacityBench.run(quick: options.quick, emit: emit) }
    if wants("teacher-lane") { TeacherLaneBench.run(quick: options.quick, emit: emit) }
    if options.suites.contains("idle-placed") { IdleCostBench.runPlaced(quick: options.quick, emit: emit) }
    if options.suites.contains("snapshot") {
        // Not part of the full run (the join suite has these rows): the in-process join, for profiles.
        for users in options.quick ? [10_000] : [10_000, 100_000] { JoinBench.stages(users: users, emit: emit) }
    }
    // The 100,000-member hall: by name (the full run asks for it unless --quick).
    if options.suites.contains("messaging-100k") { MessagingBench.largeHall(quick: options.quick, emit: emit) }
    if options.suites.contains("messaging-processes") { ProcessFanOutBench.run(quick: options.quick, emit: emit) }
    // Room streams in a school of real `homeroom node` processes: by name (it needs the homeroom binary beside this one).
    let schoolBaselines = Set([SchoolBench.System.nats, .redis].filter { options.suites.contains("school-\($0.rawValue)") })
    if options.suites.contains("school") || !schoolBaselines.isEmpty {
        SchoolBench.run(quick: options.quick, systems: options.suites.contains("school") ? Set(SchoolBench.System.allCases) : schoolBaselines, emit: emit)
    }
    // What a node receives from its peers with placement (9 node processes, R = 3): by name.
    if options.suites.contains("node-streams") { NodeStreamsBench.run(quick: options.quick, emit: emit) }
    if wants("messaging") { MessagingBench.run(quick: options.quick, emit: emit) }

    if options.rowsForParent {
        for row in rows { print(row.markdown) }
    } else if options.markdown {
        print("")
        print(BenchRow.markdownHeader)
        for row in rows { print(row.markdown) }
    }
}

/// The full run: every suite in a child process of its own, one after the other.
/// nng 1.5.2 can leave a socket's close stuck (issue 1543); the sockets and threads a
/// suite leaves behind would weigh on the suites after it (a full run in one process
/// once slowed the last fan-out row tenfold and lost a raw baseline). The parent
/// starts no nng itself, so spawning is safe.
func runEachSuiteInItsOwnProcess(_ options: BenchOptions) {
    // Memory first: it measures resident-set growth, which memory freed earlier would hide.
    let suites = ["memory", "merge", "codec", "cluster", "join", "lifetime", "resources", "security", "lock-scope", "rooms", "convergence", "ui", "idle", "writes", "teacher-lane"] + (options.quick ? [] : ["messaging-100k", "messaging-processes"]) + ["messaging"]
    let me = CommandLine.arguments[0]
    let quoted = "'" + me.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    var table: [String] = []
    var failed: [String] = []
    for suite in suites {
        guard let pipe = popen("\(quoted) --suite \(suite) --rows\(options.quick ? " --quick" : "")\(options.netns ? " --netns" : "")", "r") else {
            failed.append(suite)
            continue
        }
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        while getline(&line, &capacity, pipe) > 0, let line {
            let text = String(cString: line)
            if text.hasPrefix("|") {
                table.append(text.trimmingNewline)
            } else {
                print(text, terminator: "")
                fflush(stdout)
            }
        }
        free(line)
        if pclose(pipe) != 0 { failed.append(suite) }
    }
    if options.markdown {
        print("")
        print(BenchRow.markdownHeader)
        for row in table { print(row) }
    }
    if !failed.isEmpty {
        fputs("Error: these suites failed or could not start: \(failed.joined(separator: ", ")); run one alone with --suite <name>\n", stderr)
        exit(1)
    }
}

extension String {
    var trimmingNewline: String { hasSuffix("\n") ? String(dropLast()) : self }
}

runBench()
