@preconcurrency import Glibc
import HomeroomTestSupport
import Foundation
import Testing

/// One-shot actions and `homeroom roster` against a `homeroom node` child process.
@Suite(.serialized) struct OneShotTests {
    /// Runs the CLI (bounded) and records a timeout as a failure.
    static func run(_ arguments: [String]) throws -> CLI.Result {
        let result = try CLI.run(arguments)
        #expect(!result.timedOut, "\(arguments) timed out")
        return result
    }

    @Test func actionsPrintResultsAndRefusalsCarryCodes() throws {
        let node = try NodeChild(name: "cli-oneshot")
        let room = ["--room", "oneshot", "--node", node.listen]
        func run(_ words: [String]) throws -> CLI.Result { try Self.run(words + room) }
        #expect(try run(["room", "stage-limit", "1"]).stdout == "the stage now has 1 seats\n")
        for student in ["alice", "bob"] {
            let raised = try run(["hand", "up", "--user", student])
            #expect(raised.status == 0 && raised.stdout == "your hand is up\n", "\(raised.stderr)")
        }
        let staged = try run(["stage", "add", "alice"])
        #expect(staged.status == 0)
        #expect(staged.stdout == "alice on stage\n")

        let full = try run(["stage", "add", "bob"])
        #expect(full.status == 1)
        #expect(full.stdout.isEmpty)
        #expect(full.stderr.hasPrefix("Error: refused [stage-full]: the stage is full (1 seats)"))

        let selfPromotion = try run(["stage", "add", "bob", "--as", "student", "--user", "bob", "--json"])
        #expect(selfPromotion.status == 1)
        let refusal = try #require(try JSONSerialization.jsonObject(with: Data(selfPromotion.stdout.utf8)) as? [String: Any])
        #expect(refusal["ok"] as? Bool == false)
        #expect(refusal["code"] as? String == "not-allowed")

        let camera = try run(["camera", "on", "--user", "alice"])
        #expect(camera.stdout == "your camera is on (on stage, device on, not allowed to publish)\n")
        #expect(try run(["camera", "allow", "alice"]).stdout == "alice may publish the camera (live)\n")
        let reward = try run(["reward", "alice", "--amount", "3", "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(reward.stdout.utf8)) as? [String: Any])
        #expect(json["ok"] as? Bool == true)
        #expect((json["rewards"] as? [String: Int])?["alice"] == 3)
        #expect(try run(["reward", "alice", "bob", "2"]).stdout == "alice +2 (now 5), bob +2 (now 2)\n")
        #expect(try run(["board", "grant", "alice"]).status == 0)
        #expect(try run(["prop", "room", "set", "topic", "long", "division"]).stdout == "room topic = long division (revision 1, set revision 1)\n")
        #expect(try run(["prop", "room"]).stdout == "room topic = long division (revision 1, by @operator)\nset revision 1\n")
        #expect(try run(["hand", "down", "bob"]).stdout == "bob's hand is down\n")
        #expect(try run(["class", "start"]).status == 0)
        #expect(try run(["class", "end"]).status == 0)
        let backwards = try run(["class", "start"])
        #expect(backwards.status == 1 && backwards.stderr.contains("[class-state-backwards]"))

        // What the roster shows, as JSON and as text.
        let roster = try run(["roster", "--json"])
        #expect(roster.status == 0)
        let snapshot = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        #expect(snapshot["stage"] as? [String] == ["alice"])
        #expect(snapshot["hands"] as? [String] == ["alice"])
        let students = try #require(snapshot["students"] as? [[String: Any]])
        let alice = try #require(students.first { $0["user"] as? String == "alice" })
        // The registers' states, beside online: alice left (one-shots), her camera stays on for her return.
        #expect(alice["camera"] as? String == "live" && alice["mic"] as? String == "device-off" && alice["rewards"] as? Int == 5)
        #expect(alice["online"] as? Bool == false)
        #expect(alice["auth"] as? Bool == true)
        #expect((snapshot["class"] as? [String: Any])?["state"] as? String == "after")

        let text = try run(["roster"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("Stage 1/1  alice"))
        #expect(text.stdout.contains("class over"))
        let aliceLine = try #require(text.stdout.split(separator: "\n").first { $0.hasPrefix("alice") })
        // Offline, she publishes nothing: the table draws her camera off, never live (issue 42, item 7).
        #expect(aliceLine.hasPrefix("alice (offline)") && aliceLine.contains("on") && aliceLine.contains("yes")
                && aliceLine.contains("○ off") && !aliceLine.contains("● live") && aliceLine.hasSuffix("5"), "\(aliceLine)")
        #expect(!text.stdout.contains("\u{1B}"), "NO_COLOR and no terminal: no escapes")
    }

    /// A roster read is invisible, and a one-shot by a user who joined the room once
    /// writes without joining again: no session, nothing in anyone's feed.
    /// `--node` repeated keeps every address, in order: the first is tried first and the
    /// others are fallbacks (before, only the last one counted).
    @Test func everyNodeGivenIsAFallback() throws {
        let node = try NodeChild(name: "cli-fallback")
        // A loopback port nothing listens on.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let port = try #require(bindLoopback(probe))
        close(probe)
        let dead = "tcp://127.0.0.1:\(port)"
        #expect(try Self.run(["hand", "up", "--user", "bob", "--room", "fallback", "--node", node.listen]).status == 0)   // bob joins once
        for nodes in [[node.listen, dead], [dead, node.listen], ["\(dead),\(node.listen)"]] {
            let flags = nodes.flatMap { ["--node", $0] }
            let rewarded = try Self.run(["reward", "bob", "--user", "tess", "--room", "fallback"] + flags)
            #expect(rewarded.status == 0, "\(nodes): \(rewarded.stderr)")
        }
        let roster = try Self.run(["roster", "--json", "--room", "fallback", "--node", node.listen, "--node", dead])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any], "\(roster.stderr)")
        let bob = (json["students"] as? [[String: Any]])?.first { $0["user"] as? String == "bob" }
        #expect(bob?["rewards"] as? Int == 3)
    }

