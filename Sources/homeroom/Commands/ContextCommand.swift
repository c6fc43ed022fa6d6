/// `homeroom context`: saved node addresses, token and room (kubectl's contexts).
enum ContextCommand {
    static let usage = """
        OVERVIEW: Save node addresses, a token and a room under a name, and pick the current one.

        USAGE: homeroom context set <name> --node <address> [--node ...] [--token <token>] [--room <id>]
               homeroom context use <name>
               homeroom context list [--json]
               homeroom context delete <name>

        Commands take --node, --token and --room from the current context (or the one
        HOMEROOM_CONTEXT names) when neither a flag nor HOMEROOM_NODES, HOMEROOM_TOKEN or
        HOMEROOM_ROOM gives them. The file is contexts.json in $HOMEROOM_CONFIG_DIR
        (default $XDG_CONFIG_HOME/homeroom or ~/.config/homeroom), mode 600.

        OPTIONS:
          --node <address>     A node's listen address; repeatable (the others are fallbacks).
          --token <token>      A join token to send (see homeroom token create).
          --room <id>          The room commands act in.
          --json               list: one JSON object.
          -h, --help           Show help information.
        """

    static func run(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.first == "-h" || arguments.first == "--help" { print(usage); return }
            throw .usage("expected set, use, list or delete", usage: usage)
        }
        var reader = ArgumentReader(arguments.dropFirst(), usage: usage)
        if reader.wantsHelp { print(usage); return }
        var saved = try SavedContexts.load()
        switch action {
        case "set":
            let nodes = try reader.strings("--node").flatMap { $0.split(separator: ",").map { String($0).trimmed } }.filter { !$0.isEmpty }
            let token = try reader.string("--token"), room = try reader.string("--room")
            let name = try self.name(&reader)
            guard !nodes.isEmpty else { throw .usage("missing --node: a context needs at least one node address", usage: usage) }
            for node in nodes where !["tcp://", "tls+tcp://", "ipc://", "inproc://"].contains(where: { node.hasPrefix($0) }) {
                throw .usage("node address '\(node)' must start with tcp://, tls+tcp://, ipc:// or inproc://", usage: usage)
            }
            saved.contexts[name] = SavedContexts.Context(nodes: nodes, token: token, room: room)
            if saved.current == nil { saved.current = name }
            try saved.save()
            print("context \(name) saved\(saved.current == name ? " (current)" : "; `homeroom context use \(name)` makes it current")")
        case "use":
            let name = try self.name(&reader)
            guard saved.contexts[name] != nil else {
                throw .failure("no context named \(name): \(saved.contexts.isEmpty ? "save one with `homeroom context set`" : "saved ones are " + saved.contexts.keys.sorted().joined(separator: ", "))")
            }
            saved.current = name
            try saved.save()
            print("now using context \(name)")
        case "list":
            let json = reader.flag("--json")
            try reader.finish()
            if json {
                let rows = saved.contexts.keys.sorted().map { name -> JSONText in
                    let context = saved.contexts[name]!
                    return JSONText.object([("name", .string(name)), ("current", .bool(saved.current == name)),
                                            ("nodes", .array(context.nodes.map { .string($0) })), ("room", context.room.map { .string($0) } ?? .null),
                                            ("token", .bool(context.token != nil))])
                }
                print(JSONText.array(rows).rendered)
                return
            }
            if saved.contexts.isEmpty {
                print("(no contexts: save one with `homeroom context set <name> --node <address>`)")
                return
            }
            for name in saved.contexts.keys.sorted() {
                let context = saved.contexts[name]!
                let details = [context.nodes.joined(separator: ","), context.room.map { "room \($0)" }, context.token == nil ? nil : "token"]
                    .compactMap { $0 }.joined(separator: "  ")
                print("\(saved.current == name ? "*" : " ") \(name)  \(details)")
            }
        case "delete":
            let name = try self.name(&reader)
            guard saved.contexts.removeValue(forKey: name) != nil else { throw .failure("no context named \(name)") }
            if saved.current == name { saved.current = nil }
            try saved.save()
            print("context \(name) deleted")
        default:
            throw .usage("unknown action '\(action)': use set, use, list or delete", usage: usage)
        }
    }

    /// The one name left after the options.
    private static func name(_ reader: inout ArgumentReader) throws(CommandLineError) -> String {
        let names = try reader.positionals()
        guard names.count == 1, let name = names.first, !name.isEmpty else {
            throw .usage(names.isEmpty ? "missing the context's name" : "one context name, not \(names.count)", usage: usage)
        }
        return name
    }
}
