import HomeroomContext
import HomeroomCore
import HomeroomNode
import HomeroomSupport

/// Where and as whom a room command joins: shared by join, roster and the one-shot actions.
struct RoomOptions {
    var room: String
    var nodes: [String]
    var role: Role
    var user: String
    var name: String
    var timeoutMillis: UInt64
    var logLevel: Logger.Level
    var token: String?
    var roleGiven = false
    var userGiven = false
    var nameGiven = false
    /// A one-shot action (it acts once and leaves), not `join` or `roster`.
    var oneShot = false

    static let help = """
          --room <id>            Room to join.                                   (HOMEROOM_ROOM)
          --node <address>       A node's listen address; repeatable, the others are fallbacks.
                                 e.g. tcp://127.0.0.1:7100                        (HOMEROOM_NODES, comma-separated)
          --as <role>            teacher, assistant, student or observer (default: the token's).
          --user <id>            Who you are in the room (default: the token's user, else the role's name).
          --name <name>          Display name (default: the user id).
          --token <token>        Join token, for nodes started with --token-key: it says the room,
                                 user and role (flags that disagree are refused).  (HOMEROOM_TOKEN)
          --tls-ca <file>        The authority that signed the node's certificate, for tls+tcp://
                                 addresses.                                       (HOMEROOM_TLS_CA)
          --timeout-ms <n>       How long to wait for a node's answer (default 1000).
          --log-level <level>    trace, debug, info, notice, warning, error (default warning).
        """

    static func read(_ reader: inout ArgumentReader, defaultRole: Role, defaultUser: String? = nil) throws(CommandLineError) -> RoomOptions {
        let environment = ProcessEnvironment.current
        var room = try reader.string("--room") ?? environment["HOMEROOM_ROOM"]
        // Every --node, in order (each may also be a comma list, as HOMEROOM_NODES is): the
        // first is tried first, the others are fallbacks.
        var nodes = try reader.strings("--node").flatMap { $0.split(separator: ",").map { String($0).trimmed } }.filter { !$0.isEmpty }
        if nodes.isEmpty, let list = environment["HOMEROOM_NODES"] {
            nodes = list.split(separator: ",").map { String($0).trimmed }.filter { !$0.isEmpty }
        }
        // Then the saved context (homeroom context), for what neither flags nor the environment say.
        let saved = SavedContexts.active()?.context
        if nodes.isEmpty, let saved { nodes = saved.nodes }
        let roleName = try reader.string("--as")
        let user = try reader.string("--user")
        let name = try reader.string("--name")
        let timeout = try reader.integer("--timeout-ms", in: UInt64(50)...UInt64(60_000)) ?? 1_000
        let levelName = try reader.string("--log-level") ?? "warning"
        let token = try reader.string("--token") ?? environment["HOMEROOM_TOKEN"] ?? saved?.token
        let authority = try reader.string("--tls-ca") ?? environment["HOMEROOM_TLS_CA"]

        // A token says who you are: its user, role and room are the defaults, and a flag
        // that says otherwise is a mistake to point out, not a request to honour.
        var claims: TokenClaims?
        if let token {
            guard let peeked = JoinToken.peek(token), let tokenRole = peeked.parsedRole else {
                throw .usage("--token is not a Homeroom join token (make one with `homeroom token create`)", usage: reader.usage)
            }
            if let user, user != peeked.user {
                throw .usage("the token is for user \(peeked.user), not \(user): drop --user (the token says who you are) or use \(user)'s token", usage: reader.usage)
            }
            if let roleName, Role(name: roleName) != tokenRole {
                throw .usage("the token is for a \(tokenRole), not a \(roleName): drop --as (the token says your role)", usage: reader.usage)
            }
            if peeked.room != "*" {
                if let given = room, given != peeked.room {
                    throw .usage("the token is for room \(peeked.room), not \(given): drop --room or use a token for \(given)", usage: reader.usage)
                }
                room = peeked.room
            }
            claims = peeked
        }
        // The context's room last: a token's own room comes first.
        if room == nil { room = saved?.room }
        guard let room else {
            throw .usage(claims == nil ? "missing --room (or HOMEROOM_ROOM): which room to join"
                                       : "missing --room (or HOMEROOM_ROOM): the token is for every room, so say which", usage: reader.usage)
        }
        if let problem = RoomID.validate(room) { throw .usage(problem, usage: reader.usage) }
        guard !nodes.isEmpty else {
            throw .usage("missing --node (or HOMEROOM_NODES): a node's address, e.g. tcp://127.0.0.1:7100", usage: reader.usage)
        }
        for node in nodes where !["tcp://", "tls+tcp://", "ipc://", "inproc://"].contains(where: { node.hasPrefix($0) }) {
            throw .usage("node address '\(node)' must start with tcp://, tls+tcp://, ipc:// or inproc://", usage: reader.usage)
        }
        try ClientTLS.configure(authority: authority, nodes: nodes, usage: reader.usage)
        var role = claims?.parsedRole ?? defaultRole
        if claims == nil, let roleName {
            guard let parsed = Role(name: roleName), parsed != .system else {
                throw .usage("unknown role '\(roleName)': use teacher, assistant, student or observer", usage: reader.usage)
            }
            role = parsed
        }
        guard let level = Logger.Level(name: levelName) else {
            throw .usage("unknown log level '\(levelName)': use trace, debug, info, notice, warning or error", usage: reader.usage)
        }
        let userID = claims?.user ?? user ?? defaultUser ?? role.description
        if userID.isEmpty || userID.utf8.count > 128 || userID.contains(where: { $0.isWhitespace }) {
            throw .usage("a user id is 1 to 128 characters without spaces, not '\(userID)'", usage: reader.usage)
        }
        return RoomOptions(room: room, nodes: nodes, role: role, user: userID, name: name ?? userID, timeoutMillis: timeout, logLevel: level, token: token,
                           roleGiven: roleName != nil || claims != nil, userGiven: user != nil || claims != nil, nameGiven: name != nil)
    }

