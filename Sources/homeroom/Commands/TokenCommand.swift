import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// `homeroom token create`: a signed join token, as LiveKit's `lk token create` does.
enum TokenCommand {
    static let usage = """
        OVERVIEW: Create a signed join token for one user in one room.

        USAGE: homeroom token create --key <file> --room <room> --user <id> --role <role> [--app <id>] [--ttl <seconds>] [--json]

        OPTIONS:
          --key <file>      The Ed25519 secret key (token-signing.key, mode 600).
          --room <room>     Room id, or '*' for every room.
          --user <id>       The user the token names.
          --role <role>     teacher, assistant, student or observer.
          --app <id>        Application id (default homeroom; nodes check it, --app).
          --ttl <seconds>   Lifetime (default 3600, at most 30 days).
          --privilege <p>   An extra privilege to record; repeatable.
          --json            Print the token and its claims as JSON.
          -h, --help        Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        guard arguments.first == "create" else {
            if arguments.first == "-h" || arguments.first == "--help" { print(usage); return }
            throw .usage("expected 'homeroom token create'", usage: usage)
        }
        var reader = ArgumentReader(arguments.dropFirst(), usage: usage)
        if reader.wantsHelp { print(usage); return }
        guard let keyPath = try reader.string("--key") else { throw .usage("missing --key <file>", usage: usage) }
        guard let room = try reader.string("--room") else { throw .usage("missing --room <room>", usage: usage) }
        guard let user = try reader.string("--user") else { throw .usage("missing --user <id>", usage: usage) }
        guard let roleName = try reader.string("--role") else { throw .usage("missing --role <role>", usage: usage) }
        guard let role = Role(name: roleName), role != .system else {
            throw .usage("unknown role '\(roleName)': use teacher, assistant, student or observer", usage: usage)
        }
        let app = try reader.string("--app") ?? "homeroom"
        let ttl = try reader.integer("--ttl", in: Int64(1)...Int64(30 * 86_400)) ?? 3600
        if ttl > 86_400 {
            Console.error("warning: a node refuses tokens valid for longer than its --token-max-lifetime (86400 s unless raised): this one is valid for \(ttl) s")
        }
        let privileges = try reader.strings("--privilege")
        let json = reader.flag("--json")
        try reader.finish()
        let keys: SigningKeys
        do {
            keys = try SigningKeys(secret: KeyFiles.read(keyPath, secret: true))
        } catch {
            throw .failure(error.description)
        }
        let now = Int64(WallClock.nowMillis() / 1000)
        let claims = TokenClaims(app: app, room: room, user: user, role: role, privileges: privileges, issuedAt: now, expiresAt: now + ttl)
        let token = JoinToken.create(claims, keys: keys)
        if json {
            print("{\"token\":\"\(token)\",\"app\":\"\(app)\",\"room\":\"\(room)\",\"user\":\"\(user)\",\"role\":\"\(role)\",\"iat\":\(now),\"exp\":\(now + ttl)}")
        } else {
            print(token)
        }
    }
}
