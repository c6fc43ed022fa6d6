/// Finds where a JSON text stops being JSON, for error messages with a line and a
/// column (Foundation's decoder says only that the data is corrupted).
enum JSONSyntax {
    struct Problem: Equatable {
        var line: Int
        var column: Int
        var expected: String
        var description: String { "line \(line), column \(column): expected \(expected)" }
    }

    /// The first syntax error, or nil when the text is well-formed JSON.
    static func firstProblem(_ bytes: [UInt8]) -> Problem? {
        var scanner = Scanner(bytes: bytes)
        do throws(Problem) {
            scanner.skipSpace()
            try scanner.value(depth: 0)
            scanner.skipSpace()
            if scanner.index < bytes.count { throw scanner.problem("the end of the text") }
            return nil
        } catch {
            return error
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        func problem(_ expected: String) -> Problem {
            var line = 1, column = 1
            for byte in bytes[..<min(index, bytes.count)] {
                if byte == 0x0a { line += 1; column = 1 } else if byte & 0xc0 != 0x80 { column += 1 }
            }
            return Problem(line: line, column: column, expected: expected)
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let c = current, c == 0x20 || c == 0x0a || c == 0x0d || c == 0x09 { index += 1 }
        }

        mutating func expect(_ byte: UInt8, _ what: String) throws(Problem) {
            skipSpace()
            guard current == byte else { throw problem(what) }
            index += 1
        }

        mutating func value(depth: Int) throws(Problem) {
            guard depth < 64 else { throw problem("less nesting") }
            skipSpace()
            switch current {
            case UInt8(ascii: "{"):
                index += 1
                skipSpace()
                if current == UInt8(ascii: "}") { index += 1; return }
                while true {
                    skipSpace()
                    guard current == UInt8(ascii: "\"") else { throw problem("a key in double quotes") }
                    try string()
                    try expect(UInt8(ascii: ":"), "':' after the key")
                    try value(depth: depth + 1)
                    skipSpace()
                    if current == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "}"), "',' or '}'")
                    return
                }
            case UInt8(ascii: "["):
                index += 1
                skipSpace()
                if current == UInt8(ascii: "]") { index += 1; return }
                while true {
                    try value(depth: depth + 1)
                    skipSpace()
                    if current == UInt8(ascii: ",") { index += 1; continue }
                    try expect(UInt8(ascii: "]"), "',' or ']'")
                    return
                }
            case UInt8(ascii: "\""): try string()
            case UInt8(ascii: "t"): try word("true")
            case UInt8(ascii: "f"): try word("false")
            case UInt8(ascii: "n"): try word("null")
            case let c? where c == UInt8(ascii: "-") || (c >= 0x30 && c <= 0x39): number()
            default: throw problem("a value (a string, number, object, array, true, false or null)")
            }
        }

        mutating func string() throws(Problem) {
            index += 1
            while let c = current {
                index += 1
                if c == UInt8(ascii: "\"") { return }
                if c == UInt8(ascii: "\\") {
                    guard current != nil else { break }
                    index += 1
                } else if c < 0x20 {
                    index -= 1
                    throw problem("no control character inside a string (write \\n for a newline)")
                }
            }
            throw problem("the closing '\"' of the string")
        }

        mutating func word(_ text: String) throws(Problem) {
            for byte in text.utf8 {
                guard current == byte else { throw problem("'\(text)'") }
                index += 1
            }
        }

        mutating func number() {
            while let c = current, (c >= 0x30 && c <= 0x39) || c == UInt8(ascii: "-") || c == UInt8(ascii: "+")
                || c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") { index += 1 }
        }
    }
}

extension JSONSyntax.Problem: Error {}
