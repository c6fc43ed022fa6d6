import HomeroomContext
import HomeroomCore

/// The one-shot subcommands for scripts: each joins the room, performs one action,
/// prints what happened, and leaves. `homeroom stage add bob --room maths --node tcp://...`
enum ActionCommand {
    static let summaries: [String: String] = [
        "stage": "Put users on stage or take them off (teacher, assistant).",
        "board": "Grant or revoke whiteboard authorization.",
        "camera": "Turn your camera on or off, or allow or deny a user's camera.",
        "mic": "Turn your microphone on or off, or allow or deny a user's microphone.",
        "mute-all": "Turn off every microphone privilege granted so far.",
        "carousel": "Start, stop or show the stage carousel: students take turns on stage.",
        "reward": "Reward one or more users.",
        "kick": "Kick a user out of the room once (they may join again).",
        "ban": "Kick a user out of the room for good.",
        "hand": "Raise or lower your hand, or lower someone's hand.",
        "class": "Start or end the class.",
        "schedule": "Set the class length, and when it starts.",
        "room": "Rename the room, or set its type, stage limit or hand limit.",
        "prop": "List, set or delete properties of the room or of a user.",
        "lock": "Acquire, release or revoke a room lock, or list them, with fencing.",
        "group": "Breakout groups: create, fill at random, move users, broadcast, end.",
        "name": "Change your display name.",
        "send": "Send a room message to everyone in the room.",
        "whisper": "Send a peer message to one user of the room, wherever it is connected.",
        "history": "Print the room's message history (newest last), or set its limit, or clear it.",
        "presence": "List online users with their temporary state, or set yours.",
        "mute": "Mute a user's chat, or every student's (teacher, assistant).",
        "unmute": "Unmute a user's chat, or every student's (teacher, assistant).",
    ]

    /// The options of one verb beyond the room options and --json.
    static let verbOptions: [String: [(name: String, line: String)]] = {
        let file = ("--file", "--file <path>          The message body from a file (\"-\": standard input; 32 KiB at most).")
        let type = ("--type", "--type <type>          The message type (default chat; e.g. poll, quiz).")
        let mute = [("--all", "--all                  Every student's chat, not one user's (the same as the word all)."),
                    ("--off", "--off                  Unmute instead.")]
        return [
            "reward": [("--amount", "--amount <n>           How much to reward each user, 1-1000 (default 1).")],
            "carousel": [("--interval", "--interval <s>         Seconds per turn, 10-99 (default 60)."),
                         ("--range", "--range <range>        all (every online student, the default) or camera-on."),
                         ("--order", "--order <order>        join-order (the default) or random (a shuffle per turn).")],
            "prop": [("--if-revision", "--if-revision <n>      Only if the key is still at revision n (0: never written), else revision-mismatch."),
                     ("--if-set-revision", "--if-set-revision <n>  Only if the owner's whole property set is still at set revision n, else revision-mismatch."),
                     ("--fence", "--fence <lock>:<n>     Guarded by a lock you hold, with the fence lock acquire printed.")],
            "lock": [("--ttl", "--ttl <s>              How long the grant outlives your presence, 10-300 (default 60)."),
                     ("--wait", "--wait <s>             Wait up to s seconds for the holder to let go (default 0: refused lock-held).")],
            "send": [type, file],
            "whisper": [type, file],
            "history": [("--limit", "--limit <n>            How many of the newest messages to print, 1-10000 (default 20).")],
            "mute": mute,
            "unmute": mute,
        ]
    }()

    static func usage(_ verb: String) -> String {
        var keptPrevious = false
        let lines = Action.grammar.split(separator: "\n").filter { line in
            let text = line.drop { $0 == " " }
            // A line indented past the verb column continues the one above it.
            let continuation = line.count - text.count > 4
            let kept = continuation ? keptPrevious
                : text.hasPrefix(verb + " ") || text == verb || (verb == "prop" && text.hasPrefix("prop "))
                    || (verb == "mic" && text.hasPrefix("camera")) || (verb == "unmute" && text.hasPrefix("mute "))
                    || (verb == "mute" && text.hasPrefix("unmute "))
            keptPrevious = kept
            return kept
        }
        let extra = verbOptions[verb, default: []].map { "  " + $0.line + "\n" }.joined()
        return """
            OVERVIEW: \(summaries[verb] ?? "") Joins the room, acts once, prints the result, and leaves.

            USAGE: homeroom \(verb) <arguments> --room <id> --node <address> [--as <role>] [--user <id>] [--json]

            ACTIONS:
            \(lines.joined(separator: "\n"))

            OPTIONS:
            \(RoomOptions.help)
            \(extra)  --json                 Print the result as one JSON object.
              -h, --help             Show help information.

            Without --user or a token, an action on others (and send, whisper) is the operator's
            (@operator, teacher unless --as says otherwise): written without joining, so no user
            appears in the room. Acting on yourself (me, your hand, camera, microphone, name,
            presence) needs --user. With --user, the user acts in the role it has in the room; a new
            user is a teacher, or a student for its own hand, camera, microphone, name, messages and
            presence. Refused actions exit 1 with the refusal code, for example:
            Error: refused [stage-full]: the stage is full (6 seats): take someone off the stage first
            """
    }

