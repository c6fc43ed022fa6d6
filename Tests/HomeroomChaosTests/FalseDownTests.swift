import HomeroomSupport
import Testing
@testable import homeroom_chaos

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

    @Test func onlyASilenceInsideAQuietWindowIsFalse() {
        let quiet: [(from: UInt64, to: UInt64)] = [(from: 10_000, to: 20_000)]
        // Silent since a moment inside the window, declared before it ended: false.
        let false1 = DeclaredDown(node: "n1", peer: "n2", silentFrom: 12_000, at: 14_000)
        // Silent since before the heal (a paused node waking, a partition's silence): explained.
        let explained = DeclaredDown(node: "n1", peer: "n3", silentFrom: 9_000, at: 11_000)
        // Declared after the next fault began: the fault may explain it.
        let late = DeclaredDown(node: "n1", peer: "n4", silentFrom: 18_500, at: 20_500)
        let found = FalseDowns.find([false1, explained, late], quietWindows: quiet)
        #expect(found.map(\.peer) == ["n2"])
    }
}
