/// Names in the order people expect: runs of digits compare as numbers, so "Student 2"
/// comes before "Student 10"; otherwise case-insensitive, then exact, for a total order.
public enum NaturalOrder {
    public static func less(_ a: String, _ b: String) -> Bool {
        let x = chunks(a), y = chunks(b)
        // Case and leading zeros only break ties, after everything else compared equal.
        var tiebreak: Bool?
        for (p, q) in zip(x, y) where p != q {
            switch (p, q) {
            case let (.number(m, mText), .number(n, nText)):
                if m != n { return m < n }
                if tiebreak == nil { tiebreak = mText < nText }
            case let (.text(s), .text(t)):
                let (ls, lt) = (s.lowercased(), t.lowercased())
                if ls != lt { return ls < lt }
                if tiebreak == nil { tiebreak = s < t }
            case (.number, .text): return true
            case (.text, .number): return false
            }
        }
        if x.count != y.count { return x.count < y.count }
        return tiebreak ?? (a < b)
    }

    private enum Chunk: Equatable {
        case text(String)
        case number(UInt64, String)
    }

    private static func chunks(_ s: String) -> [Chunk] {
        var out: [Chunk] = []
        var current = ""
        var digits = false
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
}
