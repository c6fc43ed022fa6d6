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
}
