import HomeroomNode
import HomeroomWire

/// `homeroom where-now`: which rooms a user has a live session in (Signaling's `whereNow`).
enum WhereNowCommand {
    static let usage = """
        OVERVIEW: Which rooms a user is in now (has a live session in), across the cluster.

        USAGE: homeroom where-now --user <id> --node <address> --token <token> [--json]

        The node asked answers from its rooms and asks its live peers (docs/PROTOCOL.md,
        "Where now"); at most 100 rooms are listed, sorted. It needs a join token for
        every room (`homeroom token create --room '*'`): a teacher's or assistant's asks
        about anyone, another role's only about its own user. Nodes without --token-key
        answer no one.

        OPTIONS:
          --user <id>          The user to look for.
          --node <address>     A node's listen address (HOMEROOM_NODES: the first one).
          --token <token>      A join token for every room ("*").            (HOMEROOM_TOKEN)
          --tls-ca <file>      The authority that signed the node's certificate, for a
                               tls+tcp:// address.                        (HOMEROOM_TLS_CA)
          --timeout-ms <n>     How long to wait for the node (default 3000: it waits up
                               to 1 s for its peers).
          --json               One JSON object.
          -h, --help           Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        guard let user = try reader.string("--user"), !user.isEmpty else {
            throw .usage("missing --user: the user to look for", usage: usage)
        }
        let (address, token, timeout, json) = try ClusterCommand.common(&reader, defaultTimeout: 3_000)
        guard let token else {
            throw .usage("missing --token (or HOMEROOM_TOKEN): where-now needs a join token for every room (`homeroom token create --room '*'`)", usage: usage)
        }
        let answer: WireMessage.WhereNowReply
        do {
            answer = try NodeProbe.whereNow(address, user: user, token: token, timeoutMillis: timeout)
        } catch {
            throw .failure("cannot ask \(address): \(error.description) [\(error.code)]")
        }
        if json {
            print(JSONText.object([("user", .string(user)), ("rooms", .array(answer.rooms.map { .string($0) })),
                                   ("truncated", .bool(answer.truncated)), ("unanswered_nodes", .int(Int64(answer.unanswered)))]).rendered)
            return
        }
        if answer.rooms.isEmpty {
            print("\(user) is in no room now")
        } else {
            print("\(user) is in \(answer.rooms.count)\(answer.truncated ? "+" : "") room\(answer.rooms.count == 1 ? "" : "s"): " + answer.rooms.joined(separator: ", "))
        }
        if answer.truncated { print("(only the first \(answer.rooms.count) rooms, sorted, are listed)") }
        if answer.unanswered > 0 { print("(\(answer.unanswered) node\(answer.unanswered == 1 ? "" : "s") did not answer in time: their rooms may be missing)") }
    }
}
