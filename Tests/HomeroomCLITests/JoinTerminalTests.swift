import HomeroomTestSupport
import Foundation
import Testing

/// End to end: `homeroom join` in a pseudo-terminal, as a teacher at a keyboard, against
/// two `homeroom node` processes; then what `homeroom roster` shows (once, and live).
@Suite(.serialized) struct JoinTerminalTests {
    @Test func aTeacherAtATerminalRunsTheClassAndTheRosterShowsIt() throws {
        let first = try NodeChild(name: "cli-join-1")
        let second = try NodeChild(name: "cli-join-2", seeds: [first.listen])
        let room = ["--room", "e2e", "--node", second.listen]
        for student in ["alice", "bob"] {
            let joined = try CLI.run(["hand", "up", "--user", student, "--name", student.capitalized, "--room", "e2e", "--node", first.listen])
            #expect(joined.status == 0, "\(joined.stderr)")
        }

        let teacher = try TerminalSession(["join", "--as", "teacher", "--user", "ada", "--name", "Ada", "--type", "small-classroom"] + room + ["--node", first.listen])
        #expect(teacher.waitFor("e2e ada (teacher)> "), "no prompt: \(teacher.shown)")
        teacher.send("room stage-limit 1\n")
        #expect(teacher.waitFor("ok: the stage now has 1 seats"))
        teacher.send("stage add alice\n")
        #expect(teacher.waitFor("ok: Alice on stage"))
        teacher.send("stage add bob\n")
        #expect(teacher.waitFor("refused [stage-full]: the stage is full (1 seats)"), "\(teacher.shown)")
        teacher.send("camera allow alice\n")
        #expect(teacher.waitFor("ok: Alice may publish the camera"))
        teacher.send("reward alice 4\n")
        #expect(teacher.waitFor("ok: Alice +4 (now 4)"))
        teacher.send("hand down alice\n")
        #expect(teacher.waitFor("ok: Alice's hand is down"))
        teacher.send("frobnicate\n")
        #expect(teacher.waitFor("unknown action 'frobnicate' (type 'help' for commands)"))

        // A student acts elsewhere; the teacher's session shows it as it happens.
        let camera = try CLI.run(["camera", "on", "--user", "alice", "--name", "Alice", "--room", "e2e", "--node", first.listen])
        #expect(camera.status == 0)
        // Alice acted through a one-shot and is gone: her register is live, nothing is published.
        #expect(teacher.waitFor("· Alice camera: live (offline: nothing is published until they are back)"), "\(teacher.shown)")

        // Chat both ways: a student's message and whisper show up; the teacher answers.
        #expect(try CLI.run(["send", "is", "this", "on?", "--user", "bob", "--name", "Bob", "--room", "e2e", "--node", first.listen]).status == 0)
        #expect(teacher.waitFor("Bob: is this on?"), "\(teacher.shown)")
        #expect(try CLI.run(["whisper", "ada", "psst", "--user", "bob", "--name", "Bob", "--room", "e2e", "--node", second.listen]).status == 0)
        #expect(teacher.waitFor("Bob → you (whisper): psst"), "\(teacher.shown)")
        teacher.send("send yes, loud and clear\n")
        #expect(teacher.waitFor("ok: sent to the room (ada#"))
        #expect(teacher.waitFor("you: yes, loud and clear"), "\(teacher.shown)")
        teacher.send("mute bob\n")
        #expect(teacher.waitFor("ok: chat muted for Bob"), "\(teacher.shown)")
        // The room's microphone mute: said as done, and as the event every client sees.
        teacher.send("mic mute\n")
        #expect(teacher.waitFor("ok: every student's microphone is muted: students cannot turn it on until you unmute it"), "\(teacher.shown)")
        #expect(teacher.waitFor("every student's microphone is muted by the teacher (students cannot turn it on)"), "\(teacher.shown)")
        // An invitation to the stage: said as done; the roster shows it pending to the teacher.
        teacher.send("stage invite bob --seconds 60\n")
        #expect(teacher.waitFor("ok: Bob is invited to the stage for 60 s (they answer with invitation accept|decline)"), "\(teacher.shown)")

        teacher.send("roster\n")
        #expect(teacher.waitFor("Invited: Bob "), "\(teacher.shown)")
        // The roster arrives in several writes: wait for each line, not only the header.
        #expect(teacher.waitFor("Rewards"), "\(teacher.shown)")
        #expect(teacher.shown.contains("Stage 1/1"))
        // On a terminal the roster is in colour; the one-shot students are offline, so dimmed.
        #expect(teacher.waitFor("\u{1B}[2;90mAlice (offline)"), "\(teacher.shown)")
        // The teacher is on screen in a small classroom too (issue 42, item 7).
        #expect(teacher.waitFor("Ada (you)"), "\(teacher.shown)")

        // What `homeroom roster` shows, through the other node. Alice's camera is live by
        // its registers, but she is offline and publishes nothing: drawn off, never live
        // (issue 42, item 7); --json keeps the registers' state beside online false.
        let roster = try CLI.run(["roster", "--room", "e2e", "--node", first.listen])
        #expect(roster.status == 0)
        let alice = try #require(roster.stdout.split(separator: "\n").first { $0.hasPrefix("Alice") }, "\(roster.stdout)")
        #expect(alice.hasPrefix("Alice (offline)") && alice.contains("○ off") && !alice.contains("● live") && alice.hasSuffix("4"), "\(alice)")
        #expect(roster.stdout.contains("Hands 1  Bob"))
        #expect(roster.stdout.contains("Muted by the teacher: every student's microphone"), "\(roster.stdout)")
        #expect(roster.stdout.contains("Teacher  Ada (offline)  camera ·  mic ·") || roster.stdout.contains("Teacher  Ada  camera ·  mic ·"),
                "\(roster.stdout)")
        let json = try CLI.run(["roster", "--json", "--room", "e2e", "--node", first.listen])
        #expect(json.stdout.contains(#""user":"alice","name":"Alice","role":"student","online":false,"stage":"on","auth":false,"camera":"live""#),
                "\(json.stdout)")

        // Bob declines through the other node: the teacher's session hears it.
        let declined = try CLI.run(["invitation", "decline", "--user", "bob", "--room", "e2e", "--node", second.listen])
        #expect(declined.status == 0 && declined.stdout == "you declined the invitation to the stage\n", "\(declined.stdout) \(declined.stderr)")
        #expect(teacher.waitFor("Bob declined the invitation to the stage"), "\(teacher.shown)")

        teacher.send("quit\n")
        #expect(teacher.waitForExit() == 0)
        #expect(teacher.shown.contains("left e2e"))
    }

    @Test func theLiveRosterDrawsFullScreenAndLeavesOnQ() throws {
        let node = try NodeChild(name: "cli-live")
        #expect(try CLI.run(["hand", "up", "--user", "carol", "--name", "Carol", "--room", "live", "--node", node.listen]).status == 0)
        let watch = try TerminalSession(["roster", "--watch", "--room", "live", "--node", node.listen], columns: 90, rows: 30)
        #expect(watch.waitFor("Carol"), "\(watch.shown)")
        #expect(watch.shown.contains("Hands 1"))
        #expect(watch.shown.contains("\u{1B}[?1049h"), "enters the alternate screen")
        #expect(watch.shown.contains("\u{1B}[97;44m"), "colours on a terminal (the state bar)")
        // A change elsewhere is drawn without a key press.
        #expect(try CLI.run(["stage", "add", "carol", "--room", "live", "--node", node.listen]).status == 0)
        #expect(watch.waitFor("Stage 1/6"), "\(watch.shown)")
        watch.send("q")
        #expect(watch.waitForExit() == 0)
        #expect(watch.shown.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"), "restores the screen")
    }

    @Test func ctrlCEndsTheLiveRosterWithExit130AndARestoredScreen() throws {
        let node = try NodeChild(name: "cli-sigint")
        let watch = try TerminalSession(["roster", "--watch", "--room", "sig", "--node", node.listen], columns: 90, rows: 30)
        #expect(watch.waitFor("Stage"), "\(watch.shown)")
        kill(watch.process.processIdentifier, SIGINT)
        #expect(watch.waitForExit() == 130, "Ctrl-C must end the live view with 130, as shells expect")
        #expect(watch.shown.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"), "restores the screen")
    }

    @Test func theLiveRosterHealsWhenItsNodeComesBack() throws {
        let listen = "tcp://127.0.0.1:\(try freeLoopbackPort())", publish = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        let pinned = ["--listen", listen, "--publish", publish]
        var node = try NodeChild(name: "cli-heal", extra: pinned)
        #expect(try CLI.run(["hand", "up", "--user", "carol", "--name", "Carol", "--room", "heal", "--node", listen]).status == 0)
        let watch = try TerminalSession(["roster", "--watch", "--room", "heal", "--node", listen, "--log-level", "info"], columns: 90, rows: 30)
        #expect(watch.waitFor("Carol"), "\(watch.shown)")
        node.crash()
        #expect(watch.waitFor("reconnecting as", timeout: 20), "the view never said it lost the node: \(watch.shown.suffix(300).debugDescription)")
        // Every node failed a round: it keeps trying by itself, on the schedule (2, 4, 8, 16 s, then every 30 s).
        #expect(watch.waitFor("trying the nodes again", timeout: 30), "no retry after giving up: \(watch.shown.suffix(300).debugDescription)")
        // The node is back (a new process on the same addresses): the view heals with no key pressed.
        node = try NodeChild(name: "cli-heal", extra: pinned)
        defer { node.stop() }
        #expect(try CLI.run(["hand", "up", "--user", "dave", "--name", "Dave", "--room", "heal", "--node", listen]).status == 0)
        #expect(watch.waitFor("Dave", timeout: 20), "the view did not reconnect: \(watch.shown.suffix(400))")
        watch.send("q")
        #expect(watch.waitForExit() == 0)
    }

    @Test func ctrlCWhileAJoinIsStillConnectingExits130AtOnce() throws {
        // Port 9 on loopback: nothing answers, so the join would wait out its 60 s timeout.
        let join = try TerminalSession(["join", "--room", "r", "--user", "u", "--node", "tcp://127.0.0.1:9", "--timeout-ms", "60000"])
        // Ctrl-C once it catches SIGINT (before that, the signal would kill it outright: not
        // what a person at the terminal meets, but what a fixed sleep on a loaded machine did).
        #expect(eventually(30) { NodeProcess.catches(SIGINT, pid: join.process.processIdentifier) }, "the join never caught SIGINT: \(join.shown)")
        let sent = Date()
        kill(join.process.processIdentifier, SIGINT)
        #expect(join.waitForExit(timeout: 30) == 130, "Ctrl-C while connecting must exit 130: \(join.shown)")
        // Milliseconds when idle; half the connect timeout is a bound no loaded machine reaches.
        #expect(Date().timeIntervalSince(sent) < 30, "it waited for the connect timeout")
    }

    @Test func aKickedStudentsSessionEndsWithAnError() throws {
        let node = try NodeChild(name: "cli-kick")
        let student = try TerminalSession(["join", "--as", "student", "--user", "dan", "--room", "kickme", "--node", node.listen])
        #expect(student.waitFor("kickme dan (student)> "))
        student.send("hand up\n")
        #expect(student.waitFor("ok: your hand is up"))
        #expect(try CLI.run(["kick", "dan", "--room", "kickme", "--node", node.listen]).status == 0)
        #expect(student.waitFor("you were kicked out of the room"))
        #expect(student.waitForExit() == 1)
        #expect(student.shown.contains("Error: you were removed from room kickme"))
    }
}

/// A loopback TCP port free right now (the kernel's pick, released at once).
func freeLoopbackPort() throws -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    guard let port = bindLoopback(fd) else { throw CLIError("no free loopback port: \(String(cString: strerror(errno)))") }
    return port
}
