import HomeroomContext
import HomeroomCore
import HomeroomSupport

/// The one-shot subcommands for scripts: each joins the room, performs one action,
/// prints what happened, and leaves. `homeroom stage add bob --room maths --node tcp://...`
enum ActionCommand {
    static let summaries: [String: String] = [
        "stage": "Put users on stage or take them off, or invite one (teacher, assistant).",
        "invitation": "Show, accept or decline your invitation to the stage.",
        "board": "Grant or revoke whiteboard authorization.",
        "camera": "Turn your camera on or off, allow or deny a user's camera, or mute every student's.",
        "mic": "Turn your microphone on or off, allow or deny a user's microphone, or mute every student's.",
        "mute-all": "Turn off every microphone privilege granted so far.",
        "carousel": "Start, stop or show the stage carousel: students take turns on stage.",
        "reward": "Reward one or more users.",
        "kick": "Kick a user out of the room once (they may join again).",
        "ban": "Kick a user out of the room for good.",
        "hand": "Raise or lower your hand, lower someone's hand, or switch hand raising on or off.",
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
            "presence": [("--hold", "--hold <s>             After presence set, stay connected s seconds (1-86400), so the state\n"
                              + "                         lasts that long; then leave (Ctrl-C leaves early).")],
            "mute": mute,
            "unmute": mute,
            "stage": [("--seconds", "--seconds <s>          With stage invite: how long the invitation stays open, 5-600 (default 30).")],
            "hand": [("--auto-stage", "--auto-stage           With hand on: a student's raise puts it on stage while a seat is free.")],
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

            \(verb == "presence" ? presenceNote : "")Without --user or a token, an action on others (and send, whisper) is the operator's
            (@operator, teacher unless --as says otherwise): written without joining, so no user
            appears in the room. Acting on yourself (me, your hand, camera, microphone, name,
            presence) needs --user or a token: without one it is refused (exit 64), saying what
            to add. With --user, the user acts in the role it has in the room; a new
            user is a teacher, or a student for its own hand, camera, microphone, name, messages and
            presence. Refused actions exit 1 with the refusal code, for example:
            Error: refused [stage-full]: the stage is full (6 seats): take someone off the stage first
            """
    }

    /// What `homeroom presence --help` adds: how long a one-shot's presence lasts.
    static let presenceNote = """
        Presence state lasts only while the session that set it is connected: a one-shot
        presence set leaves at once, so the state is cleared again (it says so, and exits 0).
        --hold <s> keeps the session, and so the state, for s seconds.


        """

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
        let seconds = own.contains("--seconds") ? try reader.integer("--seconds", in: 5...600) : nil
        let hold = own.contains("--hold") ? try reader.integer("--hold", in: UInt64(1)...UInt64(86_400)) : nil
        let all = own.contains("--all") && reader.flag("--all")
        let off = own.contains("--off") && reader.flag("--off")
        let autoStage = own.contains("--auto-stage") && reader.flag("--auto-stage")
        var options = try RoomOptions.read(&reader, defaultRole: .teacher)
        options.oneShot = true
        var words = [verb] + (try reader.positionals())
        if all { words.append("all") }
        if off { words.append("--off") }
        if autoStage { words.append("--auto-stage") }
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
        if let seconds { words += ["--seconds", String(seconds)] }
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
        let identified = options.token != nil || options.userGiven
        let selfAction = Action.actsOnSelf(words) && verb != "send" && verb != "whisper"
        let asOperator = !identified && !words.contains("me") && !selfAction
        if !identified && (selfAction || words.contains("me")) {
            // Not someone made up: a user named after its role ("student", "teacher") would join the room.
            throw .usage(selfActionFix(words), usage: usage)
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
        // What a presence set leaves behind: nothing once this command leaves, unless it holds.
        var setsPresence: (key: String, value: String)?
        if case let .presenceSet(key, value?) = action { setsPresence = (key, value) }
        if hold != nil && setsPresence == nil { throw .usage("--hold goes with presence set <key> <value>", usage: usage) }
        // The operator (no --user, or a token for @operator) never joins.
        let pool = try options.join(needsSession ? .joined : options.user == OperatorIdentity.user ? .invisible : .invisibleIfKnown)
        defer { pool.close() }
        do {
            var outcome = try action.perform(on: pool)
            if let (key, value) = setsPresence {
                outcome = presenceOutcome(outcome, key: key, value: value, user: options.user, hold: hold)
            }
            if json {
                print(JSONText.object([("ok", .bool(true)), ("action", .string(words.joined(separator: " "))), ("room", .string(options.room)),
                                       ("user", .string(options.user)), ("result", .string(outcome.text))] + outcome.fields).rendered)
            } else {
                print(outcome.text)
            }
            if let hold { holdSession(seconds: hold) }
        } catch {
            if json {
                print(JSONText.object([("ok", .bool(false)), ("action", .string(words.joined(separator: " "))),
                                       ("code", .string(error.code)), ("message", .string(error.message))]).rendered)
            }
            throw .failure("refused [\(error.code)]: \(error.message)")
        }
    }

    /// The refusal of a self-action (or "me") without an identity: the command as typed,
    /// and the same command with what it lacks.
    static func selfActionFix(_ words: [String]) -> String {
        let typed = "homeroom " + words.map(shellWord).joined(separator: " ")
        let byMe = words.contains("me") && !Action.actsOnSelf(words)
        let head = ["camera", "mic", "hand", "presence"].contains(words.first ?? "") ? words.prefix(2) : words.prefix(1)
        let what = byMe ? "'me' names a user" : "\(head.joined(separator: " ")) acts as a user"
        return "\(what), and no one was named: add --user <id>, as in: \(typed) --user bob "
            + "(or --token <token>, or HOMEROOM_TOKEN); without either, a one-shot acts as @operator, "
            + (byMe ? "who is not in the room" : "who has no \(Self.selfNoun(words))")
    }

    private static func selfNoun(_ words: [String]) -> String {
        switch words.first {
        case "camera": return "camera"
        case "mic": return "microphone"
        case "hand": return "hand"
        case "name": return "name in the room"
        case "presence": return "presence"
        default: return "place in the room"
        }
    }

    /// A word as a shell would need it typed again.
    static func shellWord(_ word: String) -> String {
        word.isEmpty || word.contains(where: { " \"'$`\\|&;<>()*?[]#~{}".contains($0) || $0.isWhitespace })
            ? "'" + word.replacing("'", with: "'\\''") + "'" : word
    }

    /// A one-shot presence set, said as it is: the state lasts while this command's session
    /// does, so without --hold it is gone again as the command leaves.
    static func presenceOutcome(_ outcome: ActionOutcome, key: String, value: String, user: UserID, hold: UInt64?) -> ActionOutcome {
        var result = outcome
        if let hold {
            result.text += ", held \(hold) s: presence lasts only while \(user) is connected, so this command stays "
                + "connected that long, then leaves and the state is cleared (Ctrl-C leaves early)"
        } else {
            let line = (["presence", "set", key] + value.split(separator: " ", omittingEmptySubsequences: false).map(String.init))
                .map(shellWord).joined(separator: " ")
            result.text += ", and cleared again at once: presence lasts only while \(user) is connected, and this command left.\n"
                + "To keep it, add --hold <seconds>, or set it inside 'homeroom join --user \(user)' (line: \(line))"
        }
        result.fields.append(("held_seconds", .int(Int64(hold ?? 0))))
        return result
    }

    /// Keeps the session (and its presence state) for `seconds`, or until Ctrl-C.
    static func holdSession(seconds: UInt64) {
        Console.catchInterrupts()
        let deadline = WallClock.monotonicMillis() + seconds * 1_000
        while !Console.interrupted && WallClock.monotonicMillis() < deadline { sleepMillis(100) }
    }
}