    /// Changes the role when --as was not given (and the user and name with it, when not given).
    mutating func defaultRole(_ role: Role) {
        guard !roleGiven else { return }
        self.role = role
        if !userGiven { user = role.description }
        if !nameGiven { name = user }
    }

    /// Acts as the operator identity (`OperatorIdentity`): writes without joining.
    mutating func actAsOperator() {
        user = OperatorIdentity.user
        if !nameGiven { name = user }
    }

    var config: ClassroomConfig {
        // Without --name the join keeps the name the user has in the room (a new user shows its id).
        var config = ClassroomConfig(room: room, user: user, name: nameGiven ? name : "", role: role, nodes: nodes)
        config.requestTimeoutMillis = timeoutMillis
        // A script's next line (history, roster, "now 4") reads what the last one wrote.
        config.readsOwnWrites = true
        config.token = token
        return config
    }

    /// How a command is in the room: joined (a session others see, as `join`), or
    /// invisible (it reads and writes without a session: no join or leave in anyone's
    /// feed, no session record), always or when the user already joined the room once
    /// in this role (one-shot writes; a first one joins, since the node takes writes only
    /// from users it knows).
    enum Visibility { case joined, invisible, invisibleIfKnown }

    /// Joins (or reads, see `Visibility`), or fails with the context's code (exit 1).
    func join(_ visibility: Visibility = .joined) throws(CommandLineError) -> ContextPool {
        let logger = Logger(label: "homeroom", level: logLevel)
        // A one-shot that must join (presence set) as a user the room knows, without --as:
        // in the role the user has there (a sessionless read says which).
        if visibility == .joined, userGiven, !roleGiven, token == nil, user != OperatorIdentity.user, oneShot {
            let probe = try join(.invisible)
            let known = probe.user.row(user)?.info.role
            probe.close()
            if let known, known != role, known != .system {
                var asKnown = self
                asKnown.role = known
                asKnown.oneShot = false
                return try asKnown.join(.joined)
            }
        }
        if visibility != .joined {
            var quiet = config
            quiet.joinsWithSession = false
            let pool: ContextPool
            do {
                pool = try ContextPool(config: quiet, logger: logger)
                try pool.room.join()
            } catch {
                throw .failure("cannot join room \(room) as \(user) (\(role)): \(error.message) [\(error.code)]")
            }
            if visibility == .invisible || pool.user.row(user)?.info.role == role { return pool }
            // A user the room knows keeps the role it joined with, unless --as says otherwise
            // (then the node answers role-mismatch): `send --user ada` for a teacher ada.
            if !roleGiven, let known = pool.user.row(user)?.info.role, known != .system {
                pool.close()
                var asKnown = self
                asKnown.role = known
                return try asKnown.join(.invisible)
            }
            pool.close()
        }
        let pool: ContextPool
        do {
            pool = try ContextPool(config: config, logger: logger)
            try pool.room.join()
        } catch {
            throw .failure("cannot join room \(room) as \(user) (\(role)): \(error.message) [\(error.code)]")
        }
        return pool
    }
}
