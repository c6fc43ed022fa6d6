@preconcurrency import Glibc
import Foundation

/// Saved contexts, as kubectl's: named sets of node addresses, a token and a room, one
/// of them current, so `homeroom roster` needs no flags. Stored as JSON in
/// `$HOMEROOM_CONFIG_DIR/contexts.json` (default `$XDG_CONFIG_HOME/homeroom`, else
/// `~/.config/homeroom`), mode 0600 (tokens are credentials), its folder 0700.
struct SavedContexts: Codable, Equatable {
    struct Context: Codable, Equatable {
        var nodes: [String]
        var token: String?
        var room: String?
    }

    var current: String?
    var contexts: [String: Context] = [:]

    static var directory: String {
        let environment = ProcessEnvironment.current
        if let dir = environment["HOMEROOM_CONFIG_DIR"], !dir.isEmpty { return dir }
        if let xdg = environment["XDG_CONFIG_HOME"], !xdg.isEmpty { return xdg + "/homeroom" }
        return (environment["HOME"] ?? ".") + "/.config/homeroom"
    }

    static var path: String { directory + "/contexts.json" }

    /// The saved contexts (none when the file does not exist).
    static func load() throws(CommandLineError) -> SavedContexts {
        guard let data = FileManager.default.contents(atPath: path) else { return SavedContexts() }
        do {
            return try JSONDecoder().decode(SavedContexts.self, from: data)
        } catch {
            throw .failure("\(path) is not a contexts file (\(error)): fix it or remove it")
        }
    }

    func save() throws(CommandLineError) {
        let directory = Self.directory
        if access(directory, F_OK) != 0 {
            // Parents as needed (~/.config may not exist yet), the last one private.
            do { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
                throw .failure("cannot create \(directory): \(error)")
            }
            chmod(directory, 0o700)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        guard let data = try? encoder.encode(self) else { throw .failure("cannot encode the contexts") }
        let temporary = Self.path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw .failure("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fchmod(fd, 0o600)
        close(fd)
        guard written == data.count, rename(temporary, Self.path) == 0 else {
            unlink(temporary)
            throw .failure("cannot write \(Self.path): \(String(cString: strerror(errno)))")
        }
    }

    /// The context commands use: `HOMEROOM_CONTEXT` if set, else the current one.
    static func active() -> (name: String, context: Context)? {
        guard let saved = try? load() else { return nil }
        let name = ProcessEnvironment.current["HOMEROOM_CONTEXT"].flatMap { $0.isEmpty ? nil : $0 } ?? saved.current
        guard let name, let context = saved.contexts[name] else { return nil }
        return (name, context)
    }
}
