import Foundation
import Testing
import HomeroomContext
@testable import HomeroomTerminalUI

/// Golden output: rendered text compared with `Goldens.expected`. Escapes are shown as
/// "␛" and trailing spaces as "␠", so the goldens are readable and survive editors.
///
/// To regenerate after an intended change: run with HOMEROOM_GOLDEN_DIR=<dir>; each
/// golden test writes its actual output to <dir>/<name>.txt, to paste into Goldens.swift.
enum Golden {
    static func visible(_ text: String) -> String {
        text.replacingOccurrences(of: "\u{1B}", with: "␛").split(separator: "\n", omittingEmptySubsequences: false).map { line in
            var line = String(line)
            var trailing = 0
            while line.hasSuffix(" ") { line.removeLast(); trailing += 1 }
            return line + String(repeating: "␠", count: trailing)
        }.joined(separator: "\n")
    }

    static func check(_ name: String, _ actual: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let shown = visible(actual)
        if let directory = ProcessInfo.processInfo.environment["HOMEROOM_GOLDEN_DIR"] {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try? shown.write(toFile: directory + "/" + name + ".txt", atomically: true, encoding: .utf8)
        }
        guard let expected = Goldens.expected[name] else {
            Issue.record("no golden named \(name); the output was:\n\(shown)", sourceLocation: sourceLocation)
            return
        }
        if shown != expected {
            let expectedLines = expected.split(separator: "\n", omittingEmptySubsequences: false)
            let shownLines = shown.split(separator: "\n", omittingEmptySubsequences: false)
            let first = zip(expectedLines, shownLines).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(expectedLines.count, shownLines.count)
            Issue.record("""
                golden \(name) differs from line \(first + 1):
                expected: \(first < expectedLines.count ? String(expectedLines[first]) : "<end>")
                actual:   \(first < shownLines.count ? String(shownLines[first]) : "<end>")
                whole output:
                \(shown)
                """, sourceLocation: sourceLocation)
        }
    }

    static func render(_ snapshot: RoomSnapshot, colors: Bool, width: Int = 72, height: Int? = nil, theme: Theme = .default,
                       status: [String] = []) -> String {
        Scenes.render(RenderContext(snapshot: snapshot, nowMillis: Fixtures.now, theme: theme,
                                    capabilities: TerminalCapabilities(colors: colors, width: width, height: height), status: status))
    }

    static func render(_ component: any Component, _ snapshot: RoomSnapshot, colors: Bool, width: Int = 72, theme: Theme = .default) -> String {
        let context = RenderContext(snapshot: snapshot, nowMillis: Fixtures.now, theme: theme,
                                    capabilities: TerminalCapabilities(colors: colors, width: width))
        return component.render(context).map { $0.render(width: width, colors: colors) }.joined(separator: "\n")
    }
}
