import Foundation
import Testing

/// The deployment files cannot run here (no Docker engine, no Kubernetes, no systemd
/// as PID 1), so this checks what can be checked: they parse, they have the shape the
/// docs promise, every `homeroom node` flag and HOMEROOM_* variable they (and the
/// cluster scripts and the chaos harness) use is one the real CLI knows, the image
/// installs what the built binary links and is built with the tested toolchain, one
/// image name is used everywhere, and `systemd-analyze verify` accepts the units.
@Suite struct DeployFilesTests {
    static let root: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    static let yamlFiles = ["Deploy/compose.yaml", "Deploy/k8s/service.yaml", "Deploy/k8s/statefulset.yaml",
                            "Deploy/k8s/pdb.yaml", "Deploy/k8s/networkpolicy.yaml", "Deploy/k8s/kustomization.yaml"]
    static let scripts = ["Deploy/cluster-local.sh", "Deploy/cluster-netns.sh", "Deploy/chaos.sh"]

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], stdin: String? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = root
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }

    static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return (path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin"])
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// The built `homeroom`: HOMEROOM_BIN, else this checkout's debug build.
    static var binary: String {
        ProcessInfo.processInfo.environment["HOMEROOM_BIN"] ?? root.appendingPathComponent(".build/debug/homeroom").path
    }

    /// `homeroom node --help` from the built binary; else the usage text in the source.
    static func nodeHelp() throws -> String {
        if FileManager.default.isExecutableFile(atPath: binary) {
            let result = try run(binary, ["node", "--help"])
            if result.status == 0 && result.stdout.contains("USAGE:") { return result.stdout }
        }
        return try read("Sources/homeroom/Commands/NodeCommand.swift")
    }

    static func matches(_ pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).compactMap { match in
            Range(match.range(at: match.numberOfRanges > 1 ? 1 : 0), in: text).map { String(text[$0]) }
        }
    }

    /// Lines with backslash continuations joined, comments dropped.
    static func logicalLines(_ text: String) -> [String] {
        var lines: [String] = []
        var current = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("#") && current.isEmpty { continue }
            if line.hasSuffix("\\") {
                current += String(line.dropLast()) + " "
            } else {
                lines.append(current + line)
                current = ""
            }
        }
        return lines
    }

    /// The `--flags` given to `homeroom node` in a file: on logical lines that run the
    /// node (a script's `... node --name ...`, a unit's ExecStart, a manifest's command).
    static func nodeFlags(in text: String) -> Set<String> {
        var flags: Set<String> = []
        for line in logicalLines(text) {
            let runsNode = line.contains(" node --name") || line.contains("ExecStart=") || line.contains("\"node\"")
            guard runsNode, let start = line.range(of: "node") else { continue }
            for flag in matches(#"(--[a-z][a-z0-9-]+)"#, in: String(line[start.upperBound...])) { flags.insert(flag) }
        }
        return flags
    }

    // MARK: - Tests

    @Test func yamlFilesParse() throws {
        if let python = Self.which("python3"), (try? Self.run(python, ["-c", "import yaml"]).status) == 0 {
            let script = "import json, sys, yaml\nprint(json.dumps({f: list(yaml.safe_load_all(open(f))) for f in sys.argv[1:]}))"
            let result = try Self.run(python, ["-c", script] + Self.yamlFiles)
            #expect(result.status == 0, "PyYAML refused a file: \(result.stderr)")
            let parsed = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: [Any]] ?? [:]
            let manifests = Self.yamlFiles.filter { $0.hasPrefix("Deploy/k8s/") }.flatMap { parsed[$0] ?? [] }.compactMap { $0 as? [String: Any] }
            let kinds = manifests.compactMap { $0["kind"] as? String }
            #expect(kinds.contains("StatefulSet") && kinds.contains("Service") && kinds.contains("PodDisruptionBudget"))
            for manifest in manifests where manifest["kind"] as? String != "Kustomization" {
                #expect(manifest["apiVersion"] is String && (manifest["metadata"] as? [String: Any])?["name"] is String)
            }
            let headless = manifests.first { ($0["spec"] as? [String: Any])?["clusterIP"] as? String == "None" }
            #expect(headless != nil, "no headless Service (clusterIP: None)")
            let set = manifests.first { $0["kind"] as? String == "StatefulSet" }?["spec"] as? [String: Any]
            #expect(set?["replicas"] as? Int == 3)
            #expect(set?["serviceName"] as? String == (headless?["metadata"] as? [String: Any])?["name"] as? String)
            #expect((set?["volumeClaimTemplates"] as? [Any])?.isEmpty == false)
            // The HTTP port (operator routes beside /healthz and /metrics) is not open to
            // every pod: the policy's rule for 9100 names who may reach it.
            let policy = manifests.first { $0["kind"] as? String == "NetworkPolicy" }?["spec"] as? [String: Any]
            let rules = policy?["ingress"] as? [[String: Any]] ?? []
            let httpRules = rules.filter { (($0["ports"] as? [[String: Any]]) ?? []).contains { $0["port"] as? Int == 9100 } }
            #expect(!httpRules.isEmpty && httpRules.allSatisfy { !(($0["from"] as? [Any]) ?? []).isEmpty },
                    "the NetworkPolicy should open port 9100 only to named pods")
            let kustomized = (manifests.first { $0["kind"] as? String == "Kustomization" }?["resources"] as? [String]) ?? []
            #expect(kustomized.contains("networkpolicy.yaml"))
            let compose = parsed["Deploy/compose.yaml"]?.first as? [String: Any]
            let services = compose?["services"] as? [String: Any] ?? [:]
            #expect(services.count == 3, "compose.yaml should run three nodes")
        } else {
            // No PyYAML: a minimal structural check of block YAML.
            for file in Self.yamlFiles {
                let problems = Self.structuralYAMLProblems(try Self.read(file))
                #expect(problems.isEmpty, "\(file): \(problems.prefix(3).joined(separator: "; "))")
            }
            let statefulSet = try Self.read("Deploy/k8s/statefulset.yaml")
            #expect(statefulSet.contains("kind: StatefulSet") && statefulSet.contains("replicas: 3") && statefulSet.contains("volumeClaimTemplates:"))
            #expect(try Self.read("Deploy/k8s/service.yaml").contains("clusterIP: None"))
        }
    }

    /// Indentation by spaces in steps of two, `key: value` / `- item` lines, block scalars skipped.
    static func structuralYAMLProblems(_ text: String) -> [String] {
        var problems: [String] = []
        var blockIndent: Int?
        for (number, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw)
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            let indent = line.prefix { $0 == " " }.count
            if let block = blockIndent {
                if trimmed.isEmpty || indent > block { continue }
                blockIndent = nil
            }
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed == "---" { continue }
            if line.hasPrefix("\t") || line.prefix(indent + 1).contains("\t") { problems.append("line \(number + 1): tab indentation") }
            if indent % 2 != 0 { problems.append("line \(number + 1): odd indentation") }
            var content = trimmed
            while content.hasPrefix("- ") { content = String(content.dropFirst(2)) }
            let isKey = content.range(of: #"^[A-Za-z0-9_.<>$()/-]+:( |$)"#, options: .regularExpression) != nil
            let isItem = trimmed.hasPrefix("- ") || trimmed == "-"
            if !isKey && !isItem { problems.append("line \(number + 1): neither a key nor a list item: \(trimmed)") }
            if trimmed.hasSuffix("|") || trimmed.hasSuffix(">") || trimmed.hasSuffix("|-") { blockIndent = indent }
        }
        return problems
    }

    @Test func systemdUnitIsWellFormed() throws {
        let unit = try Self.read("Deploy/systemd/homeroom-node@.service")
        var section = ""
        var keys: [String: [String]] = [:]
        for line in Self.logicalLines(unit) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix(";") { continue }
            if trimmed.hasPrefix("[") {
                #expect(trimmed.hasSuffix("]"), "bad section header: \(trimmed)")
                section = String(trimmed.dropFirst().dropLast())
                continue
            }
            guard let equals = trimmed.firstIndex(of: "=") else {
                Issue.record("not Key=Value in [\(section)]: \(trimmed)")
                continue
            }
            keys["\(section).\(trimmed[..<equals])", default: []].append(String(trimmed[trimmed.index(after: equals)...]))
        }
        #expect(keys["Service.ExecStart"]?.first?.hasPrefix("/") == true, "ExecStart needs an absolute path")
        #expect(keys["Service.ExecStart"]?.first?.contains("homeroom node") == true)
        #expect(keys["Service.EnvironmentFile"]?.first?.contains("%i") == true, "one environment file per instance")
        #expect(keys["Service.KillSignal"]?.first == "SIGTERM")
        #expect(keys["Install.WantedBy"] != nil)
        // The example environment file sets exactly variables of the form KEY=value.
        let env = try Self.read("Deploy/systemd/homeroom-node.env.example")
        for line in env.split(separator: "\n") where !line.hasPrefix("#") && !line.trimmingCharacters(in: .whitespaces).isEmpty {
            #expect(line.range(of: #"^HOMEROOM_[A-Z_]+=\S+$"#, options: .regularExpression) != nil, "bad line: \(line)")
        }
    }

    @Test func everyNodeFlagAndVariableExists() throws {
        let help = try Self.nodeHelp()
        let helpFlags = Set(Self.matches(#"(--[a-z][a-z0-9-]+)"#, in: help))
        #expect(helpFlags.contains("--listen") && helpFlags.contains("--data-dir"), "could not read the node's options")
        var known = Set(Self.matches(#"(HOMEROOM_[A-Z_]+)"#, in: help))
        if let source = try? Self.read("Sources/homeroom/Commands/NodeCommand.swift") {
            known.formUnion(Self.matches(#"(HOMEROOM_[A-Z_]+)"#, in: source))
        }

        var used: [String: Set<String>] = [:]
        for file in Self.scripts + Self.yamlFiles + ["Deploy/systemd/homeroom-node@.service"] {
            used[file] = Self.nodeFlags(in: try Self.read(file))
        }
        // The chaos harness passes these to the nodes it starts and restarts.
        for file in ["Sources/HomeroomChaosKit/Nodes.swift", "Sources/HomeroomChaosKit/Nemesis.swift"] {
            used[file] = Set(Self.matches(#""(--[a-z][a-z0-9-]+)""#, in: try Self.read(file)))
        }
        #expect(used["Deploy/cluster-local.sh"]?.contains("--data-dir") == true, "found no node command line in cluster-local.sh")
        #expect(used["Sources/HomeroomChaosKit/Nemesis.swift"]?.contains("--clock-skew-ms") == true)
        for (file, flags) in used.sorted(by: { $0.key < $1.key }) {
            let unknown = flags.subtracting(helpFlags)
            #expect(unknown.isEmpty, "\(file) gives homeroom node flags it does not have: \(unknown.sorted())")
        }

        for file in Self.yamlFiles + ["Deploy/systemd/homeroom-node@.service", "Deploy/systemd/homeroom-node.env.example"] {
            let variables = Set(Self.matches(#"(HOMEROOM_[A-Z_]+)"#, in: try Self.read(file)))
            let unknown = variables.subtracting(known)
            #expect(unknown.isEmpty, "\(file) sets variables homeroom node does not read: \(unknown.sorted())")
        }
        // Every node in the manifests gets the settings it cannot start without.
        for file in ["Deploy/compose.yaml", "Deploy/k8s/statefulset.yaml", "Deploy/systemd/homeroom-node.env.example"] {
            let text = try Self.read(file)
            for required in ["HOMEROOM_NAME", "HOMEROOM_LISTEN", "HOMEROOM_PUBLISH", "HOMEROOM_SEEDS", "HOMEROOM_DATA_DIR", "HOMEROOM_HTTP"] {
                #expect(text.contains(required), "\(file) does not set \(required)")
            }
            // A node advertises its listen address to peers: 0.0.0.0 would send them to themselves.
            for address in Self.matches(#"HOMEROOM_(?:LISTEN|PUBLISH)[:=]\s*(\S+)"#, in: text) {
                #expect(!address.contains("0.0.0.0"), "\(file): \(address) is advertised to peers; use a reachable name")
            }
        }
    }

    @Test func scriptsAreValidBashAndExplainThemselves() throws {
        guard let bash = Self.which("bash") else { return }
        for script in Self.scripts {
            let syntax = try Self.run(bash, ["-n", script])
            #expect(syntax.status == 0, "\(script): \(syntax.stderr)")
            // chaos.sh builds and runs the harness: not from inside a test run.
            if script.hasSuffix("chaos.sh") { continue }
            let usage = try Self.run(bash, [script, "frobnicate"])
            #expect(usage.status == 64, "\(script) frobnicate should be a usage error: \(usage.stderr)")
            #expect(usage.stderr.contains("usage:"))
        }
    }

    /// test.sh unsets every knob by name as well as by its catch-all loop, so a reader sees
    /// what the suite refuses to inherit; a knob added anywhere in the tree and missing here fails.
    @Test func testScriptUnsetsEveryKnobInTheTree() throws {
        let script = try Self.read("Deploy/test.sh")
        guard let unsetStart = script.range(of: "\nunset HOMEROOM_") else {
            Issue.record("Deploy/test.sh has no `unset HOMEROOM_...` line"); return
        }
        let unsetLine = Self.logicalLines(String(script[script.index(after: unsetStart.lowerBound)...]))[0]
        let unsetNames = Set(Self.matches("HOMEROOM_[A-Z0-9_]+", in: unsetLine))
        var used: [String: String] = [:]
        let fileManager = FileManager.default
        for folder in ["Sources", "Tests", "Deploy", "Fuzz"] {
            guard let walker = fileManager.enumerator(atPath: Self.root.appendingPathComponent(folder).path) else { continue }
            while let relative = walker.nextObject() as? String {
                guard relative.hasSuffix(".swift") || relative.hasSuffix(".sh") || relative.hasSuffix(".py") else { continue }
                guard let text = try? Self.read("\(folder)/\(relative)") else { continue }
                for name in Self.matches("HOMEROOM_[A-Z0-9][A-Z0-9_]*", in: text) where used[name] == nil {
                    used[name] = "\(folder)/\(relative)"
                }
            }
        }
        #expect(used.count > 20, "found only \(used.count) knobs: is the walk reading the tree?")
        for (name, file) in used.sorted(by: { $0.key < $1.key }) where !unsetNames.contains(name) {
            Issue.record("\(name) (read in \(file)) is missing from Deploy/test.sh's unset line")
        }
    }

    // MARK: - The image, its name, the systemd unit

    /// One `FROM` stage of a Dockerfile: its base image, its logical lines and the
    /// packages its `apt-get install` commands name.
    struct DockerStage {
        var base: String
        var lines: [String] = []
        var installs: Set<String> {
            var packages: Set<String> = []
            for line in lines {
                guard let install = line.range(of: "apt-get install") else { continue }
                // Up to the end of that command: `&&`, `;` or a pipe.
                let command = String(line[install.upperBound...]).components(separatedBy: "&&")[0]
                    .split(separator: ";")[0].split(separator: "|")[0]
                for word in command.split(separator: " ") where !word.hasPrefix("-") { packages.insert(String(word)) }
            }
            return packages
        }
    }

    static func dockerStages(_ text: String) -> [DockerStage] {
        var stages: [DockerStage] = []
        for line in logicalLines(text) {
            let words = line.split(separator: " ")
            if words.first?.uppercased() == "FROM", words.count > 1 {
                stages.append(DockerStage(base: String(words[1])))
            } else if !stages.isEmpty {
                stages[stages.count - 1].lines.append(line)
            }
        }
        return stages
    }

    /// The Debian package that owns each of `paths`, by one `dpkg -S`. Debian 12 merged
    /// /lib into /usr/lib but dpkg records each file where its package put it, so each
    /// path, its other spelling and its resolved target are all asked for.
    static func debianPackages(owning paths: [String]) throws -> [String: String] {
        func spellings(_ path: String) -> [String] {
            path.hasPrefix("/usr/") ? [path, String(path.dropFirst(4))] : [path, "/usr" + path]
        }
        let candidates = paths.map { path in spellings(path) + spellings(URL(fileURLWithPath: path).resolvingSymlinksInPath().path) }
        // Status 1 when some spelling is unknown: the others are still listed.
        let result = try run("/usr/bin/dpkg", ["-S"] + Set(candidates.joined()).sorted())
        var owner: [String: String] = [:]
        for line in result.stdout.split(separator: "\n") {
            // "libssl3:amd64: /usr/lib/x86_64-linux-gnu/libssl.so.3" (a diverted file names more than one).
            let parts = line.components(separatedBy: ": ")
            guard parts.count == 2, let first = parts[0].components(separatedBy: ", ").first else { continue }
            owner[parts[1]] = String(first.split(separator: ":")[0])
        }
        var packages: [String: String] = [:]
        for (path, spelled) in zip(paths, candidates) {
            packages[path] = spelled.lazy.compactMap { owner[$0] }.first
        }
        return packages
    }

    /// Every installed package's dependencies (Depends and Pre-Depends, every
    /// alternative), from one `dpkg-query`.
    static func installedDependencies() throws -> [String: Set<String>] {
        let result = try run("/usr/bin/dpkg-query", ["-W", "-f", "${Package}\t${Depends}, ${Pre-Depends}\n"])
        var dependencies: [String: Set<String>] = [:]
        for line in result.stdout.split(separator: "\n") {
            let fields = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            guard fields.count == 2 else { continue }
            let names = fields[1].split(whereSeparator: { $0 == "," || $0 == "|" }).compactMap { alternative in
                alternative.split(separator: " ").first.map { String($0.split(separator: ":")[0]) }
            }
            dependencies[String(fields[0]), default: []].formUnion(names)
        }
        return dependencies
    }

    /// `packages` and everything they depend on, recursively.
    static func closure(of packages: Set<String>, in dependencies: [String: Set<String>]) -> Set<String> {
        var seen = packages
        var queue = Array(packages)
        while let next = queue.popLast() {
            for dependency in dependencies[next] ?? [] where seen.insert(dependency).inserted { queue.append(dependency) }
        }
        return seen
    }

    /// What `ldd` says the binary loads: soname and resolved path.
    static func linkedLibraries(_ binary: String) throws -> [(name: String, path: String)] {
        let ldd = try run("/usr/bin/ldd", [binary])
        #expect(ldd.status == 0, "ldd \(binary): \(ldd.stderr)")
        var libraries: [(name: String, path: String)] = []
        for line in ldd.stdout.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            #expect(!trimmed.contains("not found"), "the binary links a library this machine lacks: \(trimmed)")
            let parts = trimmed.components(separatedBy: " => ")
            // "libssl.so.3 => /lib/.../libssl.so.3 (0x…)", "/lib64/ld-linux-x86-64.so.2 (0x…)"; the vdso has no file.
            let path = (parts.count == 2 ? parts[1] : parts[0]).components(separatedBy: " (")[0]
            guard path.hasPrefix("/") else { continue }
            libraries.append((parts.count == 2 ? parts[0] : URL(fileURLWithPath: path).lastPathComponent, path))
        }
        return libraries
    }

    /// The image is the tested build: Deploy/Dockerfile's runtime stage installs exactly
    /// the Debian packages whose libraries the built binary links (ldd, then dpkg -S),
    /// its builder and Deploy/bootstrap.sh install their -dev packages (the package that
    /// ships the unversioned .so the linker uses), and the builder's Swift is the
    /// toolchain the binary was built with. The Debian names come from this machine's
    /// dpkg, so this needs Debian 12 (as CI and the image are): no mapping is kept by
    /// hand, and without ldd or dpkg the test fails rather than guess.
    @Test func imageInstallsWhatTheBinaryLinks() throws {
        let binary = Self.binary
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw CLIError("no homeroom binary at \(binary): run `swift build --product homeroom` first (or set HOMEROOM_BIN)")
        }
        for tool in ["/usr/bin/ldd", "/usr/bin/dpkg", "/usr/bin/dpkg-query"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw CLIError("\(tool) is missing: this check maps libraries to Debian 12 packages and needs Debian's ldd and dpkg")
        }
        let stages = Self.dockerStages(try Self.read("Deploy/Dockerfile"))
        guard stages.count >= 2, let builder = stages.first, let runtime = stages.last else {
            throw CLIError("Deploy/Dockerfile should have a build stage and a runtime stage")
        }

        // The same Debian release as this machine, whose package names are checked here.
        let osRelease = (try? String(contentsOfFile: "/etc/os-release", encoding: .utf8)) ?? ""
        let codename = Self.matches(#"(?m)^VERSION_CODENAME=(\w+)"#, in: osRelease).first ?? "unknown"
        #expect(codename == "bookworm", "expected Debian 12 (bookworm), the release CI and the image use; found \(codename)")
        #expect(runtime.base == "debian:\(codename)-slim", "the runtime stage is \(runtime.base), not debian:\(codename)-slim")

        let libraries = try Self.linkedLibraries(binary)
        #expect(libraries.contains { $0.name.hasPrefix("libssl.so") }, "ldd lists no libssl: \(libraries.map(\.name))")

        // The toolchain's own libraries (beside libswiftCore.so) are not Debian's: the
        // image links them in with --static-swift-stdlib, and its builder is that toolchain.
        let toolchainLibraries = libraries.first { $0.name == "libswiftCore.so" }.map { URL(fileURLWithPath: $0.path).deletingLastPathComponent().path + "/" }
        if toolchainLibraries != nil {
            #expect(builder.lines.contains { $0.contains("swift build") && $0.contains("--static-swift-stdlib") },
                    "the binary links the Swift runtime dynamically; the builder must link it in (--static-swift-stdlib) or the runtime stage needs it")
        }
        let swift = toolchainLibraries.map { URL(fileURLWithPath: $0).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("bin/swift").path }
            .flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil } ?? Self.which("swift")
        guard let swift else { throw CLIError("found no swift (neither beside the binary's runtime nor on PATH) to compare with the Dockerfile's") }
        let versionOutput = try Self.run(swift, ["--version"])
        let tested = Self.matches(#"Swift version (\d+(?:\.\d+)+)"#, in: versionOutput.stdout + versionOutput.stderr).first ?? "unknown"
        #expect(builder.base == "swift:\(tested)-\(codename)",
                "the builder is \(builder.base); the binary was built and tested with Swift \(tested) (\(swift)): use swift:\(tested)-\(codename)")

        // ldd lists every library loaded, its libraries' libraries too: a package another
        // linked package depends on comes with it, and the base image (where apt and
        // what it depends on are) has libc6, libstdc++6, libgcc-s1.
        let system = libraries.filter { library in !(toolchainLibraries.map { library.path.hasPrefix($0) } ?? false) }
        let packageOf = try Self.debianPackages(owning: system.map(\.path))
        var owners: [String: Set<String>] = [:]   // package -> the linked libraries it ships
        for library in system {
            guard let package = packageOf[library.path] else {
                Issue.record("\(library.path) (\(library.name)) belongs to no Debian package: the image cannot install it")
                continue
            }
            owners[package, default: []].insert(library.path)
        }
        let dependencies = try Self.installedDependencies()
        let inBaseImage = Self.closure(of: ["apt"], in: dependencies)
        let comeWithOthers = owners.keys.reduce(into: Set<String>()) { result, package in
            result.formUnion(Self.closure(of: dependencies[package] ?? [], in: dependencies).subtracting([package]))
        }
        let required = Set(owners.keys).subtracting(inBaseImage).subtracting(comeWithOthers)
        #expect(required.isSuperset(of: ["libprotobuf-c1", "libsodium23", "libsqlite3-0", "libssl3"]),
                "expected the four libraries the node is built on, found \(required.sorted())")
        // The node speaks nng's protocols itself (docs/NNG.md): libnng is for the benchmark and tests only.
        #expect(!required.contains("libnng1"), "the homeroom binary links libnng again: \(owners["libnng1"]?.sorted() ?? [])")
        for package in required.subtracting(runtime.installs).sorted() {
            Issue.record("Deploy/Dockerfile's runtime stage does not install \(package), which ships \(owners[package]!.sorted()) that the binary links")
        }
        for package in runtime.installs.subtracting(required).sorted() {
            Issue.record("Deploy/Dockerfile's runtime stage installs \(package), which the binary does not need (not linked, or in the base image, or a dependency of another)")
        }

        // Their -dev packages: the owner of the unversioned .so beside each library.
        let bootstrap = try Self.read("Deploy/bootstrap.sh")
        let bootstrapPackages = Set((Self.matches(#"packages=\(([^)]*)\)"#, in: bootstrap).first ?? "").split(whereSeparator: \.isWhitespace).map(String.init))
        #expect(bootstrapPackages.contains("pkg-config"), "could not read Deploy/bootstrap.sh's package list")
        let links = required.flatMap { package in owners[package]!.map { path in
            let url = URL(fileURLWithPath: path)
            let stem = url.lastPathComponent.components(separatedBy: ".so")[0]
            return (package: package, library: url.lastPathComponent, link: url.deletingLastPathComponent().appendingPathComponent(stem + ".so").path)
        } }.sorted { $0.link < $1.link }
        let devOf = try Self.debianPackages(owning: links.map(\.link))
        for (package, library, link) in links {
            guard let dev = devOf[link] else {
                Issue.record("no installed package ships \(link), which links \(library): Deploy/bootstrap.sh should install \(package)'s -dev package")
                continue
            }
            #expect(bootstrapPackages.contains(dev), "Deploy/bootstrap.sh does not install \(dev) (to link \(library), from \(package))")
            #expect(builder.installs.contains(dev), "Deploy/Dockerfile's builder does not install \(dev) (to link \(library), from \(package))")
        }
    }

    /// One image name: what compose builds and tags, what Kubernetes runs, and what the
    /// docs' `docker build -f Deploy/Dockerfile -t …` line makes.
    @Test func oneImageNameEverywhere() throws {
        var names: [String: Set<String>] = [:]
        for file in Self.yamlFiles {
            for image in Self.matches(#"(?m)^\s*(?:-\s+)?image:\s*["']?([^\s"']+)"#, in: try Self.read(file)) { names[file, default: []].insert(image) }
        }
        #expect(names["Deploy/compose.yaml"] != nil && names["Deploy/k8s/statefulset.yaml"] != nil, "found no image: in compose.yaml or statefulset.yaml")
        let compose = try Self.read("Deploy/compose.yaml")
        #expect(Self.matches(#"(?m)^\s*dockerfile:\s*(\S+)"#, in: compose) == ["Deploy/Dockerfile"], "compose should build Deploy/Dockerfile (relative to its context, the repository root)")
        #expect(Self.matches(#"(?m)^\s*context:\s*(\S+)"#, in: compose) == [".."])

        var builds: [String] = []
        for file in ["docs/DEPLOY.md", "README.md", "docs/OPERATIONS.md", "Deploy/Dockerfile"] {
            for line in try Self.read(file).split(separator: "\n") where line.contains("docker build ") {
                let tag = Self.matches(#"\s-t\s+(\S+)"#, in: String(line)).first
                #expect(tag != nil && line.contains("-f Deploy/Dockerfile"), "\(file): a docker build line should name -f Deploy/Dockerfile and -t: \(line)")
                if let tag { names["\(file) (docker build)", default: []].insert(tag); builds.append(file) }
            }
        }
        #expect(builds.contains("docs/DEPLOY.md"), "docs/DEPLOY.md should say how to build and tag the image")
        let all = names.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(all.count == 1, "the image has more than one name: \(names.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value.sorted())" })")
    }

    /// `systemd-analyze verify` on each unit, as installed except that ExecStart runs the
    /// built binary (verify refuses a command that does not exist): unknown keys, bad
    /// values and missing commands fail. It needs systemd-analyze, which Deploy/bootstrap.sh
    /// installs (package systemd), so it is required: a machine without it fails here.
    @Test
    func systemdUnitsPassVerify() throws {
        guard let analyze = Self.which("systemd-analyze") else {
            throw CLIError("systemd-analyze is missing: run Deploy/bootstrap.sh, which installs it (package systemd)")
        }
        let binary = Self.binary
        guard FileManager.default.isExecutableFile(atPath: binary) else {
            throw CLIError("no homeroom binary at \(binary): run `swift build --product homeroom` first (or set HOMEROOM_BIN)")
        }
        let directory = Self.root.appendingPathComponent("Deploy/systemd")
        let units = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { file in [".service", ".socket", ".timer", ".target", ".path"].contains { file.hasSuffix($0) } }.sorted()
        #expect(units.contains("homeroom-node@.service"))
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-systemd-verify-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        for unit in units {
            // The install path docs/DEPLOY.md and the image use, swapped for the built binary.
            let text = try String(contentsOf: directory.appendingPathComponent(unit), encoding: .utf8)
            let installed = "=/usr/local/bin/homeroom"
            let runsInstalled = text.contains("ExecStart" + installed)
            #expect(runsInstalled, "\(unit): ExecStart should run \(installed.dropFirst()), where the docs install it")
            let copy = text.replacingOccurrences(of: installed, with: "=" + binary)
            // A template is verified as one instance, so %i is expanded too.
            let name = unit.replacingOccurrences(of: "@.", with: "@n1.")
            let path = scratch.appendingPathComponent(name).path
            try copy.write(toFile: path, atomically: true, encoding: .utf8)
            let result = try Self.run(analyze, ["verify", path])
            // Warnings about this unit (an unknown key, a value ignored) leave the status
            // 0, so any line naming it fails too; lines about the host's units do not.
            let complaints = (result.stdout + result.stderr).split(separator: "\n").filter { $0.contains(name) }
            #expect(result.status == 0 && complaints.isEmpty,
                    "systemd-analyze verify \(unit) (status \(result.status)):\n\(result.stdout)\(result.stderr)")
        }
    }
}
