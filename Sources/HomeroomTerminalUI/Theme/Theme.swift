import FoundationEssentials
import HomeroomContext

/// The UI config (the seed's UIConfigs): per component, visible and enabled, colours,
/// glyphs and column order. Loaded from JSON; every key is optional and falls back to
/// the default, so a theme file holds only what it changes. `homeroom theme print`
/// writes the default to start from.
public struct Theme: Codable, Sendable, Equatable {
    public var stateBar = StateBarTheme()
    public var roster = RosterTheme()
    public var stage = StageTheme()
    public var hands = HandsTheme()
    public var parties = PartiesTheme()
    public var counts = CountsTheme()
    public var status = StatusTheme()

    public init() {}

    public static let `default` = Theme()

    enum CodingKeys: String, CodingKey { case stateBar, roster, stage, hands, parties, counts, status }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = Theme.default
        stateBar = try c.value(.stateBar, d.stateBar)
        roster = try c.value(.roster, d.roster)
        stage = try c.value(.stage, d.stage)
        hands = try c.value(.hands, d.hands)
        parties = try c.value(.parties, d.parties)
        counts = try c.value(.counts, d.counts)
        status = try c.value(.status, d.status)
    }

    /// Visible and enabled of a component, by its theme section name (custom components
    /// that have no section are visible and enabled).
    public func switches(_ section: String) -> ComponentSwitches {
        switch section {
        case "stateBar": return ComponentSwitches(visible: stateBar.visible, enabled: stateBar.enabled)
        case "roster": return ComponentSwitches(visible: roster.visible, enabled: roster.enabled)
        case "stage": return ComponentSwitches(visible: stage.visible, enabled: stage.enabled)
        case "hands": return ComponentSwitches(visible: hands.visible, enabled: hands.enabled)
        case "parties": return ComponentSwitches(visible: parties.visible, enabled: parties.enabled)
        case "counts": return ComponentSwitches(visible: counts.visible, enabled: counts.enabled)
        case "status": return ComponentSwitches(visible: status.visible, enabled: true)
        default: return ComponentSwitches(visible: true, enabled: true)
        }
    }
}

public struct ComponentSwitches: Hashable, Sendable {
    public var visible: Bool
    /// A disabled component is drawn dimmed and its commands are refused.
    public var enabled: Bool
}

/// A glyph with its colour: what a cell shows for one state.
public struct Glyph: Codable, Sendable, Hashable {
    public var text: String
    public var color: TerminalColor

    public init(_ text: String, _ color: TerminalColor = .default) {
        self.text = text
        self.color = color
    }

    enum CodingKeys: String, CodingKey { case text, color }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        text = try c.value(.text, "")
        color = try c.value(.color, .default)
        if DisplayWidth.of(text) > 16 {
            throw DecodingError.dataCorruptedError(forKey: .text, in: c, debugDescription: "'\(text)' is wider than 16 columns")
        }
    }

    var style: TextStyle { TextStyle(foreground: color) }
}

/// The four camera or microphone states, each with its glyph (the seed's
/// "change the camera icons" example).
public struct StreamGlyphs: Codable, Sendable, Hashable {
    /// Not on stage: the device cannot be operated.
    public var inoperable: Glyph
    /// On stage, device off.
    public var deviceOff: Glyph
    /// On stage, device on, publishing not allowed.
    public var privilegeOff: Glyph
    /// On stage, device on, publishing allowed.
    public var live: Glyph

    public init(inoperable: Glyph, deviceOff: Glyph, privilegeOff: Glyph, live: Glyph) {
        self.inoperable = inoperable
        self.deviceOff = deviceOff
        self.privilegeOff = privilegeOff
        self.live = live
    }

