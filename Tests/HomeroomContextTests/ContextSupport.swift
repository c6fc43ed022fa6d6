@preconcurrency import Glibc
import HomeroomContext
import HomeroomNode
import Synchronization

/// Polls `condition` every 10 ms until it holds or `seconds` pass; bounded, never hangs.
func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = WallClock.monotonicMillis() + UInt64(seconds * 1000)
    while WallClock.monotonicMillis() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// In-process nodes on loopback (ephemeral ports) or inproc, meshed from the first;
/// every node and pool is stopped on deinit.
final class ContextCluster {
    var nodes: [ClusterNode] = []
    var pools: [ContextPool] = []
    let logger: Logger
    let label: String

    init(size: Int, label: String, transport: String = "inproc") throws {
        self.label = label
        (logger, _) = Logger.capturing(label: label, level: .warning)
        for index in 0..<size {
            let unique = UInt32.random(in: 0...UInt32.max)
            let (listen, publish) = transport == "tcp" ? ("tcp://127.0.0.1:0", "tcp://127.0.0.1:0")
                : ("inproc://\(label)-\(index)-rep-\(unique)", "inproc://\(label)-\(index)-pub-\(unique)")
            var config = NodeConfig(name: "\(label)-\(index)", listen: listen, publish: publish,
                                    seeds: nodes.first.map { [$0.listenAddress] } ?? [])
            config.heartbeatMillis = 50
            config.suspectMillis = 300
            config.downMillis = 1_000
            config.requestTimeoutMillis = 400
            nodes.append(try ClusterNode(config: config, logger: logger))
        }
    }

    func meshed() -> Bool { eventually(10) { nodes.allSatisfy { $0.alivePeers.count == nodes.count - 1 } } }

    /// A pool for `user`, attached first to node `node` (the others are fallbacks); not joined yet.
    func pool(_ user: String, _ role: Role, node: Int = 0, room: String, reconnect: ReconnectOptions? = nil) throws -> ContextPool {
        let order = [node] + nodes.indices.filter { $0 != node }
        var config = ClassroomConfig(room: room, user: user, name: user.capitalized, role: role, nodes: order.map { nodes[$0].listenAddress })
        config.requestTimeoutMillis = 400
        config.syncIntervalMillis = 100
        config.monitorIntervalMillis = 20
        if let reconnect { config.reconnect = reconnect }
        let pool = try ContextPool(config: config, logger: logger)
        pools.append(pool)
        return pool
    }

    func joined(_ user: String, _ role: Role, node: Int = 0, room: String) throws -> ContextPool {
        let pool = try pool(user, role, node: node, room: room)
        try pool.room.join()
        return pool
    }

    deinit {
        for pool in pools { pool.close() }
        for node in nodes { node.stop() }
    }
}

/// Records every event it gets, from every handler protocol.
final class Recorder: RoomHandler, UserHandler, StreamHandler, MonitorHandler, Sendable {
    private let events = Mutex<[String]>([])

    func record(_ text: String) { events.withLock { $0.append(text) } }
    var all: [String] { events.withLock { $0 } }
    func saw(_ text: String) -> Bool { all.contains(text) }

    func onJoinRoomSuccess(_ room: RoomInfo) { record("joined \(room.id)") }
    func onLeftRoom() { record("left") }
    func onRoomClosed() { record("room closed") }
    func onClassStateUpdated(_ state: ClassState) { record("class \(state)") }
    func onRoomInfoUpdated(_ room: RoomInfo) { record("room \(room.name)") }
    func onRoomPropertiesUpdated(keys: [String]) { record("room properties \(keys.joined(separator: ","))") }
    func onRemoteUserJoined(_ user: UserInfo) { record("joined: \(user.id)") }
    func onRemoteUserLeft(_ user: UserInfo) { record("left: \(user.id)") }
    func onCoHostUserListAdded(_ users: [UserInfo]) { record("stage+ \(users.map(\.id).joined(separator: ","))") }
    func onCoHostUserListRemoved(_ users: [UserInfo]) { record("stage- \(users.map(\.id).joined(separator: ","))") }
    func onUserBoardUpdated(_ user: UserInfo, granted: Bool) { record("board \(user.id) \(granted)") }
    func onUserRewarded(_ user: UserInfo, amount: Int32, total: Int64) { record("reward \(user.id) +\(amount) =\(total)") }
    func onUserHandsWave(_ user: UserInfo) { record("hand up \(user.id)") }
    func onUserHandsDown(_ user: UserInfo) { record("hand down \(user.id)") }
    func onHandRaisingUpdated(_ policy: HandRaisingPolicy) { record("hand raising \(policy)") }
    func onInvitationReceived(_ invitation: InvitationInfo) { record("invited \(invitation.user.id) by \(invitation.inviter?.id ?? "?")") }
    func onInvitationAnswered(_ invitation: InvitationInfo) { record("invitation \(invitation.user.id) \(invitation.status.rawValue)") }
    func onInvitationTimedOut(_ invitation: InvitationInfo) { record("invitation \(invitation.user.id) timed out") }
    func onUserKickedOut(_ user: UserInfo) { record("kicked \(user.id)") }
    func onUserBanned(_ user: UserInfo) { record("banned \(user.id)") }
    func onLocalUserKickedOut(banned: Bool) { record("I was \(banned ? "banned" : "kicked")") }
    func onUserPropertiesUpdated(_ user: UserInfo, keys: [String]) { record("props \(user.id) \(keys.joined(separator: ","))") }
    func onStreamUpdated(_ stream: StreamInfo) { record("\(stream.owner.id) \(stream.device) \(stream.state)") }
    func onRoomMuteUpdated(_ device: Device, muted: Bool) { record("room \(device) \(muted ? "muted" : "unmuted")") }
    func onConnectionStateUpdated(_ state: ConnectionState) { record("connection \(state.rawValue)") }
}
