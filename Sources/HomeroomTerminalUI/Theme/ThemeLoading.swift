import FoundationEssentials

/// Why a theme file cannot be used, with the key path and what to write instead.
public struct ThemeError: Error, Equatable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension Theme {
    /// Parses a theme: unknown keys are errors (a typo never passes silently), missing
    /// keys take the default.
    public static func load(json bytes: [UInt8]) throws(ThemeError) -> Theme {
        let data = Data(bytes)
        let tree: JSONValue
        do {
            tree = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            if let problem = JSONSyntax.firstProblem(bytes) { throw ThemeError("the theme is not valid JSON: \(problem.description)") }
            throw ThemeError("the theme is not valid JSON: \(error)")
        }
        guard case .object = tree else { throw ThemeError("a theme is a JSON object, as `homeroom theme print` writes") }
        if let unknown = tree.firstUnknownKey(comparedTo: defaultTree, path: "") { throw ThemeError(unknown) }
        do {
            return try JSONDecoder().decode(Theme.self, from: data)
        } catch let DecodingError.dataCorrupted(context) {
            throw ThemeError("\(path(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.typeMismatch(type, context) {
            throw ThemeError("\(path(context.codingPath)): expected \(describe(type))")
        } catch let DecodingError.valueNotFound(type, context) {
            throw ThemeError("\(path(context.codingPath)): expected \(describe(type)), found null")
        } catch {
            throw ThemeError("the theme cannot be read: \(error)")
        }
    }

    /// Pretty JSON with sorted keys: what `homeroom theme print` writes.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private static let defaultTree: JSONValue = {
        let data = (try? JSONEncoder().encode(Theme.default)) ?? Data()
        return (try? JSONDecoder().decode(JSONValue.self, from: data)) ?? .object([:])
    }()

    private static func path(_ codingPath: [CodingKey]) -> String {
        let text = codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return text.hasPrefix(".") ? String(text.dropFirst()) : (text.isEmpty ? "theme" : text)
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: return "true or false"
        case is Int.Type: return "a whole number"
        case is String.Type: return "a string"
        default: return "\(type)"
        }
    }
}

/// Any JSON value, to compare a theme's keys with the default's.
enum JSONValue: Decodable, Equatable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null }
        else if let value = try? c.decode(Bool.self) { self = .bool(value) }
        else if let value = try? c.decode(Double.self) { self = .number(value) }
        else if let value = try? c.decode(String.self) { self = .string(value) }
        else if let value = try? c.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try c.decode([String: JSONValue].self)) }
    }

    /// The first key of `self` that `reference` does not have, as an error message.
    func firstUnknownKey(comparedTo reference: JSONValue, path: String) -> String? {
        guard case let .object(fields) = self, case let .object(known) = reference else { return nil }
        for key in fields.keys.sorted() {
            let here = path.isEmpty ? key : path + "." + key
            guard let expected = known[key] else {
                return "unknown key '\(here)': known keys here are " + known.keys.sorted().joined(separator: ", ")
            }
            if let problem = fields[key]!.firstUnknownKey(comparedTo: expected, path: here) { return problem }
        }
        return nil
    }
}
