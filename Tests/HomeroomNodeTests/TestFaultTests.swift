import HomeroomCore
import Testing
@testable import HomeroomNode

/// The test-only fault `lose-acknowledged-writes` (what `homeroom verify` must catch):
/// every 4th client write is lost with a dot no replica ever covers; leaves are never lost.
@Suite struct TestFaultTests {
    @Test func everyFourthWriteIsLostWithADotNoReplicaReaches() {
        let loss = WriteLoss()
        let origin = ReplicaID(7)
        var lost: [Dot] = []
        for _ in 0..<12 {
            if let dot = loss.lose(.setName(user: "ada", name: "Ada"), origin: origin) { lost.append(dot) }
        }
        #expect(lost.count == 3)
        #expect(lost.allSatisfy { $0.origin == origin && $0.sequence > TestFault.lostSequenceBase })
        #expect(Set(lost).count == 3, "each lost write has a dot of its own")
    }

    @Test func leavesAreNeverLostNorCounted() {
        let loss = WriteLoss()
        for _ in 0..<8 { #expect(loss.lose(.leaveSession(user: "ada", session: "s1"), origin: ReplicaID(1)) == nil) }
        // The leaves did not count: the 4th write after them is the first lost.
        let picks = (0..<4).map { _ in loss.lose(.setHand(user: "ada", raised: true), origin: ReplicaID(1)) }
        #expect(picks.prefix(3).allSatisfy { $0 == nil } && picks[3] != nil)
    }

    @Test func theNodeTakesTheFaultOnlyByName() {
        #expect(TestFault(rawValue: "lose-acknowledged-writes") == .loseAcknowledgedWrites)
        #expect(NodeConfig(name: "n", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: []).testFault == nil,
                "a node breaks no promise unless told")
    }
}
