import Foundation
import Testing

/// The deployment files cannot run here (no Docker engine, no Kubernetes, no systemd
/// as PID 1), so this checks what can be checked: they parse, they have the shape the
/// docs promise, and every `homeroom node` flag and HOMEROOM_* variable they (and the
/// cluster scripts and the chaos harness) use is one the real CLI knows.
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

    /// `homeroom node --help` from the built binary; else the usage text in the source.
    static func nodeHelp() throws -> String {
        let binary = ProcessInfo.processInfo.environment["HOMEROOM_BIN"] ?? root.appendingPathComponent(".build/debug/homeroom").path
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
        for file in ["Sources/homeroom-chaos/Nodes.swift", "Sources/homeroom-chaos/Nemesis.swift"] {
            used[file] = Set(Self.matches(#""(--[a-z][a-z0-9-]+)""#, in: try Self.read(file)))
        }
        #expect(used["Deploy/cluster-local.sh"]?.contains("--data-dir") == true, "found no node command line in cluster-local.sh")
        #expect(used["Sources/homeroom-chaos/Nemesis.swift"]?.contains("--clock-skew-ms") == true)
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
}
