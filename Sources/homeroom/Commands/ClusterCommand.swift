import HomeroomCore
import HomeroomNode
import HomeroomWire

/// `homeroom cluster` and `homeroom rooms`: what one node knows, from one hello (as
/// `nats server list` or `kubectl get nodes` answer from the server they reach).
enum ClusterCommand {
    static let clusterUsage = """
        OVERVIEW: The members of the cluster as one node sees them: id, address, state.

        USAGE: homeroom cluster --node <address> [--token <token>] [--json]

        OPTIONS:
          --node <address>     A node's listen address (HOMEROOM_NODES: the first one).
          --token <token>      A join token: a node started with --token-key lists its
                               peers only to a valid one.                 (HOMEROOM_TOKEN)
          --timeout-ms <n>     How long to wait for the node (default 1000).
          --json               One JSON object.
          -h, --help           Show help information.
        """

    static let roomsUsage = """
        OVERVIEW: The rooms a node holds, with how many writes it has of each.

        USAGE: homeroom rooms --node <address> [--json]

        A node started with --token-key lists its rooms to no client (a hello
        reveals nothing a stranger may not know); read them where operators do,
        on the node's --http address: /rooms.

        OPTIONS:
          --node <address>     A node's listen address (HOMEROOM_NODES: the first one).
          --timeout-ms <n>     How long to wait for the node (default 1000).
          --json               One JSON array.
          -h, --help           Show help information.
        """

    static func runCluster(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: clusterUsage)
        if reader.wantsHelp { print(clusterUsage); return }
        let (address, token, timeout, json) = try common(&reader)
        let hello = try ask(address, token: token, timeout: timeout)
        var members: [(id: String, address: String, publish: String, state: String, incarnation: UInt64)] = [
            (hello.node.description, hello.address, hello.publishAddress, "alive (answered)", hello.incarnation),
        ]
        for peer in hello.peers.sorted(by: { $0.address < $1.address }) where peer.node != hello.node {
            members.append((peer.node.description, peer.address, peer.publishAddress, Self.state(peer.status), peer.incarnation))
        }
        if json {
            let rows = members.map { member in
                JSONText.object([("node", .string(member.id)), ("address", .string(member.address)), ("publish", .string(member.publish)),
                                 ("state", .string(member.state)), ("incarnation", .int(Int64(truncatingIfNeeded: member.incarnation)))])
            }
            print(JSONText.object([("answered_by", .string(address)), ("members", .array(rows)),
                                   ("peers_hidden", .bool(hello.peers.isEmpty && hello.rooms.isEmpty && token == nil))]).rendered)
            return
        }
        let widths = [max(4, members.map(\.id.count).max() ?? 0), max(7, members.map(\.address.count).max() ?? 0),
                      max(7, members.map(\.publish.count).max() ?? 0)]
        func pad(_ text: String, _ width: Int) -> String { text + String(repeating: " ", count: max(0, width - text.count)) }
        print(pad("Node", widths[0]) + "  " + pad("Address", widths[1]) + "  " + pad("Publish", widths[2]) + "  State")
        for member in members {
            print(pad(member.id, widths[0]) + "  " + pad(member.address, widths[1]) + "  " + pad(member.publish, widths[2]) + "  " + member.state)
        }
        if hello.peers.isEmpty && token == nil {
            print("(no peers listed: this node has none, or requires a join token to list them: add --token)")
        }
    }

    static func runRooms(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: roomsUsage)
        if reader.wantsHelp { print(roomsUsage); return }
        let (address, _, timeout, json) = try common(&reader)
        let hello = try ask(address, token: nil, timeout: timeout)
        if hello.rooms.isEmpty && hello.peers.isEmpty && hello.sentAtMillis == 0 {
            // A stranger's answer (no clock): the node requires tokens.
            throw .failure("\(address) requires join tokens and lists its rooms to no client: read them on the node's --http address (/rooms)")
        }
        let rooms = hello.rooms.map { room in (room.roomID, room.seen.origins.values.reduce(UInt64(0)) { $0 &+ $1.highest }) }
        if json {
            print(JSONText.array(rooms.map { JSONText.object([("room", .string($0.0)), ("writes", .int(Int64(truncatingIfNeeded: $0.1)))]) }).rendered)
            return
        }
        if rooms.isEmpty {
            print("(no rooms on \(address) yet)")
            return
        }
        let width = max(4, rooms.map(\.0.count).max() ?? 0)
        print("Room" + String(repeating: " ", count: width - 4) + "  Writes")
        for (room, writes) in rooms { print(room + String(repeating: " ", count: width - room.count) + "  \(writes)") }
    }

    private static func common(_ reader: inout ArgumentReader) throws(CommandLineError) -> (String, String?, UInt64, Bool) {
        let environment = ProcessEnvironment.current
        let given = try reader.string("--node")
        let fromEnvironment = environment["HOMEROOM_NODES"]?.split(separator: ",").first.map { String($0).trimmed }
        let saved = SavedContexts.active()?.context
        guard let address = given ?? fromEnvironment ?? saved?.nodes.first, !address.isEmpty else {
            throw .usage("missing --node (or HOMEROOM_NODES): a node's address, e.g. tcp://127.0.0.1:7100", usage: reader.usage)
        }
        let token = try reader.string("--token") ?? environment["HOMEROOM_TOKEN"] ?? saved?.token
        let timeout = try reader.integer("--timeout-ms", in: UInt64(50)...UInt64(60_000)) ?? 1_000
        let json = reader.flag("--json")
        try reader.finish()
        return (address, token, timeout, json)
    }

    private static func ask(_ address: String, token: String?, timeout: UInt64) throws(CommandLineError) -> WireMessage.Heartbeat {
        do {
            return try NodeProbe.hello(address, token: token, timeoutMillis: timeout)
        } catch {
            throw .failure("cannot ask \(address): \(error.description) [\(error.code)]")
        }
    }

    static func state(_ status: WireMessage.PeerStatus) -> String {
        switch status {
        case .alive: return "alive"
        case .suspect: return "suspect"
        case .dead: return "down"
        }
    }
}
