import Testing
import HomeroomContext
@testable import HomeroomTerminalUI

/// Every scene, and every camera/microphone state, in colour and plain.
@Suite struct GoldenTests {
    @Test(arguments: [false, true])
    func smallClassroomScene(colors: Bool) {
        Golden.check("small-classroom-\(colors ? "color" : "plain")",
                     Golden.render(Fixtures.smallClassroom, colors: colors, status: ["ok: carol on stage"]))
    }

    @Test(arguments: [false, true])
    func lectureHallScenePagesAndCounts(colors: Bool) {
        Golden.check("lecture-hall-\(colors ? "color" : "plain")", Golden.render(Fixtures.lectureHall, colors: colors))
    }

    @Test(arguments: [false, true])
    func oneToOneSceneSideBySide(colors: Bool) {
        Golden.check("one-to-one-\(colors ? "color" : "plain")", Golden.render(Fixtures.oneToOne, colors: colors))
    }

    @Test(arguments: StreamState.allCases, [false, true])
    func streamState(state: StreamState, colors: Bool) {
        Golden.check("stream-\(state)-\(colors ? "color" : "plain")",
                     Golden.render(RosterComponent(), Fixtures.streams(state), colors: colors))
    }

    /// Issue 43: a suspended link (every node failed through the backoff) in the state bar, bold as any link not connected.
    @Test(arguments: [false, true])
    func suspendedLinkInTheStateBar(colors: Bool) {
        var snapshot = Fixtures.smallClassroom
        snapshot.connection = .suspended
        Golden.check("state-bar-suspended-\(colors ? "color" : "plain")", Golden.render(StateBarComponent(), snapshot, colors: colors))
    }

    /// Offline users (teacher, assistant, student) whose registers say live: drawn off.
    @Test(arguments: [false, true])
    func offlineUsersInASmallClassroom(colors: Bool) {
        Golden.check("offline-small-classroom-\(colors ? "color" : "plain")", Golden.render(Fixtures.offline(.smallClassroom), colors: colors))
    }

    /// The seed's two examples as a theme: a teal state bar, and new camera icons.
    @Test(arguments: [false, true])
    func customizedTheme(colors: Bool) throws {
        let theme = try Theme.load(json: Array("""
            {
              "stateBar": { "background": "cyan", "foreground": "black" },
              "roster": {
                "columns": ["name", "camera", "mic", "stage", "rewards"],
                "camera": {
                  "inoperable":   { "text": "cam-",   "color": "#E2E2EE" },
                  "deviceOff":    { "text": "cam off", "color": "#E2E2EE" },
                  "privilegeOff": { "text": "cam off", "color": "#F04C36" },
                  "live":         { "text": "cam on",  "color": "#0073FF" }
                }
              }
            }
            """.utf8))
        Golden.check("themed-small-classroom-\(colors ? "color" : "plain")",
                     Golden.render(Fixtures.smallClassroom, colors: colors, theme: theme))
    }

    /// Issue 42, item 7: the teacher and the assistants are on screen in every room type
    /// (the small classroom and the lecture hall showed neither, one-to-one no assistant).
    @Test(arguments: [RoomType.oneToOne, .smallClassroom, .lectureHall])
    func theTeacherAndAssistantsAreShownInEveryRoomType(type: RoomType) {
        let shown = Golden.render(Fixtures.offline(type), colors: false)
        #expect(shown.contains("Ada Lovelace"), "no teacher in the \(type):\n\(shown)")
        #expect(shown.contains("Tom") && shown.contains("Kim (offline)"), "no assistants in the \(type):\n\(shown)")
    }

    /// Issue 42, item 7: an offline user publishes nothing, so its camera and microphone
    /// are never drawn live or held, whatever its registers say (they come back with it).
    @Test(arguments: [RoomType.oneToOne, .smallClassroom, .lectureHall])
    func offlineUsersAreNeverShownLive(type: RoomType) {
        let snapshot = Fixtures.offline(type)
        let shown = Golden.render(snapshot, colors: false)
        if type == .oneToOne {
            // The teacher's panel (the left one) shows the devices off; Alice's, on the right, live.
            let left = shown.split(separator: "\n").map { String($0.prefix(36)) }
            #expect(left.contains { $0.hasPrefix("│ Camera  ○ off") } && left.contains { $0.hasPrefix("│ Mic     ○ off") }, "\(shown)")
            #expect(!left.contains { $0.contains("● live") || $0.contains("◐ held") }, "\(shown)")
        } else {
            let live = shown.split(separator: "\n").filter { $0.contains("● live") || $0.contains("◐ held") }
            // Only Alice, who is online, is live; the legend names the glyphs.
            #expect(live.allSatisfy { $0.hasPrefix("Alice") || $0.hasPrefix("cam/mic") }, "\(type):\n\(shown)")
            #expect(shown.contains("Teacher  Ada Lovelace (offline)  camera ○ off  mic ○ off"), "\(type):\n\(shown)")
            let eve = shown.split(separator: "\n").first { $0.hasPrefix("Eve (offline)") }
            #expect(eve.map { $0.contains("○ off   ○ off") } == true, "\(type):\n\(shown)")
        }
        // The read model keeps the registers' states: only the drawing differs.
        #expect(snapshot.students.rows.last?.camera == .live && snapshot.students.rows.last?.shownStream(.camera) == .deviceOff)
    }
}
