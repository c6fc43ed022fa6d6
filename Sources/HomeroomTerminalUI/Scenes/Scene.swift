import HomeroomContext

/// What a scene draws from: the room's read model at one moment, the clock (passed in,
/// so rendering is a pure function), the theme and the terminal.
public struct RenderContext: Sendable {
    public var snapshot: RoomSnapshot
    public var nowMillis: UInt64
    public var theme: Theme
    public var capabilities: TerminalCapabilities
    /// Lines the program shows under the scene (last result, narration, key help).
    public var status: [String]

    public init(snapshot: RoomSnapshot, nowMillis: UInt64, theme: Theme = .default, capabilities: TerminalCapabilities,
                status: [String] = []) {
        self.snapshot = snapshot
        self.nowMillis = nowMillis
        self.theme = theme
        self.capabilities = capabilities
        self.status = status
    }

    public var width: Int { max(20, capabilities.width) }
}

/// A UI component (the seed's UIComponent): one part of a scene, drawn as lines.
/// `section` names the theme section that makes it visible or enabled.
public protocol Component: Sendable {
    var section: String { get }
    func render(_ context: RenderContext) -> [StyledLine]
}

/// A classroom type (the seed's UIScene): an ordered list of components. The status
/// lines always close the scene, and stay on screen when the body is cut to the height.
public protocol Scene: Sendable {
    var name: String { get }
    var components: [any Component] { get }
}

extension Scene {
    /// The whole scene as text: escape codes only when `capabilities.colors`, every line
    /// at most `capabilities.width` columns, at most `capabilities.height` lines when set.
    public func render(_ context: RenderContext) -> String {
        var body: [StyledLine] = []
        for component in components {
            let switches = context.theme.switches(component.section)
            guard switches.visible else { continue }
            var lines = component.render(context)
            if lines.isEmpty { continue }
            if !switches.enabled { lines = lines.map { $0.dimmed() } }
            if !body.isEmpty { body.append(.blank) }
            body += lines
        }
        var footer: [StyledLine] = []
        if context.theme.status.visible, !context.status.isEmpty {
            footer.append(.blank)
            let style = TextStyle(foreground: context.theme.status.color)
            footer += context.status.map { StyledLine($0, style) }
        }
        if let height = context.capabilities.height, body.count + footer.count > height {
            let room = max(1, height - footer.count)
            let hidden = body.count - (room - 1)
            body = Array(body.prefix(room - 1)) + [StyledLine("… \(hidden) more lines: enlarge the terminal", TextStyle(dim: true))]
            if body.count + footer.count > height { footer = Array(footer.suffix(max(0, height - body.count))) }
        }
        return (body + footer).map { $0.render(width: context.width, colors: context.capabilities.colors) }.joined(separator: "\n")
    }
}

/// The scene for a room type, as the seed arranges them.
public enum Scenes {
    public static func scene(for type: RoomType) -> any Scene {
        switch type {
        case .oneToOne: return OneToOneScene()
        case .smallClassroom: return SmallClassroomScene()
        case .lectureHall: return LectureHallScene()
        }
    }

    /// Renders the scene of the snapshot's room type.
    public static func render(_ context: RenderContext) -> String {
        scene(for: context.snapshot.room.type).render(context)
    }

    /// Students per page for a full-screen view: the theme's page size, or what fits.
    public static func rowsPerPage(theme: Theme, capabilities: TerminalCapabilities) -> Int {
        if theme.roster.pageSize > 0 { return theme.roster.pageSize }
        guard let height = capabilities.height else { return 20 }
        return max(3, height - 14)
    }
}

/// One teacher and one student, both always on stage: side by side (assistants under them).
public struct OneToOneScene: Scene {
    public init() {}
    public var name: String { "one-to-one" }
    public var components: [any Component] { [StateBarComponent(), PartiesComponent(), ModeratorsComponent(teacher: false), HandsComponent()] }
}

/// One teacher, a few dozen students, a stage limit: every student in the table.
public struct SmallClassroomScene: Scene {
    public init() {}
    public var name: String { "small-classroom" }
    public var components: [any Component] { [StateBarComponent(), ModeratorsComponent(), StageComponent(), HandsComponent(), RosterComponent()] }
}

/// A large audience: counts, the stage, the hands, and one page of the roster.
public struct LectureHallScene: Scene {
    public init() {}
    public var name: String { "lecture-hall" }
    public var components: [any Component] {
        [StateBarComponent(), CountsComponent(), ModeratorsComponent(), StageComponent(), HandsComponent(), RosterComponent()]
    }
}