    enum CodingKeys: String, CodingKey { case inoperable, deviceOff, privilegeOff, live }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StreamGlyphs.camera
        inoperable = try c.value(.inoperable, d.inoperable)
        deviceOff = try c.value(.deviceOff, d.deviceOff)
        privilegeOff = try c.value(.privilegeOff, d.privilegeOff)
        live = try c.value(.live, d.live)
    }

    public subscript(_ state: StreamState) -> Glyph {
        switch state {
        case .inoperable: return inoperable
        case .deviceOff: return deviceOff
        case .privilegeOff: return privilegeOff
        case .live: return live
        }
    }

    // The seed's tints: disabled (grey), off (red), on (blue).
    public static let camera = StreamGlyphs(inoperable: Glyph("·", .ansi(8)), deviceOff: Glyph("○ off", .ansi(8)),
                                            privilegeOff: Glyph("◐ held", .ansi(1)), live: Glyph("● live", .ansi(4)))
    public static let microphone = camera
}

/// Two glyphs for a yes/no cell.
public struct FlagGlyphs: Codable, Sendable, Hashable {
    public var on: Glyph
    public var off: Glyph

    public init(on: Glyph, off: Glyph) {
        self.on = on
        self.off = off
    }

    enum CodingKeys: String, CodingKey { case on, off }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        on = try c.value(.on, Glyph("yes"))
        off = try c.value(.off, Glyph("-", .ansi(8)))
    }

    public subscript(_ value: Bool) -> Glyph { value ? on : off }
}

/// The top bar: room name, class state with elapsed or remaining time, connection state.
public struct StateBarTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    /// The seed's first example: the state bar's background colour.
    public var background = TerminalColor.ansi(4)
    public var foreground = TerminalColor.ansi(15)
    public var showRoomType = true
    public var showLatency = true

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, enabled, background, foreground, showRoomType, showLatency }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StateBarTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        background = try c.value(.background, d.background)
        foreground = try c.value(.foreground, d.foreground)
        showRoomType = try c.value(.showRoomType, d.showRoomType)
        showLatency = try c.value(.showLatency, d.showLatency)
    }
}

/// A roster column.
public enum RosterColumn: String, Codable, Sendable, CaseIterable {
    case name, role, stage, auth, camera, mic, rewards, hand, online

    public var title: String {
        switch self {
        case .name: return "Name"
        case .role: return "Role"
        case .stage: return "Stage"
        case .auth: return "Auth"
        case .camera: return "Camera"
        case .mic: return "Mic"
        case .rewards: return "Rewards"
        case .hand: return "Hand"
        case .online: return "Online"
        }
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let column = RosterColumn(rawValue: text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "'\(text)' is not a column: use " + RosterColumn.allCases.map(\.rawValue).joined(separator: ", ")))
        }
        self = column
    }
}

/// The roster table (the seed's user list): columns, their order, and the glyphs.
public struct RosterTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    /// The seed's columns, in order; add role, hand or online, drop or reorder any.
    public var columns: [RosterColumn] = [.name, .stage, .auth, .camera, .mic, .rewards]
    public var headerColor = TerminalColor.default
    public var localUserColor = TerminalColor.ansi(6)
    public var offlineColor = TerminalColor.ansi(8)
    public var camera = StreamGlyphs.camera
    public var microphone = StreamGlyphs.microphone
    public var stage = FlagGlyphs(on: Glyph("on", .ansi(2)), off: Glyph("-", .ansi(8)))
    public var stageWaiting = Glyph("waiting", .ansi(3))
    public var auth = FlagGlyphs(on: Glyph("yes", .ansi(2)), off: Glyph("-", .ansi(8)))
    public var hand = FlagGlyphs(on: Glyph("up", .ansi(3)), off: Glyph("-", .ansi(8)))
    public var online = FlagGlyphs(on: Glyph("yes"), off: Glyph("no", .ansi(8)))
    public var rewardsColor = TerminalColor.ansi(3)
    /// Rows per page in the lecture hall; 0 fits the terminal.
    public var pageSize = 0

    public init() {}

    enum CodingKeys: String, CodingKey {
        case visible, enabled, columns, headerColor, localUserColor, offlineColor, camera, microphone, stage, stageWaiting, auth, hand,
             online, rewardsColor, pageSize
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = RosterTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        columns = try c.value(.columns, d.columns)
        headerColor = try c.value(.headerColor, d.headerColor)
        localUserColor = try c.value(.localUserColor, d.localUserColor)
        offlineColor = try c.value(.offlineColor, d.offlineColor)
        camera = try c.value(.camera, d.camera)
        microphone = try c.value(.microphone, d.microphone)
        stage = try c.value(.stage, d.stage)
        stageWaiting = try c.value(.stageWaiting, d.stageWaiting)
        auth = try c.value(.auth, d.auth)
        hand = try c.value(.hand, d.hand)
        online = try c.value(.online, d.online)
        rewardsColor = try c.value(.rewardsColor, d.rewardsColor)
        pageSize = try c.value(.pageSize, d.pageSize)
        if columns.isEmpty {
            throw DecodingError.dataCorruptedError(forKey: .columns, in: c, debugDescription: "at least one column is needed")
        }
        if Set(columns).count != columns.count {
            throw DecodingError.dataCorruptedError(forKey: .columns, in: c, debugDescription: "a column appears twice")
        }
        if pageSize < 0 || pageSize > 10_000 {
            throw DecodingError.dataCorruptedError(forKey: .pageSize, in: c, debugDescription: "\(pageSize) must be from 0 to 10000")
        }
    }

    public func streams(_ device: Device) -> StreamGlyphs { device == .camera ? camera : microphone }
}

