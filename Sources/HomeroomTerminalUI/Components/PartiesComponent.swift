import HomeroomContext

/// The one-to-one scene's two parties, side by side: the teacher and the student, each
/// with presence, camera, microphone, whiteboard, rewards and hand.
public struct PartiesComponent: Component {
    public init() {}
    public var section: String { "parties" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let snapshot = context.snapshot
        let teacher = snapshot.moderators.first { $0.info.role == .teacher }
        let student = snapshot.stage.first { $0.info.role == .student } ?? snapshot.students.rows.first
        let panelWidth = max(12, (context.width - 1) / 2)
        let left = panel("Teacher", teacher, context, width: panelWidth)
        let right = panel("Student", student, context, width: panelWidth)
        return zip(left, right).map { a, b in
            StyledLine(a.spans + [Span(" ")] + b.spans)
        }
    }

    private func panel(_ title: String, _ row: UserRow?, _ context: RenderContext, width: Int) -> [StyledLine] {
        let theme = context.theme
        let border = TextStyle(foreground: theme.parties.borderColor)
        let inner = width - 4
        let heading = " \(title) "
        let top = StyledLine([Span("┌─", border), Span(heading, TextStyle(foreground: theme.parties.titleColor, bold: true)),
                              Span(String(repeating: "─", count: max(0, width - 3 - DisplayWidth.of(heading))) + "┐", border)])
        var body: [StyledLine] = []
        if let row {
            let isLocal = row.id == context.snapshot.localUser.id
            body.append(StyledLine(row.info.displayName + (isLocal ? " (you)" : ""),
                                   isLocal ? TextStyle(foreground: theme.roster.localUserColor, bold: true) : TextStyle(bold: true)))
            body.append(StyledLine(row.online ? "online" : "offline", row.online ? .plain : TextStyle(foreground: theme.roster.offlineColor)))
            body.append(labelled("Camera", theme.roster.camera[row.shownStream(.camera)]))
            body.append(labelled("Mic", theme.roster.microphone[row.shownStream(.microphone)]))
            body.append(labelled("Auth", theme.roster.auth[row.boardGranted]))
            body.append(StyledLine([Span("Rewards ".padded(8)), Span(String(row.rewards), TextStyle(foreground: row.rewards > 0 ? theme.roster.rewardsColor : .default))]))
            body.append(labelled("Hand", theme.roster.hand[row.handRaised]))
        } else {
            body.append(StyledLine("waiting for the \(title.lowercased())", TextStyle(dim: true)))
            while body.count < 7 { body.append(.blank) }
        }
        let framed = body.map { line in
            StyledLine([Span("│ ", border)] + line.fitted(to: inner).spans + [Span(" │", border)])
        }
        let bottom = StyledLine("└" + String(repeating: "─", count: max(0, width - 2)) + "┘", border)
        return [top] + framed + [bottom]
    }

    private func labelled(_ label: String, _ glyph: Glyph) -> StyledLine {
        StyledLine([Span(label.padded(8)), Span(glyph.text, glyph.style)])
    }
}

/// The lines the program adds under a scene are drawn by `Scene.render`; this string
/// helper pads labels.
extension String {
    func padded(_ width: Int) -> String {
        let current = DisplayWidth.of(self)
        return current >= width ? self : self + String(repeating: " ", count: width - current)
    }
}
