import HomeroomSupport
import Testing
@testable import HomeroomChaosKit

/// The no-false-down check reads "peer declared down" lines from node logs and places
/// each silence among the faults: it must find a down that fell in a quiet window and
/// leave alone the ones a fault explains.
@Suite struct FalseDownTests {
    /// The line as a node writes it (text logs, as homeroom-chaos starts its nodes).
    static func line(address: String, silentMillis: UInt64, monotonicMillis: UInt64) -> String {
        let (logger, capture) = Logger.capturing(label: "homeroom", level: .info)
        logger.with("node", "n1").notice("peer declared down", ["peer": "abc", "address": address,
                                                               "silent_ms": "\(silentMillis)", "monotonic_ms": "\(monotonicMillis)"])
        return capture.all.joined(separator: "\n")
    }

    @Test func aDownLineIsReadInTheHarnessClock() throws {
        let log = "==== homeroom-chaos: start #1\n" + Self.line(address: "tcp://10.77.0.2:7000", silentMillis: 2_000, monotonicMillis: 1_012_500)
        let downs = DeclaredDown.parse(log: log, node: "n1", names: ["tcp://10.77.0.2:7000": "n2"], origin: 1_000_000)
        let down = try #require(downs.first)
        #expect(downs.count == 1)
        #expect(down.peer == "n2")
        #expect(down.at == 12_500)
        #expect(down.silentFrom == 10_500)
    }

    @Test func aDownIsFalseUnlessAFaultTouchedItsPairDuringTheSilence() {
        let spans = [FaultSpan(kind: .isolate, plannedAt: 0, affected: [2], from: 10_000, to: 14_000),
                     FaultSpan(kind: .halves, plannedAt: 1, affected: nil, from: 30_000, to: 33_000)]
        let index = ["n1": 0, "n2": 1, "n3": 2, "n4": 3]
        let downs = [
            DeclaredDown(node: "n1", peer: "n3", silentFrom: 11_000, at: 13_000),   // n3 isolated: explained
            DeclaredDown(node: "n1", peer: "n2", silentFrom: 11_000, at: 13_000),   // nothing touched n1 or n2: false
            DeclaredDown(node: "n1", peer: "n3", silentFrom: 14_500, at: 16_500),   // silent only after the heal: false
            DeclaredDown(node: "n2", peer: "n4", silentFrom: 29_000, at: 31_000),   // a partition may cut any pair: explained
            DeclaredDown(node: "n4", peer: "n1", silentFrom: 38_000, at: 40_000),   // the harness was stopping the nodes
        ]
        let found = FalseDowns.find(downs, spans: spans, index: index, until: 39_000)
        #expect(found.map { "\($0.node)>\($0.peer)@\($0.at)" } == ["n1>n2@13000", "n1>n3@16500"])
    }
}
