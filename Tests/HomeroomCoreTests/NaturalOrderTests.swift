import Testing
import HomeroomCore

@Suite struct NaturalOrderTests {
    @Test func numbersInNamesCompareAsNumbers() {
        let names = ["Student 10", "student 2", "Student 1", "Student 11", "Ada", "Student 2", "Student 02", "Zoe", "Student"]
        let sorted = names.sorted(by: NaturalOrder.less)
        #expect(sorted == ["Ada", "Student", "Student 1", "Student 02", "Student 2", "student 2", "Student 10", "Student 11", "Zoe"])
        // A total order: irreflexive and asymmetric on every pair.
        for a in names {
            #expect(!NaturalOrder.less(a, a))
            for b in names where a != b { #expect(NaturalOrder.less(a, b) != NaturalOrder.less(b, a), "\(a) vs \(b)") }
        }
    }
}
