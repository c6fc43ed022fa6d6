/// Flexible Classroom's breakout groups. A group is a room of its own (`roomID(of:in:)`),
/// with its own stage, chat and whiteboard grants; the main room keeps which groups
/// exist and who is in which (`RoomState.breakoutGroups`, `breakoutAssignments`), so its
/// roster shows everyone's group and every member's client knows where to go. Ending
/// the groups (`Operation.endBreakout`) voids every group and assignment made before it,
/// on every replica, whatever arrives late.
public enum Breakout {
    public static let maxGroups = 20
    public static let maxMembers = 17
    public static let maxIDBytes = 16
    public static let maxNameBytes = 64
    /// Between a main room's id and a group's in the group's room id.
    public static let separator: Character = ":"

    /// A group id: 1-16 bytes of a-z, 0-9, - and _.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maxIDBytes
            && id.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
    }

    /// The room a group meets in: `<main room>:<group id>`.
    public static func roomID(of group: String, in mainRoom: String) -> String { mainRoom + String(separator) + group }

    /// The main room and group id of a group's room id (nil for a room that is no group's).
    public static func parse(roomID: String) -> (mainRoom: String, group: String)? {
        guard let index = roomID.lastIndex(of: separator) else { return nil }
        let group = String(roomID[roomID.index(after: index)...])
        let main = String(roomID[..<index])
        return !main.isEmpty && isValidID(group) ? (main, group) : nil
    }
}

/// A live breakout group as a reader sees it.
public struct BreakoutGroup: Hashable, Sendable {
    public var id: String
    public var name: String
    /// Its members, in natural order of their ids.
    public var members: [UserID]
    /// The room it meets in.
    public var roomID: String

    public init(id: String, name: String, members: [UserID], roomID: String) {
        self.id = id
        self.name = name
        self.members = members
        self.roomID = roomID
    }
}
