import HomeroomContext

/// The roster table (the seed's user list): the theme's columns, in its order, with the
/// four camera/microphone states. Shows the snapshot's page of students, with the page
/// position when the room is paged.
public struct RosterComponent: Component {
    public init() {}
    public var section: String { "roster" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let theme = context.theme.roster
        let page = context.snapshot.students
        guard !page.rows.isEmpty else {
            return [StyledLine("Roster  no students yet", TextStyle(foreground: theme.offlineColor))]
        }
        let columns = theme.columns
        let local = context.snapshot.localUser.id
        let cells: [[Span]] = page.rows.map { row in columns.map { cell($0, row, theme, local: local) } }
        let gap = 2
        var widths = columns.indices.map { index in
            max(DisplayWidth.of(columns[index].title), cells.map { DisplayWidth.of($0[index].text) }.max() ?? 0)
        }
        if let nameIndex = columns.firstIndex(of: .name) {
            let others = widths.enumerated().filter { $0.offset != nameIndex }.reduce(0) { $0 + $1.element }
            let available = context.width - others - gap * (columns.count - 1)
            widths[nameIndex] = max(4, min(widths[nameIndex], available))
        }
        let header = TextStyle(foreground: theme.headerColor, bold: true)
        var lines = [line(columns.map { Span($0.title, header) }, columns: columns, widths: widths, gap: gap)]
        for (rowIndex, row) in page.rows.enumerated() {
            var spans = cells[rowIndex]
            if !row.online {
                spans = spans.map { Span($0.text, TextStyle(foreground: theme.offlineColor, dim: true)) }
            }
            lines.append(line(spans, columns: columns, widths: widths, gap: gap))
        }
        // What the camera and microphone glyphs mean (the four states of Flexible Classroom).
        if columns.contains(.camera) || columns.contains(.mic) {
            // In the words `roster --json` uses, so the screen and scripts name states alike.
            let legend = StreamState.allCases.reversed().map { state -> String in
                let text = theme.camera[state].text
                return text.contains("\(state)") ? text : "\(text) (\(state))"
            }
            lines.append(StyledLine("cam/mic " + legend.joined(separator: "  "), TextStyle(dim: true)))
        }
        if page.total > page.rows.count {
            let first = page.index * page.size + 1
            let last = first + page.rows.count - 1
            lines.append(StyledLine("page \(page.index + 1)/\(page.count) · students \(Format.count(first))–\(Format.count(last)) of \(Format.count(page.total))",
                                    TextStyle(dim: true)))
        }
        return lines
    }

    private func line(_ spans: [Span], columns: [RosterColumn], widths: [Int], gap: Int) -> StyledLine {
        var out = StyledLine()
        for (index, span) in spans.enumerated() {
            let alignRight = columns[index] == .rewards
            let last = index == spans.count - 1
            out.append(DisplayWidth.fit(span.text, to: widths[index], alignRight: alignRight), span.style)
            if !last { out.append(String(repeating: " ", count: gap)) }
        }
        return out
    }

    func cell(_ column: RosterColumn, _ row: UserRow, _ theme: RosterTheme, local: UserID) -> Span {
        switch column {
        case .name:
            let isLocal = row.id == local
            return Span(row.info.displayName + (isLocal ? " (you)" : "") + (row.online ? "" : " (offline)") + (row.group.map { " [\($0)]" } ?? ""),
                        isLocal ? TextStyle(foreground: theme.localUserColor, bold: true) : .plain)
        case .role: return Span(row.info.role.description)
        case .stage:
            if row.waitingForStage { return Span(theme.stageWaiting.text, theme.stageWaiting.style) }
            return glyph(theme.stage[row.onStage])
        case .auth: return glyph(theme.auth[row.boardGranted])
        // An offline user publishes nothing: never drawn live (`UserRow.shownStream`).
        case .camera: return glyph(theme.camera[row.shownStream(.camera)])
        case .mic: return glyph(theme.microphone[row.shownStream(.microphone)])
        case .rewards: return Span(String(row.rewards), TextStyle(foreground: row.rewards > 0 ? theme.rewardsColor : .default))
        case .hand: return glyph(theme.hand[row.handRaised])
        case .online: return glyph(theme.online[row.online])
        }
    }

    private func glyph(_ glyph: Glyph) -> Span { Span(glyph.text, glyph.style) }
}
