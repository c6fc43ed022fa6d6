import Testing
import HomeroomContext
import HomeroomCore
@testable import HomeroomTerminalUI

@Suite struct ThemeTests {
    @Test func defaultThemeRoundTripsThroughItsJSON() throws {
        let json = Theme.default.json()
        #expect(try Theme.load(json: Array(json.utf8)) == Theme.default)
        #expect(json.contains("\"columns\""))
        #expect(json.contains("\"privilegeOff\""))
    }

    @Test func aPartialThemeKeepsEveryOtherDefault() throws {
        let theme = try Theme.load(json: Array(##"{"stateBar": {"background": "#008080"}}"##.utf8))
        #expect(theme.stateBar.background == .rgb(0, 0x80, 0x80))
        var expected = Theme.default
        expected.stateBar.background = .rgb(0, 0x80, 0x80)
        #expect(theme == expected)
    }

    @Test func malformedJSONIsAnErrorWithItsLineAndColumn() {
        #expect(JSONSyntax.firstProblem(Array(Theme.default.json().utf8)) == nil, "the default theme is well-formed")
        let cases: [(String, String)] = [
            ("{\n  \"stateBar\": {\n    \"background\": \"red\",,\n  }\n}\n", "line 3, column 25: expected a key in double quotes"),
            ("{\"stateBar\": tru}", "line 1, column 17: expected 'true'"),
            ("{\"stateBar\": {\"background\": \"red\"}", "line 1, column 35: expected ',' or '}'"),
            ("[1, 2", "line 1, column 6: expected ',' or ']'"),
        ]
        for (text, expected) in cases {
            do {
                _ = try Theme.load(json: Array(text.utf8))
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.description.contains(expected), "\(error.description)")
            }
        }
    }

    @Test func unknownKeysAreErrorsThatNameThePath() {
        #expect(throws: ThemeError.self) { try Theme.load(json: Array(#"{"stateBar": {"backgroud": "red"}}"#.utf8)) }
        do {
            _ = try Theme.load(json: Array(#"{"roster": {"camera": {"lve": {"text": "x"}}}}"#.utf8))
        } catch {
            #expect(error.description.contains("roster.camera.lve"))
            #expect(error.description.contains("deviceOff"))
        }
    }

    @Test(arguments: [
        (#"{"stateBar": {"background": "teal-ish"}}"#, "stateBar.background"),
        (#"{"roster": {"columns": ["name", "cam"]}}"#, "'cam' is not a column"),
        (#"{"roster": {"columns": ["name", "name"]}}"#, "a column appears twice"),
        (#"{"roster": {"columns": []}}"#, "at least one column"),
        (#"{"stage": {"visible": "yes"}}"#, "stage.visible: expected true or false"),
        (#"[1, 2]"#, "a theme is a JSON object"),
        (#"{"stateBar": "#,  "not valid JSON"),
    ])
    func badThemesSayWhatToFix(json: String, message: String) {
        do {
            _ = try Theme.load(json: Array(json.utf8))
            Issue.record("accepted \(json)")
        } catch {
            #expect(error.description.contains(message), "\(error.description)")
        }
    }

    @Test func coloursParseEveryForm() {
        #expect(TerminalColor(name: "blue") == .ansi(4))
        #expect(TerminalColor(name: "gray") == .ansi(8))
        #expect(TerminalColor(name: "bright-red") == .ansi(9))
        #expect(TerminalColor(name: "208") == .palette(208))
        #expect(TerminalColor(name: "#0073FF") == .rgb(0, 0x73, 0xFF))
        #expect(TerminalColor(name: "default") == .default)
        #expect(TerminalColor(name: "#12345") == nil)
        #expect(TerminalColor(name: "256") == nil)
        for color in [TerminalColor.ansi(3), .ansi(12), .palette(17), .rgb(1, 2, 3), .default] {
            #expect(TerminalColor(name: color.description) == color)
        }
    }

    @Test func invisibleComponentsAreLeftOutAndDisabledOnesDimmed() throws {
        var theme = Theme.default
        theme.hands.visible = false
        theme.stage.enabled = false
        let plain = Golden.render(Fixtures.smallClassroom, colors: false, theme: theme)
        #expect(!plain.contains("Hands"))
        #expect(plain.contains("Stage 2/2"))
        let colored = Golden.render(Fixtures.smallClassroom, colors: true, theme: theme)
        let stageLine = colored.split(separator: "\n").first { $0.contains("Stage 2/2") }
        #expect(stageLine?.contains("\u{1B}[1;2m") == true, "a disabled component is drawn dim")
    }
}

@Suite struct LayoutTests {
    static let snapshots = [Fixtures.smallClassroom, Fixtures.lectureHall, Fixtures.oneToOne]

    @Test(arguments: [20, 33, 48, 60, 80, 101, 160])
    func noLineIsWiderThanTheTerminal(width: Int) {
        for snapshot in Self.snapshots {
            for colors in [false, true] {
                let text = Golden.render(snapshot, colors: colors, width: width, status: ["a status line that is rather long, longer than most terminals are wide"])
                for line in text.split(separator: "\n") {
                    #expect(DisplayWidth.of(Self.strip(String(line))) <= width, "\(snapshot.room.type) at \(width): \(line)")
                }
            }
        }
    }

    @Test func plainOutputHasNoEscapes() {
        for snapshot in Self.snapshots {
            #expect(!Golden.render(snapshot, colors: false).contains("\u{1B}"))
        }
    }

    @Test func aShortTerminalKeepsTheStatusLines() {
        let text = Golden.render(Fixtures.smallClassroom, colors: false, height: 8, status: ["last: ok", "q quit"])
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 8)
        #expect(lines.last == "q quit")
        #expect(text.contains("more lines: enlarge the terminal"))
    }

    @Test func widthsCountWideCharactersTwice() {
        #expect(DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of("李雷") == 4)
        #expect(DisplayWidth.of("✋") == 2)
        #expect(DisplayWidth.of("e\u{301}") == 1)
        #expect(DisplayWidth.of("● live") == 6)
        #expect(DisplayWidth.truncate("李雷李雷", to: 5) == "李雷…")
        #expect(DisplayWidth.fit("ab", to: 4, alignRight: true) == "  ab")
    }

    @Test func formatsCountsDurationsAndLatency() {
        #expect(Format.count(1_234_567) == "1,234,567")
        #expect(Format.count(12) == "12")
        #expect(Format.duration(millis: 723_000) == "12:03")
        #expect(Format.duration(millis: 3_723_000) == "1:02:03")
        #expect(Format.latency(micros: 420) == "0.42 ms")
        #expect(Format.latency(micros: 25_400) == "25 ms")
    }

    @Test func theClassClockShowsElapsedRemainingAndOvertime() {
        let schedule = Schedule(startMillis: 0, durationSeconds: 600, closeDelaySeconds: 60)
        let info = ClassInfo(state: .during, sinceMillis: 1_000_000, schedule: schedule)
        #expect(StateBarComponent.classText(info, now: 1_000_000 + 90_000) == "in class 1:30 · 8:30 left")
        #expect(StateBarComponent.classText(info, now: 1_000_000 + 660_000) == "in class 11:00 · 1:00 over")
        let before = ClassInfo(state: .before, sinceMillis: 0, schedule: Schedule(startMillis: 2_000_000, durationSeconds: 600))
        #expect(StateBarComponent.classText(before, now: 1_760_000) == "before class · starts in 4:00")
        #expect(StateBarComponent.classText(ClassInfo(state: .after, sinceMillis: 5, schedule: schedule), now: 9) == "class over · closes in 1:00")
        // Closed (Agora's class state 3): the close delay has passed since the class ended.
        #expect(StateBarComponent.classText(ClassInfo(state: .after, sinceMillis: 5, schedule: schedule), now: 60_005) == "class closed")
        #expect(StateBarComponent.classText(ClassInfo(state: .after, sinceMillis: 0, schedule: schedule), now: 60_005) == "class over")
    }

    static func strip(_ text: String) -> String {
        var out = ""
        var escaping = false
        for character in text {
            if escaping { if character.isLetter { escaping = false }; continue }
            if character == "\u{1B}" { escaping = true; continue }
            out.append(character)
        }
        return out
    }
}

/// The stage strip says a carousel runs and when its next turn starts.
@Suite struct CarouselDisplayTests {
    @Test func theStageStripShowsTheCarouselAndItsNextTurn() {
        let students = [UserRow(info: Fixtures.user("s1", "Sam"), online: true, onStage: true, camera: .live, microphone: .live)]
        var snapshot = Fixtures.snapshot(type: .smallClassroom, name: "Maths", stageLimit: 1, moderators: [Fixtures.teacherRow], students: students)
        let settings = Carousel(intervalSeconds: 30, range: .cameraOn, order: .random)
        let turn = CarouselTurn(number: 3, onStage: ["s1"], candidates: ["s1", "s2"], nextTurnAtMillis: Fixtures.now + 12_000, rotates: true)
        snapshot.carousel = CarouselStatus(settings, turn)
        let shown = Golden.render(StageComponent(), snapshot, colors: false)
        #expect(shown.contains("Carousel every 30 s, camera-on, random · next turn in 0:12"), "\(shown)")
        snapshot.carousel = CarouselStatus(settings, CarouselTurn(number: 0, onStage: ["s1"], candidates: ["s1"],
                                                                  nextTurnAtMillis: Fixtures.now + 1, rotates: false))
        #expect(Golden.render(StageComponent(), snapshot, colors: false).contains("everyone fits on stage"))
        snapshot.carousel = nil
        #expect(!Golden.render(StageComponent(), snapshot, colors: false).contains("Carousel"))
    }
}

/// The stage strip lists the breakout groups; the roster tags each member with its group.
@Suite struct BreakoutDisplayTests {
    @Test func theStripListsTheGroupsAndTheRosterTagsTheirMembers() {
        let students = [UserRow(info: Fixtures.user("s1", "Sam"), online: true, group: "g1"),
                        UserRow(info: Fixtures.user("s2", "Ria"), online: true)]
        var snapshot = Fixtures.snapshot(type: .smallClassroom, name: "Maths", stageLimit: 2, moderators: [Fixtures.teacherRow], students: students)
        snapshot.breakout = [BreakoutGroup(id: "g1", name: "Red", members: ["s1"], roomID: "maths:g1"),
                             BreakoutGroup(id: "g2", name: "Blue", members: [], roomID: "maths:g2")]
        #expect(Golden.render(StageComponent(), snapshot, colors: false).contains("Breakout: g1 Red (1) · g2 Blue (0)"))
        let roster = Golden.render(RosterComponent(), snapshot, colors: false)
        #expect(roster.contains("Sam [g1]") && !roster.contains("Ria ["), "\(roster)")
        snapshot.breakout = []
        #expect(!Golden.render(StageComponent(), snapshot, colors: false).contains("Breakout"))
    }
}

/// The stage strip says which devices the teacher mutes for every student; the roster
/// shows a muted student's camera as off (the read model's state).
@Suite struct RoomMuteDisplayTests {
    @Test func theStageStripSaysWhatTheRoomMutes() {
        let students = [UserRow(info: Fixtures.user("s1", "Sam"), online: true, onStage: true, camera: .deviceOff, microphone: .live)]
        var snapshot = Fixtures.snapshot(type: .smallClassroom, name: "Maths", stageLimit: 2, moderators: [Fixtures.teacherRow], students: students)
        #expect(!Golden.render(StageComponent(), snapshot, colors: false).contains("Muted"))
        snapshot.room.mutedDevices = [.camera]
        let cameras = Golden.render(StageComponent(), snapshot, colors: false)
        #expect(cameras.contains("Muted by the teacher: every student's camera") && !cameras.contains("microphone"), "\(cameras)")
        snapshot.room.mutedDevices = [.microphone, .camera]
        #expect(Golden.render(StageComponent(), snapshot, colors: false).contains("Muted by the teacher: every student's camera and microphone"))
    }
}

/// The hands strip says when hand raising is off, or on with auto-stage.
@Suite struct HandRaisingDisplayTests {
    @Test func theHandsTitleSaysOffOrAutoStage() {
        var snapshot = Fixtures.snapshot(type: .smallClassroom, name: "Maths", stageLimit: 2, moderators: [Fixtures.teacherRow], students: [])
        #expect(Golden.render(HandsComponent(), snapshot, colors: false).hasPrefix("Hands 0  "))
        snapshot.room.handRaising = HandRaisingPolicy(allowed: true, autoStage: true)
        #expect(Golden.render(HandsComponent(), snapshot, colors: false).hasPrefix("Hands 0 · auto-stage  "))
        snapshot.room.handRaising = HandRaisingPolicy(allowed: false, autoStage: true)
        let off = Golden.render(HandsComponent(), snapshot, colors: false)
        #expect(off.hasPrefix("Hands off  switched off by the teacher") && !off.contains("auto-stage"), "\(off)")
    }
}

/// The stage strip shows a pending invitation to the invited student (with how to answer)
/// and every pending one to a teacher; other students, and expired ones, show nothing.
@Suite struct InvitationDisplayTests {
    @Test func theInvitedStudentAndTheTeacherSeeAPendingInvitation() {
        let sam = Fixtures.user("s1", "Sam")
        var snapshot = Fixtures.snapshot(type: .smallClassroom, name: "Maths", stageLimit: 2, moderators: [Fixtures.teacherRow], students: [])
        snapshot.invitations = [InvitationInfo(user: sam, inviter: Fixtures.ada, seconds: 30, expiresAtMillis: Fixtures.now + 12_000, status: .pending)]
        let teacher = Golden.render(StageComponent(), snapshot, colors: false)
        #expect(teacher.contains("Invited: Sam 12 s") && !teacher.contains("invitation accept"), "\(teacher)")
        snapshot.localUser = sam
        let student = Golden.render(StageComponent(), snapshot, colors: false)
        #expect(student.contains("Invited on stage by Ada Lovelace, 12 s left: invitation accept|decline") && !student.contains("Invited: "),
                "\(student)")
        snapshot.localUser = Fixtures.user("s2", "Kim")
        #expect(!Golden.render(StageComponent(), snapshot, colors: false).contains("Invited"))
        snapshot.localUser = Fixtures.ada
        snapshot.invitations[0].expiresAtMillis = Fixtures.now - 1
        #expect(!Golden.render(StageComponent(), snapshot, colors: false).contains("Invited"))
    }
}
