import HomeroomCore
import HomeroomNode
import HomeroomWire

/// `homeroom cluster` and `homeroom rooms`: what one node knows, from one hello (as
/// `nats server list` or `kubectl get nodes` answer from the server they reach).
enum ClusterCommand {
    static let clusterUsage = """
        OVERVIEW: The members of the cluster as one node sees them: state, incarnation,
        when last heard, rooms, and how far behind that node each one is.

        USAGE: homeroom cluster [status] --node <address> [--token <token>] [--json]
               homeroom cluster check --node <address> [--token <token>] [--max-behind <n>]

        Members are shown by the names they were given (--name). Behind is replication
        lag: the writes the answering node has that the member's last heartbeat lacked
        (0 once it has caught up). Health is the answering node's own: ok, or the rooms
        it has quarantined.

        check: one line and an exit code for alerting (as `nats server check`):
        0 OK (every member alive and within --max-behind, health ok), 1 WARNING (a
        member suspect, down or draining, or behind by more than --max-behind, default
        1000; rooms quarantined), 2 CRITICAL (the node does not answer, or hears no other
        member of the cluster it knows).

        OPTIONS:
          --node <address>     A node's listen address (HOMEROOM_NODES: the first one).
          --token <token>      A join token: a node started with --token-key lists its
                               peers only to a valid one.                 (HOMEROOM_TOKEN)
          --tls-ca <file>      The authority that signed the node's certificate, for a
                               tls+tcp:// address.                        (HOMEROOM_TLS_CA)
          --timeout-ms <n>     How long to wait for the node (default 1000).
          --max-behind <n>     (check) Writes a member may be behind before WARNING (default 1000).
          --json               One JSON object.
          -h, --help           Show help information.
        """

    static let roomsUsage = """
        OVERVIEW: The rooms a node holds: users, who is online and on stage, writes.

        USAGE: homeroom rooms --node <address> [--json]

        A node started with --token-key lists its rooms to no client (a hello
        reveals nothing a stranger may not know); read them where operators do,
        on the node's --http address: /rooms.

        OPTIONS:
          --node <address>     A node's listen address (HOMEROOM_NODES: the first one).
          --tls-ca <file>      The authority that signed the node's certificate, for a
                               tls+tcp:// address.                        (HOMEROOM_TLS_CA)
          --timeout-ms <n>     How long to wait for the node (default 1000).
          --json               One JSON array.
          -h, --help           Show help information.
        """