    @Test func rosterReadsAndRepeatedOneShotsLeaveNoSession() throws {
        let node = try NodeChild(name: "cli-invisible", extra: ["--http", "http://127.0.0.1:0"])
        let room = ["--room", "invisible", "--node", node.listen]
        #expect(try Self.run(["hand", "up", "--user", "bob"] + room).status == 0)   // bob joins once
        #expect(try Self.run(["reward", "bob", "--user", "tess"] + room).status == 0)   // so does teacher tess
        let joinsBefore = node.metric("homeroom_joins_total") ?? -1
        for _ in 0..<3 {
            #expect(try Self.run(["reward", "bob", "--user", "tess"] + room).status == 0)
            #expect(try Self.run(["hand", "down", "--user", "bob"] + room).status == 0)
        }
        let roster = try Self.run(["roster", "--json"] + room)
        #expect(roster.status == 0, "\(roster.stderr)")
        let joinsAfter = node.metric("homeroom_joins_total") ?? -1
        #expect(joinsBefore >= 2 && joinsAfter == joinsBefore, "one-shots by known users and roster reads joined: \(joinsBefore) -> \(joinsAfter)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        #expect(json["observers"] as? Int == 0, "the roster reader is not in the room")
        #expect(json["online"] as? Int == 0, "nobody stays online after one-shots")
        let bob = (json["students"] as? [[String: Any]])?.first { $0["user"] as? String == "bob" }
        #expect(bob?["rewards"] as? Int == 4)
        #expect(json["hands"] as? [String] == [])
        // Presence state needs a session: `presence set` joins (and leaves again).
        #expect(try Self.run(["presence", "set", "mood", "calm", "--user", "bob"] + room).status == 0)
        #expect((node.metric("homeroom_joins_total") ?? -1) == joinsAfter + 1)
    }

    /// `presence set --hold <s>` keeps its session, and so the state, for s seconds: others
    /// see it meanwhile, and it is gone once the command leaves (issue 42, item 3).
    @Test func aHeldPresenceLastsAsLongAsItsCommand() throws {
        let node = try NodeChild(name: "cli-hold")
        defer { node.stop() }
        let room = ["--room", "held", "--node", node.listen]
        let started = Date()
        let holder = try TerminalSession(["presence", "set", "mood", "ready", "--user", "bob", "--hold", "4"] + room)
        #expect(holder.waitFor("your presence mood = ready, held 4 s: presence lasts only while bob is connected"), "\(holder.plainTail)")
        let during = try Self.run(["presence"] + room)
        #expect(during.stdout.contains("bob (student): mood=ready"), "\(during.stdout) \(during.stderr)")
        #expect(holder.waitForExit(timeout: 15) == 0)
        #expect(Date().timeIntervalSince(started) >= 3.5, "it left before its hold was over")
        let after = try Self.run(["presence"] + room)
        #expect(after.stdout == "no one is online\n", "\(after.stdout)")
    }

