import Foundation
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

    /// Keys made once order names exactly as comparing the strings does (the reference
    /// below cuts and lowercases at every comparison, as the order was first written).
    @Test func keysOrderAsTheStringsDo() {
        let seed = UInt64(ProcessInfo.processInfo.environment["HOMEROOM_SEED"] ?? "") ?? 20261203
        var rng = SplitMix64(seed: seed)
        let alphabet = Array("aAbBzZ  0012789éÉ-_")
        let names = (0..<300).map { _ in String((0..<Int.random(in: 0...8, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! }) }
            + ["99999999999999999999999", "99999999999999999998", "Student 2", "student 02"]
        var differing: [String] = []
        for a in names {
            for b in names where (NaturalOrder.Key(a) < NaturalOrder.Key(b)) != Self.reference(a, b) {
                differing.append("\(a.debugDescription) vs \(b.debugDescription)")
            }
        }
        #expect(differing.count == 0, "\(differing.prefix(5)); replay: HOMEROOM_SEED=\(seed) swift test --filter NaturalOrderTests")
    }

    static func reference(_ a: String, _ b: String) -> Bool {
        enum Chunk: Equatable { case text(String), number(UInt64, String) }
        func chunks(_ s: String) -> [Chunk] {
            var out: [Chunk] = [], current = "", digits = false
            func flush() {
                guard !current.isEmpty else { return }
                if digits, let value = UInt64(current) { out.append(.number(value, current)) } else { out.append(.text(current)) }
                current = ""
            }
            for character in s {
                let isDigit = character.isASCII && character.isNumber
                if isDigit != digits { flush(); digits = isDigit }
                current.append(character)
            }
            flush()
            return out
        }
        let x = chunks(a), y = chunks(b)
        var tiebreak: Bool?
        for (p, q) in zip(x, y) where p != q {
            switch (p, q) {
            case let (.number(m, mText), .number(n, nText)):
                if m != n { return m < n }
                if tiebreak == nil { tiebreak = mText < nText }
            case let (.text(s), .text(t)):
                if s.lowercased() != t.lowercased() { return s.lowercased() < t.lowercased() }
                if tiebreak == nil { tiebreak = s < t }
            case (.number, .text): return true
            case (.text, .number): return false
            }
        }
        if x.count != y.count { return x.count < y.count }
        return tiebreak ?? (a < b)
    }
}