/// The stage strip: who is on stage, and who waits for a seat.
public struct StageTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    public var titleColor = TerminalColor.default
    public var nameColor = TerminalColor.ansi(2)
    public var waitingColor = TerminalColor.ansi(3)
    public var emptyText = "nobody on stage"

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, enabled, titleColor, nameColor, waitingColor, emptyText }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StageTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        titleColor = try c.value(.titleColor, d.titleColor)
        nameColor = try c.value(.nameColor, d.nameColor)
        waitingColor = try c.value(.waitingColor, d.waitingColor)
        emptyText = try c.value(.emptyText, d.emptyText)
    }
}

/// Raised hands.
public struct HandsTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    public var titleColor = TerminalColor.default
    public var nameColor = TerminalColor.ansi(3)
    public var emptyText = "no hands up"
    /// Names shown before "+N more".
    public var maxNames = 12

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, enabled, titleColor, nameColor, emptyText, maxNames }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = HandsTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        titleColor = try c.value(.titleColor, d.titleColor)
        nameColor = try c.value(.nameColor, d.nameColor)
        emptyText = try c.value(.emptyText, d.emptyText)
        maxNames = try c.value(.maxNames, d.maxNames)
        if maxNames < 1 {
            throw DecodingError.dataCorruptedError(forKey: .maxNames, in: c, debugDescription: "\(maxNames) must be at least 1")
        }
    }
}

/// The one-to-one scene's two panels, side by side.
public struct PartiesTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    public var borderColor = TerminalColor.ansi(8)
    public var titleColor = TerminalColor.default

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, enabled, borderColor, titleColor }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = PartiesTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        borderColor = try c.value(.borderColor, d.borderColor)
        titleColor = try c.value(.titleColor, d.titleColor)
    }
}

/// The lecture hall's counts line.
public struct CountsTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var enabled = true
    public var color = TerminalColor.default

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, enabled, color }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = CountsTheme()
        visible = try c.value(.visible, d.visible)
        enabled = try c.value(.enabled, d.enabled)
        color = try c.value(.color, d.color)
    }
}

/// Lines the program adds under the scene (last command result, narration, key help).
public struct StatusTheme: Codable, Sendable, Hashable {
    public var visible = true
    public var color = TerminalColor.ansi(8)

    public init() {}

    enum CodingKeys: String, CodingKey { case visible, color }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StatusTheme()
        visible = try c.value(.visible, d.visible)
        color = try c.value(.color, d.color)
    }
}

extension TerminalColor: Codable {
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let color = TerminalColor(name: text) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath,
                debugDescription: "'\(text)' is not a colour: use default, black, red, green, yellow, blue, magenta, cyan, white, gray, "
                    + "bright-<name>, 0-255, or #RRGGBB"))
        }
        self = color
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(description)
    }
}

extension KeyedDecodingContainer {
    func value<T: Decodable>(_ key: Key, _ fallback: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback
    }
}