    /// Without --user or a token, one-shots are the operator's: written without joining,
    /// as the role claimed, leaving no user, no session and no join in anyone's feed.
    @Test func oneShotsWithoutAUserAreTheOperatorsAndLeaveNoUser() throws {
        let node = try NodeChild(name: "cli-operator", extra: ["--http", "http://127.0.0.1:0"])
        defer { node.stop() }
        let room = ["--room", "operated", "--node", node.listen]
        #expect(try Self.run(["hand", "up", "--user", "bob"] + room).status == 0)
        let joinsBefore = node.metric("homeroom_joins_total") ?? -1
        for words in [["stage", "add", "bob"], ["camera", "allow", "bob"], ["reward", "bob", "--amount", "2"], ["send", "quiz at ten"],
                      ["whisper", "bob", "well done"], ["prop", "room", "set", "topic", "fractions"], ["mute", "bob"], ["history"]] {
            let result = try Self.run(words + room)
            #expect(result.status == 0, "\(words): \(result.stderr)")
        }
        #expect(node.metric("homeroom_joins_total") == joinsBefore, "the operator joined")
        let roster = try Self.run(["roster", "--json"] + room)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(roster.stdout.utf8)) as? [String: Any])
        let users = ((json["students"] as? [[String: Any]] ?? []) + (json["moderators"] as? [[String: Any]] ?? [])).compactMap { $0["user"] as? String }
        #expect(users == ["bob"], "only bob is in the room: \(users)")
        #expect(json["stage"] as? [String] == ["bob"])
        let bob = (json["students"] as? [[String: Any]])?.first
        #expect(bob?["rewards"] as? Int == 2 && bob?["camera"] as? String == "device-off", "allowed, device off: \(String(describing: bob))")
        // Its messages name it; bob reads the whisper from it.
        let history = try Self.run(["history", "--user", "bob"] + room).stdout
        #expect(history.contains("@operator: quiz at ten") && history.contains("well done"), "\(history)")
        #expect(try Self.run(["prop", "room", "get", "topic"] + room).stdout.contains("by @operator"))
        // Authorised like its role: as a student it may not put anyone on stage.
        let asStudent = try Self.run(["stage", "add", "bob", "--as", "student"] + room)
        #expect(asStudent.status == 1 && asStudent.stderr.contains("[not-allowed]"), "\(asStudent.stderr)")
        // It never joins, and its own hand or presence are refused.
        let join = try CLI.run(["join", "--user", "@operator", "--as", "teacher"] + room, stdin: "quit\n")
        #expect(join.status == 1 && join.stderr.contains("[invalid]") && join.stderr.contains("cannot join"), "\(join.stderr)")
        let ownHand = try Self.run(["hand", "up", "--user", "@operator"] + room)
        #expect(ownHand.status == 1 && ownHand.stderr.contains("[user-not-found]"), "\(ownHand.stderr)")
        // A teacher who joined keeps her role in one-shots that must join (presence set).
        #expect(try CLI.run(["join", "--as", "teacher", "--user", "tia"] + room, stdin: "quit\n").status == 0)
        let presence = try Self.run(["presence", "set", "mood", "ready", "--user", "tia"] + room)
        #expect(presence.status == 0, "\(presence.stderr)")
    }

    /// On a node that requires tokens, the operator needs a token for @operator.
    @Test func aClosedNodeTakesOperatorWritesWithAnOperatorToken() throws {
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-operator-keys-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: keys) }
        #expect(try CLI.run(["keys", "generate", "--out", keys]).status == 0)
        let node = try NodeChild(name: "cli-operator-closed", extra: ["--token-key", keys + "/token-signing.pub", "--cluster-key", keys + "/cluster.key"])
        defer { node.stop() }
        let created = try CLI.run(["token", "create", "--key", keys + "/token-signing.key", "--room", "closed-op", "--user", "@operator", "--role", "teacher"])
        let token = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(created.status == 0 && !token.isEmpty, "\(created.stderr)")
        let without = try Self.run(["room", "stage-limit", "3", "--room", "closed-op", "--node", node.listen])
        #expect(without.status == 1 && without.stderr.contains("[token-missing]"), "\(without.stderr)")
        let with = try Self.run(["room", "stage-limit", "3", "--token", token, "--node", node.listen])
        #expect(with.status == 0 && with.stdout.contains("3 seats"), "\(with.stdout) \(with.stderr)")
    }

    @Test func aPipedJoinExitsOneWhenALineWasRefused() throws {
        let node = try NodeChild(name: "cli-piped")
        let room = ["--room", "piped", "--node", node.listen]
        let fine = try CLI.run(["join", "--as", "student", "--user", "pia"] + room, stdin: "hand up\nhand down\n")
        #expect(fine.status == 0, "\(fine.stdout) \(fine.stderr)")
        let refused = try CLI.run(["join", "--as", "student", "--user", "pia"] + room, stdin: "hand up\nstage add pia\nfrobnicate\n")
        #expect(refused.status == 1, "a script must learn from the exit status: \(refused.stdout)")
        #expect(refused.stderr.contains("2 lines were refused"), "\(refused.stderr)")
        #expect(refused.stdout.contains("ok: your hand is up"), "the lines before and after still ran: \(refused.stdout)")
    }

    @Test func aPipedJoinReadsItsOwnWrites() throws {
        let node = try NodeChild(name: "cli-ryw")
        // The next line reads what the last one wrote, every time (it raced the stream).
        for round in 1...20 {
            let result = try CLI.run(["join", "--as", "teacher", "--user", "ada", "--room", "ryw-\(round)", "--node", node.listen],
                                     stdin: "send note-\(round)\nhistory\nroster\n")
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.contains("you: note-\(round)"), "round \(round): history lacks the message just sent: \(result.stdout)")
        }
    }

    @Test func aMessageBodyComesFromStandardInputOrAFile() throws {
        let node = try NodeChild(name: "cli-body")
        let room = ["--room", "body", "--node", node.listen]
        let piped = try CLI.run(["send", "--file", "-", "--user", "ada"] + room, stdin: "first line\nsecond line\n")
        #expect(piped.status == 0, "\(piped.stderr)")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("body-\(UInt32.random(in: 0...UInt32.max)).txt").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(String(repeating: "x", count: 40_000).utf8).write(to: URL(fileURLWithPath: path))
        let tooBig = try CLI.run(["send", "--file", path, "--user", "ada"] + room)
        #expect(tooBig.status == 1 && tooBig.stderr.contains("larger than 32 KiB"), "\(tooBig.stderr)")
        #expect(try CLI.run(["reward", "ada", "--file", path] + room).status == 64, "--file goes with send and whisper only")
        let history = try CLI.run(["history", "--json", "--user", "carl"] + room)
        #expect(history.stdout.contains("\"text\":\"first line\\nsecond line\""), "\(history.stdout)")
        // A long message is shortened in text lines (the JSON keeps it whole).
        let long = String(repeating: "y", count: 2_000)
        #expect(try CLI.run(["send", long, "--user", "ada"] + room).status == 0)
        let lines = try CLI.run(["history", "--user", "carl"] + room)
        #expect(lines.stdout.contains("… (+1500 characters: `history --json` shows the whole message)") && !lines.stdout.contains(long), "\(lines.stdout.prefix(300))")
        #expect(try CLI.run(["history", "--json", "--user", "carl"] + room).stdout.contains(long))
    }

    @Test func messagingCommandsSendWhisperReadModerateAndWriteConditionally() throws {
        let node = try NodeChild(name: "cli-messages")
        let room = ["--room", "messages", "--node", node.listen]
        func run(_ words: [String]) throws -> CLI.Result { try Self.run(words + room) }
        func json(_ result: CLI.Result) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "not JSON: \(result.stdout)")
        }
        // Bob must have joined once to be whispered to.
        // A one-shot's presence lasts as long as it does: it says the state is cleared again.
        #expect(try run(["presence", "set", "mood", "ready", "--user", "bob"]).stdout == "your presence mood = ready, and cleared again at once: "
            + "presence lasts only while bob is connected, and this command left.\nTo keep it, add --hold <seconds>, or set it inside "
            + "'homeroom join --user bob' (line: presence set mood ready)\n")
        let sent = try run(["send", "hello", "class", "--user", "ada"])
        #expect(sent.status == 0 && sent.stdout.hasPrefix("sent to the room (ada#"), "\(sent.stderr)")
        #expect(try run(["whisper", "bob", "see me after class", "--user", "ada"]).status == 0)
        #expect(try run(["send", "--type", "poll", "yes", "--user", "cy"]).status == 0)
        // Each user reads the history it may see: the whisper only for ada and bob.
        let carl = try json(try run(["history", "--json", "--user", "carl"]))
        let carlMessages = try #require(carl["messages"] as? [[String: Any]])
        #expect(carlMessages.compactMap { $0["text"] as? String } == ["hello class", "yes"])
        #expect(carlMessages.last?["type"] as? String == "poll")
        let bob = try run(["history", "--user", "bob", "--as", "student"])
        #expect(bob.stdout.contains("ada → you (whisper): see me after class"), "\(bob.stdout)")
        #expect(try run(["history", "1", "--user", "carl"]).stdout.hasSuffix("cy [poll]: yes\n"))
        // Moderation: a muted student is refused with a code, and unmuted again.
        #expect(try run(["mute", "cy"]).stdout == "chat muted for cy\n")
        let refused = try run(["send", "again", "--user", "cy"])
        #expect(refused.status == 1 && refused.stderr.contains("[muted]"), "\(refused.stderr)")
        #expect(try run(["mute", "--all"]).stdout == "chat muted for every student\n")
        #expect(try run(["unmute", "all"]).stdout == "chat unmuted for every student\n")
        #expect(try run(["mute", "cy", "--off"]).stdout == "chat unmuted for cy\n")
        #expect(try run(["send", "again", "--user", "cy"]).status == 0)
        let studentMute = try run(["mute", "ada", "--as", "student", "--user", "cy"])
        #expect(studentMute.status == 1 && studentMute.stderr.contains("[not-allowed]"))
        // Presence: who is online now (one-shot users have left again).
        let presence = try json(try run(["presence", "--json", "--user", "watcher"]))
        #expect((presence["online"] as? [[String: Any]])?.compactMap { $0["user"] as? String } == ["watcher"])
        // Properties with revisions and conditional writes.
        #expect(try run(["prop", "room", "set", "quiz", "q1", "--if-revision", "0"]).stdout == "room quiz = q1 (revision 1, set revision 1)\n")
        let stale = try run(["prop", "room", "set", "quiz", "q2", "--if-revision", "0"])
        #expect(stale.status == 1 && stale.stderr.contains("[revision-mismatch]"), "\(stale.stderr)")
        #expect(try run(["prop", "room", "set", "quiz", "q2", "--if-revision", "1"]).status == 0)
        let got = try json(try run(["prop", "room", "get", "quiz", "--json"]))
        #expect(got["value"] as? String == "q2" && got["revision"] as? Int == 2 && got["operator"] as? String == "@operator")
        // The whole set's revision: one more per write; a write conditional on it.
        let board = try json(try run(["prop", "room", "set", "board", "A", "--if-set-revision", "2", "--json"]))
        #expect(board["set_revision"] as? Int == 3 && board["revision"] as? Int == 1, "\(board)")
        let staleSet = try run(["prop", "room", "unset", "board", "--if-set-revision", "2"])
        #expect(staleSet.status == 1 && staleSet.stderr.contains("[revision-mismatch]") && staleSet.stderr.contains("set revision 3"), "\(staleSet.stderr)")
        #expect((try json(try run(["prop", "room", "--json"])))["set_revision"] as? Int == 3)
        let missing = try run(["prop", "room", "get", "nothing"])
        #expect(missing.status == 1 && missing.stderr.contains("[not-found]"))
        // The roster shows the latest messages.
        let roster = try json(try run(["roster", "--json", "--messages", "2"]))
        #expect((roster["messages"] as? [[String: Any]])?.compactMap { $0["text"] as? String } == ["yes", "again"])
        // Text from others never reaches the terminal as control sequences.
        #expect(try run(["send", "\u{1B}[2Jgotcha", "--user", "mallory"]).status == 0)
        let shown = try run(["history", "1"])
        #expect(shown.stdout.contains("gotcha") && !shown.stdout.contains("\u{1B}"), "\(shown.stdout)")
        // Bad input: a clear usage error, exit 64.
        let empty = try run(["send"])
        #expect(empty.status == 64 && empty.stderr.contains("use: send <text>"))
        let badRevision = try run(["prop", "room", "set", "quiz", "x", "--if-revision", "minus"])
        #expect(badRevision.status == 64)
    }

    @Test func rosterWatchWithoutATerminalPrintsAndEndsAfterItsDuration() throws {
        let node = try NodeChild(name: "cli-watch")
        let started = Date()
        // Ends by itself after its 2 s (not before), killed only past a bound no loaded machine reaches.
        let result = try CLI.run(["roster", "--watch", "--duration", "2", "--json", "--room", "watch", "--node", node.listen], timeout: 30)
        #expect(!result.timedOut, "the watch did not end after its duration")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Date().timeIntervalSince(started) >= 2, "it ended before its duration")
        let lines = result.stdout.split(separator: "\n")
        #expect(!lines.isEmpty)
        for line in lines { #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "not JSON: \(line)") }
    }
}
