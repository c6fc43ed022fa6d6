import HomeroomContext

/// The stage strip: who is on stage (seats taken of the limit), and who waits for a seat.
public struct StageComponent: Component {
    public init() {}
    public var section: String { "stage" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let theme = context.theme.stage
        let snapshot = context.snapshot
        let title = TextStyle(foreground: theme.titleColor, bold: true)
        var lines = [NameList.line(title: "Stage \(snapshot.stage.count)/\(snapshot.room.stageLimit)", titleStyle: title,
                                   names: snapshot.stage.map(\.info.displayName), nameStyle: TextStyle(foreground: theme.nameColor),
                                   emptyText: theme.emptyText, maxNames: Int.max, width: context.width)]
        if let carousel = snapshot.carousel {
            lines.append(StyledLine(Self.carouselText(carousel, now: context.nowMillis), TextStyle(foreground: theme.waitingColor)))
        }
        if !snapshot.breakout.isEmpty {
            lines.append(StyledLine(Self.breakoutText(snapshot.breakout), TextStyle(foreground: theme.waitingColor)))
        }
        if let muted = Self.roomMuteText(snapshot.room.mutedDevices) {
            lines.append(StyledLine(muted, TextStyle(foreground: theme.waitingColor)))
        }
        for text in Self.invitationTexts(snapshot, now: context.nowMillis) {
            lines.append(StyledLine(text, TextStyle(foreground: theme.waitingColor, bold: true)))
        }
        if !snapshot.stageWaiting.isEmpty {
            lines.append(NameList.line(title: "Waiting for a seat", titleStyle: title, names: snapshot.stageWaiting.map(\.info.displayName),
                                       nameStyle: TextStyle(foreground: theme.waitingColor), emptyText: "", maxNames: Int.max,
                                       width: context.width))
        }
        return lines
    }
}

extension StageComponent {
    /// The pending invitations this user should see: its own ("Invited on stage by
    /// Ms T, 12 s left: invitation accept|decline"), and, for a teacher or an
    /// assistant, everyone's ("Invited: bob 12 s · carol 5 s"). Past their duration by
    /// this frame's clock they are gone.
    static func invitationTexts(_ snapshot: RoomSnapshot, now: UInt64) -> [String] {
        let pending = snapshot.invitations.filter { $0.status == .pending && $0.expiresAtMillis >= now }
        var texts: [String] = []
        if let mine = pending.first(where: { $0.user.id == snapshot.localUser.id }) {
            let by = mine.inviter.map { " by \($0.displayName)" } ?? ""
            texts.append("Invited on stage\(by), \(mine.secondsLeft(nowMillis: now)) s left: invitation accept|decline")
        }
        if snapshot.localUser.role.moderates, !pending.isEmpty {
            texts.append("Invited: " + pending.map { "\($0.user.displayName) \($0.secondsLeft(nowMillis: now)) s" }.joined(separator: " · "))
        }
        return texts
    }

    /// "Muted by the teacher: every student's camera and microphone" (nil: no room mute).
    static func roomMuteText(_ devices: Set<Device>) -> String? {
        let names = Device.allCases.filter(devices.contains).map(\.description)
        guard !names.isEmpty else { return nil }
        return "Muted by the teacher: every student's " + names.joined(separator: " and ")
    }

    /// "Breakout: g1 Group 1 (3) · g2 Group 2 (2)": the groups, each one's id, name and size.
    static func breakoutText(_ groups: [BreakoutGroup]) -> String {
        "Breakout: " + groups.map { "\($0.id) \($0.name) (\($0.members.count))" }.joined(separator: " · ")
    }

    /// "Carousel every 30 s, all, join order · next turn in 0:12" (or "everyone fits").
    static func carouselText(_ carousel: CarouselStatus, now: UInt64) -> String {
        let settings = "Carousel every \(carousel.intervalSeconds) s, \(carousel.range.name), \(carousel.order.name.replacing("-", with: " "))"
        guard carousel.rotates else { return settings + " · everyone fits on stage" }
        let left = carousel.nextTurnAtMillis > now ? carousel.nextTurnAtMillis - now : 0
        return settings + " · next turn in \(Format.duration(millis: Int64(left)))"
    }
}

/// Raised hands, in the order they went up, then those waiting over the hand limit; the
/// title says when hand raising is off, or on with auto-stage.
public struct HandsComponent: Component {
    public init() {}
    public var section: String { "hands" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let theme = context.theme.hands
        let hands = context.snapshot.raisedHands
        let waiting = context.snapshot.waitingHands.count
        let policy = context.snapshot.room.handRaising
        let title = policy.allowed ? "Hands \(hands.count)" + (policy.autoStage ? " · auto-stage" : "") : "Hands off"
        return [NameList.line(title: title, titleStyle: TextStyle(foreground: theme.titleColor, bold: true),
                              names: hands.map(\.displayName), nameStyle: TextStyle(foreground: theme.nameColor),
                              emptyText: policy.allowed ? theme.emptyText : "switched off by the teacher", maxNames: theme.maxNames, width: context.width,
                              suffix: waiting > 0 ? "\(Format.count(waiting)) waiting over the limit" : nil)]
    }
}

/// The lecture hall's counts: how many students, online, observers, on stage, hands.
public struct CountsComponent: Component {
    public init() {}
    public var section: String { "counts" }

    public func render(_ context: RenderContext) -> [StyledLine] {
        let snapshot = context.snapshot
        let style = TextStyle(foreground: context.theme.counts.color)
        let parts = [
            "students \(Format.count(snapshot.students.total))",
            "online \(Format.count(snapshot.onlineCount))",
            "observers \(Format.count(snapshot.observerCount))",
            "on stage \(snapshot.stage.count)/\(snapshot.room.stageLimit)",
            "hands \(Format.count(snapshot.raisedHands.count))",
        ]
        return [StyledLine(parts.joined(separator: " · "), style)]
    }
}

/// "Title  a · b · c  +N more", fitted to the width: names that do not fit are counted.
enum NameList {
    static func line(title: String, titleStyle: TextStyle, names: [String], nameStyle: TextStyle, emptyText: String,
                     maxNames: Int, width: Int, suffix: String? = nil) -> StyledLine {
        var line = StyledLine([Span(title, titleStyle), Span("  ")])
        if names.isEmpty {
            line.append(emptyText, TextStyle(dim: true))
            if let suffix { line.append("  (\(suffix))", TextStyle(dim: true)) }
            return line
        }
        let tail = suffix.map { "  (\($0))" } ?? ""
        var shown = 0
        for (index, name) in names.enumerated() {
            guard index < maxNames else { break }
            let rest = names.count - index - 1
            let more = rest > 0 ? "  +\(Format.count(rest)) more" : ""
            let piece = (index > 0 ? " · " : "") + name
            if line.width + DisplayWidth.of(piece) + DisplayWidth.of(more) + DisplayWidth.of(tail) > width && index > 0 { break }
            if index > 0 { line.append(" · ") }
            line.append(name, nameStyle)
            shown += 1
        }
        if shown < names.count { line.append("  +\(Format.count(names.count - shown)) more", TextStyle(dim: true)) }
        if !tail.isEmpty { line.append(tail, TextStyle(dim: true)) }
        return line
    }
}
