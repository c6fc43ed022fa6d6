import HomeroomCore

/// A plain-text roster table with the seed's columns (the themed terminal UI comes with the CLI issue).
enum PlainRoster {
    static func glyph(_ state: StreamState) -> String {
        switch state {
        case .inoperable: return "-"
        case .deviceOff: return "off"
        case .privilegeOff: return "muted"
        case .live: return "live"
        }
    }

    /// `nowMillis`: the clock the room's closing is judged by (`closed` once its close
    /// delay passed); nil (a simulation's roster, on simulated time) shows the wire's state.
    static func render(_ roster: Roster, nowMillis: UInt64? = nil) -> String {
        let classText = nowMillis.map { roster.classDisplay(nowMillis: $0).description } ?? roster.classState.description
        var lines = ["\(roster.roomName.isEmpty ? roster.roomID : roster.roomName) · \(roster.roomType) · class \(classText)"
            + " · \(roster.onlineCount) online · stage \(roster.stage.count)/\(roster.stageLimit)"]
        let header = ["Name", "Role", "Stage", "Auth", "Camera", "Mic", "Rewards", "Hand", "Online"]
        var table = [header]
        for row in roster.rows {
            table.append([
                row.name.isEmpty ? row.user : row.name, row.role.description,
                row.onStage ? "on" : (row.waitingForStage ? "waiting" : "-"), row.boardGranted ? "yes" : "-",
                glyph(row.camera), glyph(row.microphone), String(row.rewards), row.handRaised ? "up" : "-", row.online ? "yes" : "no",
            ])
        }
        let widths = header.indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        for row in table {
            lines.append(row.enumerated().map { $1.padding(toLength: widths[$0]) }.joined(separator: "  "))
        }
        if !roster.stageWaiting.isEmpty { lines.append("waiting for stage: " + roster.stageWaiting.joined(separator: ", ")) }
        if !roster.raisedHands.isEmpty { lines.append("hands: " + roster.raisedHands.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }
}

extension String {
    func padding(toLength length: Int) -> String {
        count >= length ? self : self + String(repeating: " ", count: length - count)
    }
}
