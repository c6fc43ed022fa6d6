import Foundation
import Testing
import HomeroomTestSupport

/// `homeroom verify` against real 3-node clusters (issue 43, item 3): a healthy cluster
/// (nodes that require tokens, so verify signs its own) passes with acknowledged writes
/// counted and none lost; a cluster with one node started with the test-only fault that
/// loses acknowledged writes fails, and the verdict names the lost writes.
@Suite(.serialized) struct VerifyProcessTests {
    static func cluster(_ label: String, extra: [String] = [], faulty: [String] = []) throws -> [NodeChild] {
        let first = try NodeChild(name: "\(label)-1", extra: extra)
        let second = try NodeChild(name: "\(label)-2", seeds: [first.listen], extra: extra + faulty)
        let third = try NodeChild(name: "\(label)-3", seeds: [first.listen], extra: extra)
        return [first, second, third]
    }

    static func verify(_ nodes: [NodeChild], _ extra: [String] = []) throws -> CLI.Result {
        try CLI.run(["verify", "--seconds", "8", "--seed", "43", "--storm", "10"] + nodes.flatMap { ["--node", $0.listen] } + extra, timeout: 90)
    }

    @Test func aHealthyClusterPassesWithWritesCounted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-verify-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let generated = try CLI.run(["keys", "generate", "--out", directory])
        #expect(generated.status == 0, "\(generated.stderr)")
        let nodes = try Self.cluster("vok", extra: ["--token-key", directory + "/token-signing.pub"])
        defer { nodes.forEach { $0.stop() } }
        // Without the key, the nodes refuse verify's clients: a run that could not be made (2), said so.
        let keyless = try Self.verify(nodes, ["--seconds", "5"])
        #expect(keyless.status == 2 && keyless.stdout.hasPrefix("homeroom verify ERROR:"), "\(keyless.stdout)\n\(keyless.stderr)")

        let run = try Self.verify(nodes, ["--key", directory + "/token-signing.key"])
        #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
        let verdict = run.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(verdict.hasPrefix("homeroom verify PASS: ") && verdict.contains("lost 0"), "\(verdict)")
        // Not vacuous: writes were acknowledged (above the floor verify itself enforces), the storm ran.
        let acknowledged = Int(verdict.dropFirst("homeroom verify PASS: ".count).prefix { $0.isNumber }) ?? 0
        #expect(acknowledged >= 100, "\(run.stdout)")
        #expect(run.stdout.contains("[ok  ] floor: ") && run.stdout.contains("[ok  ] join-storm: 10 clients joined at once"), "\(run.stdout)")
        #expect(run.stdout.contains("[ok  ] no-lost-writes: "), "\(run.stdout)")
    }

    @Test func aClusterThatLosesAcknowledgedWritesFails() throws {
        // The fault is refused unless confirmed.
        let unconfirmed = try CLI.run(["node", "--name", "x", "--listen", "tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0",
                                       "--test-fault", "lose-acknowledged-writes"])
        #expect(unconfirmed.status == 64 && unconfirmed.stderr.contains("--test-only"), "\(unconfirmed.stderr)")

        let nodes = try Self.cluster("vlost", faulty: ["--test-fault", "lose-acknowledged-writes", "--test-only"])
        defer { nodes.forEach { $0.stop() } }
        #expect(nodes[1].log.contains("TEST FAULT ON"), "\(nodes[1].log)")
        let run = try Self.verify(nodes, ["--json"])
        #expect(run.status == 1, "\(run.stdout)\n\(run.stderr)")
        let report = try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
        let verdict = report?["verdict"] as? String ?? ""
        #expect(report?["result"] as? String == "fail" && verdict.hasPrefix("FAIL: ") && verdict.contains("acknowledged writes lost"), "\(run.stdout)")
        let writes = report?["writes"] as? [String: Any]
        #expect((writes?["lost"] as? Int ?? 0) > 0, "\(run.stdout)")
    }
}
