/// Who a user is in a room. `system` is a node acting for the cluster
/// (ending the sessions of a node that died); no client may claim it.
public enum Role: UInt8, CaseIterable, Hashable, Comparable, Sendable, CustomStringConvertible {
    case observer = 0
    case student = 1
    case assistant = 2
    case teacher = 3
    case system = 4

    public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }

    /// Teacher and assistant run the class; the node itself may too.
    public var moderates: Bool { self == .teacher || self == .assistant || self == .system }

    public var description: String {
        switch self {
        case .observer: return "observer"
        case .student: return "student"
        case .assistant: return "assistant"
        case .teacher: return "teacher"
        case .system: return "system"
        }
    }

    public init?(name: String) {
        guard let role = Role.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = role
    }
}

public enum RoomType: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    case oneToOne = 0
    case smallClassroom = 1
    case lectureHall = 2

    public var description: String {
        switch self {
        case .oneToOne: return "one-to-one"
        case .smallClassroom: return "small-classroom"
        case .lectureHall: return "lecture-hall"
        }
    }

    public init?(name: String) {
        guard let type = RoomType.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = type
    }
}

/// Class state only moves forward; the raw values give the order.
public enum ClassState: UInt8, CaseIterable, Hashable, Comparable, Sendable, CustomStringConvertible {
    case before = 0
    case during = 1
    case after = 2

    public static func < (a: ClassState, b: ClassState) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .before: return "before"
        case .during: return "during"
        case .after: return "after"
        }
    }
}

public enum Device: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    case camera = 0
    case microphone = 1

    public var description: String { self == .camera ? "camera" : "microphone" }
}

/// The four states the roster shows for a camera or a microphone.
public enum StreamState: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    /// Not on stage: the device cannot be operated.
    case inoperable = 1
    /// On stage, the user's device is off.
    case deviceOff = 2
    /// On stage, device on, but the teacher has not allowed publishing.
    case privilegeOff = 3
    /// On stage, device on, publishing allowed: live.
    case live = 4

    public var description: String {
        switch self {
        case .inoperable: return "inoperable"
        case .deviceOff: return "device-off"
        case .privilegeOff: return "privilege-off"
        case .live: return "live"
        }
    }

    public static func derive(onStage: Bool, deviceOn: Bool, privilegeOn: Bool) -> StreamState {
        guard onStage else { return .inoperable }
        guard deviceOn else { return .deviceOff }
        return privilegeOn ? .live : .privilegeOff
    }
}

/// When the class is planned: start (ms since the epoch), length and the grace period
/// after the end during which the room stays open.
public struct Schedule: Hashable, Sendable {
    public var startMillis: UInt64
    public var durationSeconds: UInt32
    public var closeDelaySeconds: UInt32

    public init(startMillis: UInt64 = 0, durationSeconds: UInt32 = 45 * 60, closeDelaySeconds: UInt32 = 10 * 60) {
        self.startMillis = startMillis
        self.durationSeconds = durationSeconds
        self.closeDelaySeconds = closeDelaySeconds
    }
}

public typealias UserID = String
public typealias SessionID = String

/// The administrative identity (docs/PROTOCOL.md, "Operator writes"): a script or an
/// operator acting on a room without being in it. It writes without joining, as the
/// role it claims (a token for it, on a node that requires tokens), leaves no user
/// record, no session and nothing in anyone's feed, and can never join.
public enum OperatorIdentity {
    public static let user: UserID = "@operator"
}
