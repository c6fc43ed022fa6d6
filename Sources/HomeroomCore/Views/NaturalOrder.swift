/// Names in the order people expect: runs of digits compare as numbers, so "Student 2"
/// comes before "Student 10"; otherwise case-insensitive, then exact, for a total order.
public enum NaturalOrder {
    public static func less(_ a: String, _ b: String) -> Bool { Key(a) < Key(b) }

    /// A string cut into its chunks once (text lowercased, digit runs parsed), so sorting
    /// many names compares keys without cutting and lowercasing them at every comparison
    /// (a lecture hall's first roster frame: 100,000 names, about 1.7 million comparisons).
    public struct Key: Comparable, Sendable {
        public let string: String
        private let chunks: [Chunk]

        public init(_ string: String) {
            self.string = string
            self.chunks = NaturalOrder.chunks(string)
        }

        public static func == (a: Key, b: Key) -> Bool { a.string == b.string }

        public static func < (a: Key, b: Key) -> Bool {
            // Case and leading zeros only break ties, after everything else compared equal.
            var tiebreak: Bool?
            for (p, q) in zip(a.chunks, b.chunks) where p != q {
                switch (p, q) {
                case let (.number(m, mText), .number(n, nText)):
                    if m != n { return m < n }
                    if tiebreak == nil { tiebreak = mText < nText }
                case let (.text(s, ls), .text(t, lt)):
                    if ls != lt { return ls < lt }
                    if tiebreak == nil { tiebreak = s < t }
                case (.number, .text): return true
                case (.text, .number): return false
                }
            }
            if a.chunks.count != b.chunks.count { return a.chunks.count < b.chunks.count }
            return tiebreak ?? (a.string < b.string)
        }
    }

    private enum Chunk: Equatable, Sendable {
        /// The text as written, and lowercased.
        case text(String, String)
        case number(UInt64, String)

        static func == (a: Chunk, b: Chunk) -> Bool {
            switch (a, b) {
            case let (.text(s, _), .text(t, _)): s == t
            case let (.number(m, mText), .number(n, nText)): m == n && mText == nText
            default: false
            }
        }
    }

    private static func chunks(_ s: String) -> [Chunk] {
        if s.utf8.allSatisfy({ $0 < 0x80 }) { return asciiChunks(s) }
        var out: [Chunk] = []
        var current = ""
        var digits = false
        func flush() {
            guard !current.isEmpty else { return }
            if digits, let value = UInt64(current) { out.append(.number(value, current)) } else { out.append(.text(current, current.lowercased())) }
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

    /// The same chunks for an ASCII name (most are), cut from its bytes: a digit run is a
    /// run of bytes 0-9, and lowercasing maps A-Z alone, as `lowercased()` does for ASCII.
    private static func asciiChunks(_ s: String) -> [Chunk] {
        let bytes = Array(s.utf8)
        var out: [Chunk] = []
        var start = 0
        while start < bytes.count {
            let digits = isDigit(bytes[start])
            var end = start + 1
            while end < bytes.count && isDigit(bytes[end]) == digits { end += 1 }
            let run = bytes[start..<end]
            let text = String(decoding: run, as: UTF8.self)
            if digits, let value = UInt64(text) {
                out.append(.number(value, text))
            } else {
                let hasUpper = run.contains { $0 >= 0x41 && $0 <= 0x5A }
                out.append(.text(text, hasUpper ? String(decoding: run.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self) : text))
            }
            start = end
        }
        return out
    }

    @inline(__always)
    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
}
