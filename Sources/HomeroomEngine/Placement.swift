import HomeroomCore

/// Which nodes hold a room (docs/PROTOCOL.md, "Placement"): the `replicas` members with
/// the highest score for it, by rendezvous (highest-random-weight) hashing. Every node
/// that knows the same members picks the same owners, without asking anyone, and a
/// member joining or leaving moves only the rooms it gains or loses (about
/// `replicas / members` of them), never a room between two members that stay.
///
/// Members are node names (`--name`), not replica ids: a node rebuilt with a new store
/// (a new replica id) keeps its rooms. They are the nodes a node knows and has not
/// forgotten (down past the permanent-down period), alive or not: a crash or a
/// partition moves no room; a node forgotten does. Nodes that know different members for a while pick different owners
/// for some rooms; the handoff rule (a copy goes only once every owner holds it) makes
/// that safe, and gossip makes the members agree again.
public struct Placement: Sendable, Equatable {
    /// Copies of each room; 0: every member holds every room (no placement).
    public var replicas: Int
    /// Node names, sorted.
    public private(set) var members: [String]
    /// Rooms kept on another number of copies than `replicas` (a lecture hall on more
    /// nodes, so its audience spreads over more publishers; 0: on every member), by
    /// room id (a group's room follows its main room's entry). The same on every node.
    public var pinned: [String: Int]

    public init(replicas: Int, members: some Sequence<String>, pinned: [String: Int] = [:]) {
        self.replicas = max(0, replicas)
        self.members = Array(Set(members)).sorted()
        self.pinned = pinned.mapValues { max(0, $0) }
    }

    /// Whether every member holds every room (no room has fewer copies than members).
    public var everywhere: Bool { copies(nil) == 0 && pinned.values.allSatisfy { $0 == 0 || $0 >= members.count } }

    /// How many copies the room has (its pinned count, else `replicas`), or 0 when every
    /// member holds it; nil: the default room.
    public func copies(_ roomID: String?) -> Int {
        let count = roomID.flatMap { pinned[Self.key(of: $0)] } ?? replicas
        return count == 0 || count >= members.count ? 0 : count
    }

    /// The room's owners, best score first.
    /// A breakout group's room (`<room>:<group>`) lives with its main room: its doors
    /// are checked against the main room's state.
    public func owners(of roomID: String) -> [String] {
        let count = copies(roomID)
        if count == 0 { return members }
        let base = RoomDigestHash.of(roomID: Self.key(of: roomID))
        var scored = members.map { (score: Self.score(base, $0), node: $0) }
        scored.sort { ($0.score, $0.node) > ($1.score, $1.node) }
        return scored.prefix(count).map(\.node)
    }

    public func owns(_ node: String, room roomID: String) -> Bool {
        if copies(roomID) == 0 { return members.contains(node) || members.isEmpty }
        return owners(of: roomID).contains(node)
    }

    /// What a room is placed by: its own id, or its main room's for a group's room.
    public static func key(of roomID: String) -> String {
        Breakout.parse(roomID: roomID)?.mainRoom ?? roomID
    }

    /// A member's score for a room: the finaliser over the room id's hash
    /// (`RoomDigestHash.of(roomID:)`) and the 64-bit FNV-1a hash of the member's name
    /// (`ReplicaID(name:)`). Ties (never seen in practice) go to the greater name.
    public static func score(_ roomHash: UInt64, _ name: String) -> UInt64 {
        RoomDigestHash.mix(roomHash, ReplicaID(name: name).rawValue)
    }
}
