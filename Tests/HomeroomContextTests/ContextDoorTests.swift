import Foundation
import Testing

/// The contexts are the only door between a UI and the engine: a UI (the terminal UI,
/// the web UI, the CLI's screens) imports the contexts and the support target, never the node, and
/// no public declaration of the contexts names a type of the node.
@Suite struct ContextDoorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func swiftFiles(_ folder: String) throws -> [(path: String, text: String)] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        return try walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted().map {
            ("\(folder)/\($0)", try String(contentsOf: base.appendingPathComponent($0), encoding: .utf8))
        }
    }

    @Test func noPublicContextDeclarationNamesANodeType() throws {
        let node = try Self.swiftFiles("Sources/HomeroomNode")
        #expect(node.count > 20, "the node's sources were not found under \(Self.root.path)")
        let declaration = try Regex(#"public (?:final class|class|struct|enum|protocol|typealias) ([A-Za-z]+)"#)
        var nodeTypes = Set<String>()
        for file in node { for match in file.text.matches(of: declaration) { nodeTypes.insert(String(match.output[1].substring ?? "")) } }
        #expect(nodeTypes.contains("RoomClient") && nodeTypes.contains("ClientError"))
        let context = try Self.swiftFiles("Sources/HomeroomContext")
        #expect(!context.isEmpty)
        var leaks: [String] = []
        for file in context {
            for (number, line) in file.text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains("public ") && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                let words = Set(line.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init))
                // Context's own types that share a node type's name are declared here, not used from there.
                let named = words.intersection(nodeTypes).filter { name in !line.contains("enum \(name)") && !line.contains("struct \(name)") }
                if !named.isEmpty { leaks.append("\(file.path):\(number + 1) names \(named.sorted())") }
            }
        }
        #expect(leaks.isEmpty, "\(leaks.joined(separator: "\n"))")
    }

    @Test func theUIAndTheCLIScreensDoNotImportTheNode() throws {
        let screens = try Self.swiftFiles("Sources/HomeroomTerminalUI")
            + Self.swiftFiles("Sources/HomeroomWeb")
            + Self.swiftFiles("Sources/homeroom/Terminal")
            + Self.swiftFiles("Sources/homeroom/Commands").filter {
                $0.path.hasSuffix("RosterCommand.swift") || $0.path.hasSuffix("JoinCommand.swift") || $0.path.hasSuffix("WebCommand.swift")
            }
        #expect(screens.count > 30)
        let importing = screens.filter { $0.text.contains("import HomeroomNode") }.map(\.path)
        #expect(importing.isEmpty, "\(importing)")
    }
}
