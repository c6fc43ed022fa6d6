import HomeroomContext

/// The top bar (the seed's state bar): room name and type, class state with elapsed or
/// remaining time, connection state and latency, on the theme's background colour.
public struct StateBarComponent: Component {
    public init() {}
    public var section: String { "stateBar" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let theme = context.theme.stateBar
        let snapshot = context.snapshot
        let base = TextStyle(foreground: theme.foreground, background: theme.background)
        let room = " " + snapshot.room.displayName
        let type = theme.showRoomType ? " · " + snapshot.room.type.description.replacingDashes : ""
        let classText = Self.classText(snapshot.classInfo, now: context.nowMillis)
        let latency = theme.showLatency && snapshot.latencyMicros > 0 && snapshot.connection == .connected
            ? " · " + Format.latency(micros: snapshot.latencyMicros) : ""
        let connection = snapshot.connection.rawValue
        // Drop the least useful parts first when the line is narrow: room type, then latency.
        let width = context.width
        var (showType, showLatency) = (true, true)
        func total() -> Int {
            DisplayWidth.of(room + (showType ? type : "") + "   " + classText + "   " + connection + (showLatency ? latency : "") + " ")
        }
        if total() > width { showType = false }
        if total() > width { showLatency = false }
        let right = connection + (showLatency ? latency : "") + " "
        let left = room + (showType ? type : "")
        let leftWidth = max(1, width - DisplayWidth.of(right) - 3 - DisplayWidth.of(classText))
        var line = StyledLine(fill: base)
        line.append(DisplayWidth.truncate(left, to: leftWidth), TextStyle(foreground: theme.foreground, background: theme.background, bold: true))
        line.append("   " + classText, base)
        let used = line.width
        line.append(String(repeating: " ", count: max(1, width - used - DisplayWidth.of(right))), base)
        line.append(right, TextStyle(foreground: theme.foreground, background: theme.background, bold: snapshot.connection != .connected))
        return [line]
    }

    /// "before class · starts in 4:00", "in class 12:03 · 32:57 left", "class over",
    /// "class over · closes in 9:30", "class closed".
    static func classText(_ info: ClassInfo, now: UInt64) -> String {
        switch info.state {
        case .before:
            if let until = info.untilStartMillis(now: now) {
                return until >= 0 ? "before class · starts in \(Format.duration(millis: until))"
                    : "before class · \(Format.duration(millis: until)) late"
            }
            return "before class"
        case .during:
            guard let elapsed = info.elapsedMillis(now: now), let remaining = info.remainingMillis(now: now) else {
                return "in class"
            }
            let rest = remaining >= 0 ? "\(Format.duration(millis: remaining)) left" : "\(Format.duration(millis: remaining)) over"
            return "in class \(Format.duration(millis: Int64(elapsed))) · \(rest)"
        case .after:
            if info.display(now: now) == .closed { return "class closed" }
            // Rounded up: a countdown that says 0:00 while the room is still open would lie.
            if let left = info.untilClosedMillis(now: now) {
                return "class over · closes in \(Format.duration(millis: Int64((left + 999) / 1000 * 1000)))"
            }
            return "class over"
        }
    }
}

extension String {
    var replacingDashes: String { String(map { $0 == "-" ? " " : $0 }) }
}