    static func runCluster(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: clusterUsage)
        if reader.wantsHelp { print(clusterUsage); return }
        // `homeroom cluster status` and `homeroom cluster` are the same listing.
        let word = reader.leadingWord()
        if let word, word != "status" && word != "check" {
            throw .usage("unknown cluster command '\(word)': use 'homeroom cluster status' or 'homeroom cluster check'", usage: clusterUsage)
        }
        let maxBehind = try reader.integer("--max-behind", in: UInt64(0)...UInt64.max)
        if word == "check" {
            let (address, token, timeout, _) = try common(&reader)
            ClusterCheck.run(address: address, token: token, timeoutMillis: timeout, maxBehind: maxBehind ?? 1_000)
        }
        let (address, token, timeout, json) = try common(&reader)
        let hello = try ask(address, token: token, timeout: timeout)
        var answering = WireMessage.Peer(node: hello.node, address: hello.address, incarnation: hello.incarnation, status: .alive,
                                         publishAddress: hello.publishAddress)
        answering.rooms = UInt32(clamping: hello.rooms.count)
        answering.nodeName = hello.nodeName
        var members: [(peer: WireMessage.Peer, state: String, isSelf: Bool)] = [(answering, "alive (answered)", true)]
        for peer in hello.peers.sorted(by: { (Self.shownName($0), $0.address) < (Self.shownName($1), $1.address) }) where peer.node != hello.node {
            members.append((peer, peer.draining && peer.status == .alive ? "draining" : peer.status.name, false))
        }
        let health = hello.health.isEmpty ? "unknown (an older node)" : hello.health
        // A stranger's answer (no clock): the node requires tokens.
        let closed = hello.sentAtMillis == 0
        if json {
            let rows = members.map { member -> JSONText in
                var fields: [(String, JSONText)] = [("name", .string(member.peer.nodeName)), ("node", .string(member.peer.node.description)),
                                                     ("address", .string(member.peer.address)),
                                                     ("publish", .string(member.peer.publishAddress)), ("state", .string(member.state)),
                                                     ("incarnation", .int(Int64(truncatingIfNeeded: member.peer.incarnation))),
                                                     ("rooms", member.isSelf && closed ? .null : .int(Int64(member.peer.rooms)))]
                if !member.isSelf {
                    // Known only from another node's list: never heard from, nothing to compare.
                    let heard = member.peer.heardMillisAgo
                    fields.append(("heard_ms_ago", heard == .max ? .null : .int(Int64(truncatingIfNeeded: heard))))
                    fields.append(("behind", heard == .max ? .null : .int(Int64(truncatingIfNeeded: member.peer.behind))))
                }
                return JSONText.object(fields)
            }
            print(JSONText.object([("answered_by", .string(address)), ("health", .string(health)), ("members", .array(rows)),
                                   ("peers_hidden", .bool(hello.peers.isEmpty && hello.rooms.isEmpty && token == nil))]).rendered)
            return
        }
        print("\(address) answered: health \(health)")
        let table: [[String]] = [["Name", "Address", "State", "Incarnation", "Heard", "Rooms", "Behind"]] + members.map { member in
            let peer = member.peer
            let never = !member.isSelf && peer.heardMillisAgo == .max
            // A node that requires tokens lists its own rooms to no client.
            let rooms = member.isSelf && closed ? "-" : String(peer.rooms)
            return [Self.shownName(peer), peer.address, member.state, String(peer.incarnation),
                    member.isSelf ? "now" : never ? "never" : Self.ago(peer.heardMillisAgo), rooms,
                    member.isSelf || never ? "-" : String(peer.behind)]
        }
        Self.printTable(table)
        if hello.peers.isEmpty && token == nil {
            print("(no peers listed: this node has none, or requires a join token to list them: add --token)")
        }
    }

    static func runRooms(_ arguments: ArraySlice<String>) throws(CommandLineError) {
        var reader = ArgumentReader(arguments, usage: roomsUsage)
        if reader.wantsHelp { print(roomsUsage); return }
        let (address, _, timeout, json) = try common(&reader, readsToken: false)
        let hello = try ask(address, token: nil, timeout: timeout)
        if hello.rooms.isEmpty && hello.peers.isEmpty && hello.sentAtMillis == 0 {
            // A stranger's answer (no clock): the node requires tokens.
            throw .failure("\(address) requires join tokens and lists its rooms to no client: read them on the node's --http address (/rooms)")
        }
        let rooms = hello.rooms.map { room in (room, room.seen.origins.values.reduce(UInt64(0)) { $0 &+ $1.highest }) }
        if json {
            print(JSONText.array(rooms.map { room, writes in
                JSONText.object([("room", .string(room.roomID)), ("users", .int(Int64(room.users))), ("online", .int(Int64(room.online))),
                                 ("stage", .array(room.stage.map { .string($0) })), ("writes", .int(Int64(truncatingIfNeeded: writes)))])
            }).rendered)
            return
        }
        if rooms.isEmpty {
            print("(no rooms on \(address) yet)")
            return
        }
        Self.printTable([["Room", "Users", "Online", "Stage", "Writes"]] + rooms.map { room, writes in
            [room.roomID, String(room.users), String(room.online), Self.names(room.stage), String(writes)]
        })
    }

    /// A member as the operator named it (`--name`), or its replica id while its name is
    /// not known yet (a peer only gossiped, or an older node).
    static func shownName(_ peer: WireMessage.Peer) -> String {
        peer.nodeName.isEmpty ? peer.node.description : peer.nodeName
    }

    /// Columns padded to their widest cell, two spaces apart.
    static func printTable(_ rows: [[String]]) {
        guard let columns = rows.first?.count else { return }
        let widths = (0..<columns).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { column, text in
                column == columns - 1 ? text : text + String(repeating: " ", count: widths[column] - text.count)
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// "0.2 s ago", "3 min ago": when a member was last heard from.
    static func ago(_ millis: UInt64) -> String {
        if millis < 60_000 { return "\(millis / 1000).\(millis % 1000 / 100) s ago" }
        if millis < 3_600_000 { return "\(millis / 60_000) min ago" }
        return "\(millis / 3_600_000) h ago"
    }

    /// Stage names, at most 40 characters ("-" for none).
    static func names(_ users: [String]) -> String {
        guard !users.isEmpty else { return "-" }
        var shown: [String] = []
        var length = 0
        for user in users {
            if length + user.count + 2 > 40 && !shown.isEmpty { return shown.joined(separator: ", ") + " (+\(users.count - shown.count))" }
            shown.append(user)
            length += user.count + 2
        }
        return shown.joined(separator: ", ")
    }

    /// The node, token (`readsToken`: a closed node's rooms are listed to no token), timeout and --json.
    static func common(_ reader: inout ArgumentReader, readsToken: Bool = true,
                       defaultTimeout: UInt64 = 1_000) throws(CommandLineError) -> (String, String?, UInt64, Bool) {
        let environment = ProcessEnvironment.current
        let given = try reader.string("--node")
        let fromEnvironment = environment["HOMEROOM_NODES"]?.split(separator: ",").first.map { String($0).trimmed }
        let saved = SavedContexts.active()?.context
        guard let address = given ?? fromEnvironment ?? saved?.nodes.first, !address.isEmpty else {
            throw .usage("missing --node (or HOMEROOM_NODES): a node's address, e.g. tcp://127.0.0.1:7100", usage: reader.usage)
        }
        let token = readsToken ? try reader.string("--token") ?? environment["HOMEROOM_TOKEN"] ?? saved?.token : nil
        let authority = try reader.string("--tls-ca") ?? environment["HOMEROOM_TLS_CA"]
        let timeout = try reader.integer("--timeout-ms", in: UInt64(50)...UInt64(60_000)) ?? defaultTimeout
        let json = reader.flag("--json")
        try reader.finish()
        try ClientTLS.configure(authority: authority, nodes: [address], usage: reader.usage)
        return (address, token, timeout, json)
    }

    private static func ask(_ address: String, token: String?, timeout: UInt64) throws(CommandLineError) -> WireMessage.Heartbeat {
        do {
            return try NodeProbe.hello(address, token: token, timeoutMillis: timeout)
        } catch {
            throw .failure("cannot ask \(address): \(error.description) [\(error.code)]")
        }
    }
}
