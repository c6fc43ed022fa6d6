import HomeroomContext

/// The teacher and the assistants, in every room type (the roster table lists students):
/// a line per teacher with its camera and microphone, then the assistants by name.
///
///     Teacher  Ada Lovelace (you)  camera ● live  mic ○ off
///     Assistants  Tom · Kim (offline)
///
/// An offline moderator is marked and dimmed, and its devices are never drawn live
/// (`UserRow.shownStream`). Without a teacher the line says so. The one-to-one scene
/// draws its teacher in a panel (`PartiesComponent`), so there `teacher` is false and
/// only assistants are listed. Shown and enabled with the `stage` section.
public struct ModeratorsComponent: Component {
    public var teacher: Bool

    public init(teacher: Bool = true) { self.teacher = teacher }
    public var section: String { "stage" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let snapshot = context.snapshot
        let roster = context.theme.roster
        let title = TextStyle(foreground: context.theme.stage.titleColor, bold: true)
        let local = snapshot.localUser.id
        let offline = TextStyle(foreground: roster.offlineColor, dim: true)
        func style(_ row: UserRow) -> TextStyle {
            row.id == local ? TextStyle(foreground: roster.localUserColor, bold: true)
                : (row.online ? TextStyle(foreground: context.theme.stage.nameColor) : offline)
        }
        var lines: [StyledLine] = []
        if teacher {
            let teachers = snapshot.moderators.filter { $0.info.role == .teacher }
            if teachers.isEmpty {
                lines.append(StyledLine([Span("Teacher", title), Span("  "), Span("not in the room yet", TextStyle(dim: true))]))
            }
            for row in teachers {
                let camera = roster.camera[row.shownStream(.camera)], mic = roster.microphone[row.shownStream(.microphone)]
                lines.append(StyledLine([
                    Span("Teacher", title), Span("  "), Span(Self.name(row, local: local), style(row)),
                    Span("  camera "), Span(camera.text, camera.style), Span("  mic "), Span(mic.text, mic.style),
                ]))
            }
        }
        let assistants = snapshot.moderators.filter { $0.info.role == .assistant }
        if !assistants.isEmpty {
            var line = StyledLine([Span(assistants.count == 1 ? "Assistant" : "Assistants", title), Span("  ")])
            for (index, row) in assistants.enumerated() {
                if index > 0 { line.append(" · ") }
                line.append(Self.name(row, local: local), style(row))
            }
            lines.append(line)
        }
        return lines
    }

    static func name(_ row: UserRow, local: UserID) -> String {
        row.info.displayName + (row.id == local ? " (you)" : "") + (row.online ? "" : " (offline)")
    }
}
