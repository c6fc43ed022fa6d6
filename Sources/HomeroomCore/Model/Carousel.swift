/// Flexible Classroom's stage carousel: students take turns on stage every
/// `intervalSeconds`. There is no coordinator: every replica derives each turn from
/// its clock, the carousel's start (the stamp of the write that started it) and these
/// settings (`RoomState.carouselTurn(atMillis:)`), so replicas that hold the same
/// carousel put the same students on stage at the same moment.
public struct Carousel: Hashable, Sendable {
    /// Which students take turns.
    public enum Range: UInt8, Hashable, Sendable, CaseIterable {
        /// Every online student.
        case all = 1
        /// Online students whose camera is on.
        case cameraOn = 2

        public var name: String { self == .all ? "all" : "camera-on" }
        public init?(name: String) {
            switch name {
            case "all": self = .all
            case "camera-on": self = .cameraOn
            default: return nil
            }
        }
    }

    /// In which order.
    public enum Order: UInt8, Hashable, Sendable, CaseIterable {
        /// The order they joined in: the earliest start of each one's open sessions.
        case joinOrder = 1
        /// A shuffle per turn, the same on every replica (`RoomState.carouselShuffle`).
        case random = 2

        public var name: String { self == .joinOrder ? "join-order" : "random" }
        public init?(name: String) {
            switch name {
            case "join-order", "join": self = .joinOrder
            case "random": self = .random
            default: return nil
            }
        }
    }

    public var running: Bool
    public var intervalSeconds: UInt32
    public var range: Range
    public var order: Order

    /// Flexible Classroom's bounds and default.
    public static let intervalRange: ClosedRange<UInt32> = 10...99
    public static let defaultIntervalSeconds: UInt32 = 60
    public static let stopped = Carousel(running: false)

    public init(running: Bool = true, intervalSeconds: UInt32 = Carousel.defaultIntervalSeconds, range: Range = .all, order: Order = .joinOrder) {
        self.running = running
        self.intervalSeconds = intervalSeconds
        self.range = range
        self.order = order
    }
}

/// One turn of a running carousel, as a replica derives it at a moment.
public struct CarouselTurn: Hashable, Sendable {
    /// The turn's number, 0 for the first, counted from the carousel's start.
    public var number: UInt64
    /// The students on stage in this turn, in stage order.
    public var onStage: [UserID]
    /// The students taking turns, in the carousel's order (join order for both orders).
    public var candidates: [UserID]
    /// When the next turn starts (Unix ms, the replica's clock).
    public var nextTurnAtMillis: UInt64
    /// Whether turns change anything: false while every candidate fits on stage.
    public var rotates: Bool

    public init(number: UInt64, onStage: [UserID], candidates: [UserID], nextTurnAtMillis: UInt64, rotates: Bool) {
        self.number = number
        self.onStage = onStage
        self.candidates = candidates
        self.nextTurnAtMillis = nextTurnAtMillis
        self.rotates = rotates
    }
}