    static func run(_ verb: String, _ arguments: ArraySlice<String>) throws(CommandLineError) {
        let usage = usage(verb)
        var reader = ArgumentReader(arguments, usage: usage)
        if reader.wantsHelp { print(usage); return }
        let json = reader.flag("--json")
        // Each verb takes its own options only (the ones its help lists).
        let own = Set(verbOptions[verb, default: []].map(\.name))
        let amount = own.contains("--amount") ? try reader.integer("--amount", in: 1...1_000) : nil
        let ifRevision = own.contains("--if-revision") ? try reader.integer("--if-revision", in: UInt64(0)...UInt64.max) : nil
        let ifSetRevision = own.contains("--if-set-revision") ? try reader.integer("--if-set-revision", in: UInt64(0)...UInt64.max) : nil
        let messageType = own.contains("--type") ? try reader.string("--type") : nil
        let interval = own.contains("--interval") ? try reader.integer("--interval", in: 10...99) : nil
        let fence = own.contains("--fence") ? try reader.string("--fence") : nil
        let ttl = own.contains("--ttl") ? try reader.integer("--ttl", in: 10...300) : nil
        let wait = own.contains("--wait") ? try reader.integer("--wait", in: 0...3_600) : nil
        let range = own.contains("--range") ? try reader.string("--range") : nil
        let order = own.contains("--order") ? try reader.string("--order") : nil
        let bodyFile = own.contains("--file") ? try reader.string("--file") : nil
        let limit = own.contains("--limit") ? try reader.integer("--limit", in: 1...10_000) : nil
        let all = own.contains("--all") && reader.flag("--all")
        let off = own.contains("--off") && reader.flag("--off")
        var options = try RoomOptions.read(&reader, defaultRole: .teacher)
        options.oneShot = true
        var words = [verb] + (try reader.positionals())
        if all { words.append("all") }
        if off { words.append("--off") }
        if let amount { words += ["--amount", String(amount)] }
        if let ifRevision { words += ["--if-revision", String(ifRevision)] }
        if let ifSetRevision { words += ["--if-set-revision", String(ifSetRevision)] }
        if let messageType { words += ["--type", messageType] }
        if let interval { words += ["--interval", String(interval)] }
        if let fence { words += ["--fence", fence] }
        if let ttl { words += ["--ttl", String(ttl)] }
        if let wait { words += ["--wait", String(wait)] }
        if let range { words += ["--range", range] }
        if let order { words += ["--order", order] }
        if let limit { words += ["--limit", String(limit)] }
        if let bodyFile {
            guard verb == "send" || verb == "whisper" else { throw .usage("--file goes with send and whisper", usage: usage) }
            // The message body from a file, or "-" for standard input (a shell argument
            // cannot carry a large or multi-line message well).
            let bytes = try FileText.read(bodyFile, what: "the message file", limit: 32 << 10)
            var text = String(decoding: bytes, as: UTF8.self)
            if text.hasSuffix("\n") { text.removeLast() }
            guard !text.isEmpty else { throw .usage("the message in \(bodyFile == "-" ? "standard input" : bodyFile) is empty", usage: usage) }
            words.append(text)
        }
        // Without a token or --user, an action on others (and a message) is the operator's:
        // written without joining, so no "teacher" user appears and nobody's feed shows a
        // join. Your own hand, camera, microphone, name and presence need a user.
        let asOperator = options.token == nil && !options.userGiven && !words.contains("me")
            && (!Action.actsOnSelf(words) || verb == "send" || verb == "whisper")
        if Action.actsOnSelf(words) && verb != "send" && verb != "whisper" && options.token == nil && !options.userGiven {
            // Not someone made up: a user named after its role would join the room.
            throw .usage("homeroom \(words.prefix(2).joined(separator: " ")) acts for a user: say whose with --user <id> (or a --token)", usage: usage)
        }
        if asOperator {
            options.actAsOperator()
        } else if Action.actsOnSelf(words) {
            options.defaultRole(.student)
        }
        let action: Action
        do {
            action = try Action.parse(words, local: options.user)
        } catch {
            throw .usage(error.description, usage: usage)
        }
        // Presence state lives with a session; everything else needs none.
        let needsSession: Bool
        if case .presenceSet = action { needsSession = true } else { needsSession = false }
        // The operator (no --user, or a token for @operator) never joins.
        let pool = try options.join(needsSession ? .joined : options.user == OperatorIdentity.user ? .invisible : .invisibleIfKnown)
        defer { pool.close() }
        do {
            let outcome = try action.perform(on: pool)
            if json {
                print(JSONText.object([("ok", .bool(true)), ("action", .string(words.joined(separator: " "))), ("room", .string(options.room)),
                                       ("user", .string(options.user)), ("result", .string(outcome.text))] + outcome.fields).rendered)
            } else {
                print(outcome.text)
            }
        } catch {
            if json {
                print(JSONText.object([("ok", .bool(false)), ("action", .string(words.joined(separator: " "))),
                                       ("code", .string(error.code)), ("message", .string(error.message))]).rendered)
            }
            throw .failure("refused [\(error.code)]: \(error.message)")
        }
    }
}
