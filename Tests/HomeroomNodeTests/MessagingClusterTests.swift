import Foundation
import HomeroomCore
import HomeroomWire
import Synchronization
import Testing
@testable import HomeroomNode

/// Collects what a client's listeners hand it, for assertions.
final class Received: Sendable {
    let deliveries = Mutex<[MessageInbox.Delivery]>([])
    let messaging = Mutex<[MessagingChange]>([])
    let presence = Mutex<[PresenceBatcher.Event]>([])

    init(_ client: RoomClient) {
        client.onMessage { [self] batch in deliveries.withLock { $0 += batch } }
        client.onMessagingChange { [self] batch in messaging.withLock { $0 += batch } }
        client.onPresence { [self] batch in presence.withLock { $0 += batch } }
    }

    var keys: [MessageKey] { deliveries.withLock { $0.map(\.message.key) } }
    var texts: [String] { deliveries.withLock { $0.map { String(decoding: $0.message.payload, as: UTF8.self) } } }

    func conflicts() -> [PropertyConflict] {
        messaging.withLock { $0.compactMap { if case let .propertyConflict(c) = $0 { return c } else { return nil } } }
    }
}

/// Room and peer messages, moderation, presence and property revisions across real
/// nodes, with the fault hooks dropping, duplicating and delaying cluster traffic.
@Suite(.serialized) struct MessagingClusterTests {
    static func text(_ string: String) -> [UInt8] { Array(string.utf8) }

    static func lossy(_ cluster: TestCluster, seed: UInt64, drop: Int = 30) {
        for (index, node) in cluster.nodes.enumerated() {
            var faults = FaultPolicy(seed: seed &+ UInt64(index), dropPercent: drop, duplicatePercent: 10)
            faults.delayMillis = 2
            faults.jitterMillis = 10
            node.faults = faults
        }
    }

    /// Each sender's deliveries, in the order they came.
    static func perSender(_ keys: [MessageKey]) -> [UserID: [UInt64]] {
        keys.reduce(into: [:]) { $0[$1.sender, default: []].append($1.counter) }
    }

    @Test(arguments: [UInt64(21), 22])
    func roomMessagesReachEveryoneOnceInEachSendersOrder(seed: UInt64) throws {
        let cluster = try TestCluster(size: 3, transport: "inproc", label: "chat\(seed)")
        #expect(cluster.meshed())
        Self.lossy(cluster, seed: seed)
        let room = "chat"
        // The listeners' clients also lose 20% of what their node publishes to them.
        let clients = [("t", Role.teacher, 0), ("s1", .student, 1), ("s2", .student, 2), ("s3", .student, 0)].map { user, role, node in
            cluster.client(user, role, node: node, room: room) { options in
                options.receiveFaults = FaultPolicy(seed: seed &* 31 &+ UInt64(node), dropPercent: 20, duplicatePercent: 10)
                options.messageHoldMillis = 5_000
            }
        }
        defer { for client in clients { client.close() } }
        let received = clients.map(Received.init)
        for client in clients { try client.connect() }
        #expect(eventually(10) { clients.allSatisfy { client in ["t", "s1", "s2", "s3"].allSatisfy { client.replica.users[$0]?.isKnown == true } } })
        var sent: [MessageKey] = []
        for index in 0..<20 {
            sent.append(try clients[0].send(Self.text("t\(index)")))
            sent.append(try clients[1].send(Self.text("a\(index)")))
        }
        let everyone = eventually(15) { received.allSatisfy { Set($0.keys) == Set(sent) } }
        #expect(everyone, "seed \(seed): deliveries \(received.map { $0.keys.count }) of \(sent.count)")
        for (index, log) in received.enumerated() {
            let keys = log.keys
            #expect(keys.count == Set(keys).count, "seed \(seed): client \(index) got a message twice")
            for (sender, counters) in Self.perSender(keys) {
                #expect(counters == counters.sorted(), "seed \(seed): client \(index) got \(sender)'s messages out of order")
            }
            #expect(log.deliveries.withLock { $0.allSatisfy { !$0.late } }, "seed \(seed): client \(index) had a late delivery")
        }
        #expect(eventually(10) { cluster.converged(room: room, clients: clients) }, "seed \(seed)")
        let history = clients[3].history.map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(history.filter { $0.hasPrefix("t") } == (0..<20).map { "t\($0)" })
        // A retried send (same counter) is stored once: the node answers DUPLICATE.
        let retried = try clients[0].sendWrite(.sendMessage(type: "chat", payload: Self.text("once"), previous: 0), retries: 0)
        let key = MessageKey(sender: "t", counter: retried.write.authorCounter)
        #expect(eventually(5) { cluster.nodes[1].room(room)?.messages[key] != nil })
        #expect(cluster.nodes[1].submit(room: room, retried.write, requestID: 99).status == .duplicate)
        #expect(cluster.nodes.allSatisfy { $0.room(room)?.messages.entries.keys.filter { $0 == key }.count ?? 0 <= 1 })
    }

    @Test func aClientThatWasAwayCatchesUpOnExactlyWhatItMissed() throws {
        let cluster = try TestCluster(size: 2, label: "away")
        #expect(cluster.meshed())
        let room = "away"
        let teacher = cluster.client("t", .teacher, node: 1, room: room)
        let dan = cluster.client("dan", .student, node: 0, room: room)
        defer { teacher.close(); dan.close() }
        let log = Received(dan)
        try teacher.connect()
        try teacher.send(Self.text("before dan"))
        // Dan joins through node 0 once the message has reached it: then it is history, not news.
        #expect(eventually(5) { cluster.nodes[0].room(room)?.messages.count == 1 })
        try dan.connect()
        #expect(dan.history.map(\.payload) == [Self.text("before dan")])
        try teacher.send(Self.text("live 1"))
        #expect(eventually(5) { log.texts == ["live 1"] })
        // Dan's node goes away; the teacher keeps talking; Dan resumes through the other node.
        cluster.nodes[0].stop()
        for index in 0..<5 { try teacher.send(Self.text("missed \(index)")) }
        #expect(eventually(10) { dan.connectionState == .connected && dan.attachedNode == cluster.nodes[1].replica })
        #expect(eventually(5) { log.texts.count == 6 })
        #expect(log.texts == ["live 1"] + (0..<5).map { "missed \($0)" }, "\(log.texts)")
        try teacher.send(Self.text("after"))
        #expect(eventually(5) { log.texts.last == "after" })
        #expect(log.texts.count == 7)
        #expect(dan.history.count == 8)
    }

    @Test func peerMessagesReachTheirRecipientOnAnotherNodeAndNobodyElse() throws {
        let cluster = try TestCluster(size: 3, transport: "inproc", label: "peer")
        #expect(cluster.meshed())
        Self.lossy(cluster, seed: 7)
        let room = "peer"
        let ada = cluster.client("ada", .student, node: 0, room: room)
        let bob = cluster.client("bob", .student, node: 2, room: room)
        let cat = cluster.client("cat", .student, node: 1, room: room)
        defer { for client in [ada, bob, cat] { client.close() } }
        let logs = [ada, bob, cat].map(Received.init)
        for client in [ada, bob, cat] { try client.connect() }
        // A SUB socket on the room topic of bob's node, as anyone could open.
        let sniffer = try Sniffer(cluster.nodes[2].publishAddress, topic: Topics.clientRoom(room))
        defer { sniffer.close() }
        #expect(eventually(10) { [ada, cat].allSatisfy { $0.replica.users["bob"]?.isKnown == true } })
        var whispers: [MessageKey] = []
        for index in 0..<10 { whispers.append(try ada.sendPeer(to: "bob", type: "whisper", Self.text("psst \(index)"))) }
        try cat.send(Self.text("hello all"))
        #expect(eventually(10) { Set(logs[1].keys).isSuperset(of: whispers) }, "bob got \(logs[1].keys.count)")
        #expect(Self.perSender(logs[1].keys)["ada"] == whispers.map(\.counter))
        #expect(eventually(5) { logs[2].texts.contains("hello all") && logs[0].texts.contains("hello all") })
        #expect(eventually(10) { cluster.converged(room: room, clients: [ada, bob, cat]) })
        // Cat, and the room topic, never saw a whisper; ada sees her own in her history.
        #expect(logs[2].deliveries.withLock { $0.allSatisfy { $0.message.recipient == nil } })
        #expect(!cat.replica.messages.entries.values.contains { $0.isPeer })
        #expect(ada.history.filter(\.isPeer).count == 10 && bob.history.filter(\.isPeer).count == 10)
        var sniffed = 0
        for message in sniffer.messages {
            if let (_, payload) = Topics.split(message), let envelope = try? WireCodec.decode(Array(payload)),
               case let .deltaBatch(batch) = envelope.message, batch.deltas.contains(where: { $0.operation.peerRecipient != nil }) {
                sniffed += 1
            }
        }
        #expect(sniffed == 0, "a peer message went out on the room topic")
        // Every node stores the whispers under ada's node's private origin; cat's seen covers them.
        let origin = cluster.nodes[0].privateOrigin
        #expect(cluster.nodes.allSatisfy { $0.room(room)?.seen.contiguous(origin) == 10 })
        #expect(eventually(5) { cat.seen.contiguous(origin) == 10 })
    }

    @Test func teachersMuteChatForOneOrForEveryone() throws {
        let cluster = try TestCluster(size: 2, label: "mute")
        #expect(cluster.meshed())
        let room = "mute"
        let teacher = cluster.client("t", .teacher, node: 0, room: room)
        let assistant = cluster.client("a", .assistant, node: 1, room: room)
        let sam = cluster.client("sam", .student, node: 1, room: room)
        let una = cluster.client("una", .student, node: 0, room: room)
        defer { for client in [teacher, assistant, sam, una] { client.close() } }
        let samLog = Received(sam)
        for client in [teacher, assistant, sam, una] { try client.connect() }
        #expect(eventually(5) { cluster.nodes.allSatisfy { node in ["t", "sam", "una"].allSatisfy { node.room(room)?.users[$0]?.isKnown == true } } })
        try teacher.write(.setChatMuted(user: "sam", muted: true))
        #expect(eventually(5) { sam.replica.users["sam"]?.chatMuted.value == true && cluster.nodes[1].room(room)?.users["sam"]?.chatMuted.value == true })
        // Changes reach listeners after the replica has them: wait for the event too.
        #expect(eventually(5) { samLog.messaging.withLock { $0.contains(.chatMuteUpdated(user: "sam", muted: true)) } })
        #expect(throws: ClientError.refused(code: "muted", message: "chat is muted for sam by a teacher or an assistant")) {
            try sam.send(Self.text("let me talk"))
        }
        try una.send(Self.text("una speaks"))
        // A muted student may still write to the teacher.
        try sam.sendPeer(to: "t", Self.text("may I?"))
        do {
            try sam.sendPeer(to: "una", Self.text("psst"))
            Issue.record("a muted student whispered to another student")
        } catch {
            #expect(error.code == "muted")
        }
        try assistant.write(.setChatMuted(user: nil, muted: true))
        #expect(eventually(5) { cluster.nodes[0].room(room)?.chatMuted.value == true })
        do {
            try una.send(Self.text("still here?"))
            Issue.record("a student sent while chat was muted for everyone")
        } catch {
            #expect(error.code == "muted")
        }
        try teacher.send(Self.text("quiet please"))
        try assistant.send(Self.text("thank you"))
        do {
            try sam.write(.setChatMuted(user: nil, muted: false))
            Issue.record("a student unmuted the room")
        } catch {
            #expect(error.code == "not-allowed")
        }
        try teacher.write(.setChatMuted(user: nil, muted: false))
        try teacher.write(.setChatMuted(user: "sam", muted: false))
        #expect(eventually(5) { sam.replica.users["sam"]?.chatMuted.value == false && sam.replica.chatMuted.value == false })
        _ = try? sam.send(Self.text("thanks"))   // may race the unmute reaching node 1
        #expect(eventually(5) {
            (try? sam.send(Self.text("again"))) != nil || sam.history.contains { $0.payload == Self.text("thanks") }
        })
        #expect(eventually(5) { cluster.converged(room: room, clients: [teacher, assistant, sam, una]) })
    }

    @Test func concurrentConditionalWritesUnderAPartitionAreBothAcceptedAndTheLoserIsTold() throws {
        let cluster = try TestCluster(size: 2, label: "cas")
        #expect(cluster.meshed())
        let room = "cas"
        let left = cluster.client("t", .teacher, node: 0, room: room)
        let right = cluster.client("a", .assistant, node: 1, room: room)
        defer { left.close(); right.close() }
        let leftLog = Received(left), rightLog = Received(right)
        try left.connect()
        try right.connect()
        let first = try left.setRoomProperty("quiz", value: Self.text("q1"), ifRevision: 0)
        #expect(first.revision == 1)
        #expect(eventually(5) { right.propertyRevision(.room, key: "quiz") == 1 })
        do {
            _ = try right.setRoomProperty("quiz", value: Self.text("stale"), ifRevision: 0)
            Issue.record("a conditional write on an old revision was accepted")
        } catch {
            #expect(error.code == "revision-mismatch")
        }
        // A partition: both sides read revision 1 and write "only if still 1".
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[1].faults = cut
        Sleep.milliseconds(100)
        let mine = try left.setRoomProperty("quiz", value: Self.text("left"), ifRevision: 1)
        Sleep.milliseconds(5)
        let theirs = try right.setRoomProperty("quiz", value: Self.text("right"), ifRevision: 1)
        #expect(mine.revision == 2 && theirs.revision == 2)
        cluster.nodes[1].faults = FaultPolicy()
        #expect(eventually(10) { cluster.converged(room: room, clients: [left, right]) })
        // One of the two won; its writer holds it, the other is told it lost.
        let (winner, loser, winnerLog, loserLog) = left.propertyWriteKept(mine) == true
            ? (mine, theirs, leftLog, rightLog) : (theirs, mine, rightLog, leftLog)
        #expect(left.propertyWriteKept(winner) == true && right.propertyWriteKept(winner) == true)
        #expect(left.propertyWriteKept(loser) == false && right.propertyWriteKept(loser) == false)
        #expect(eventually(5) { loserLog.conflicts().contains { $0.lostDots.contains(loser.dot) } }, "the loser was not told")
        #expect(!winnerLog.conflicts().contains { $0.lostDots.contains(winner.dot) })
        #expect(left.propertyRevision(.room, key: "quiz") == 2)
        // Later writes build on the winner.
        let next = try right.setRoomProperty("quiz", value: Self.text("q3"), ifRevision: 2)
        #expect(next.revision == 3)
    }

    @Test func presenceStateFollowsTheSessionAndEventsReachOthers() throws {
        let cluster = try TestCluster(size: 2, label: "pres")
        #expect(cluster.meshed())
        let room = "pres"
        let teacher = cluster.client("t", .teacher, node: 0, room: room)
        let sue = cluster.client("sue", .student, node: 1, room: room)
        defer { teacher.close(); sue.close() }
        let log = Received(teacher)
        try teacher.connect()
        try sue.connect()
        #expect(eventually(5) { log.presence.withLock { $0.contains(.joined("sue")) } })
        try sue.setPresenceState(["mood": Self.text("curious"), "typing": Self.text("1")])
        #expect(eventually(5) { teacher.presenceState(of: "sue") == ["mood": Self.text("curious"), "typing": Self.text("1")] })
        #expect(eventually(5) { log.presence.withLock { $0.contains { if case .stateChanged("sue", _) = $0 { return true } else { return false } } } })
        #expect(teacher.presenceSnapshot.map(\.user).sorted() == ["sue", "t"])
        try sue.setPresenceState(["typing": nil])
        #expect(eventually(5) { teacher.presenceState(of: "sue") == ["mood": Self.text("curious")] })
        // Sue's node dies: she times out there, reconnects elsewhere, and her state comes back with her.
        cluster.nodes[1].stop()
        #expect(eventually(10) { sue.connectionState == .connected && sue.attachedNode == cluster.nodes[0].replica })
        #expect(eventually(10) { log.presence.withLock { $0.contains(.timedOut("sue")) } }, "no timeout event")
        #expect(eventually(5) { teacher.presenceState(of: "sue") == ["mood": Self.text("curious")] })
        sue.close()
        #expect(eventually(5) { log.presence.withLock { $0.contains(.left("sue")) } && teacher.presenceState(of: "sue").isEmpty })
    }

    @Test func presenceStateSurvivesARefutation() throws {
        let cluster = try TestCluster(size: 3, label: "pres-refute")
        #expect(cluster.meshed())
        let watcher = cluster.client("watcher", .observer, node: 0, room: "pr")
        let carol = cluster.client("carol", .student, node: 2, room: "pr")
        defer { watcher.close(); carol.close() }
        try watcher.connect()
        try carol.connect()
        try carol.setPresenceState(["mood": Self.text("fine")])
        #expect(eventually(5) { watcher.presenceState(of: "carol") == ["mood": Self.text("fine")] })
        // Node 2 is declared down while alive, then refutes: carol's session comes back
        // under a new id, and her state with it.
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[2].faults = cut
        #expect(eventually(5) { !watcher.replica.isOnline("carol") })
        #expect(watcher.presenceState(of: "carol").isEmpty)
        cluster.nodes[2].faults = FaultPolicy()
        #expect(eventually(8) { watcher.replica.isOnline("carol") && watcher.presenceState(of: "carol") == ["mood": Self.text("fine")] },
                "state after the refutation: \(watcher.presenceState(of: "carol"))")
    }

    @Test func aNodeOnlyPublishSocketKeepsClusterTrafficOffClientLinks() throws {
        let cluster = try TestCluster(size: 2, label: "split") { _, config in config.clusterPublish = "tcp://127.0.0.1:0" }
        #expect(cluster.meshed())
        #expect(cluster.nodes.allSatisfy { $0.clusterPublishAddress != $0.publishAddress })
        let room = "split"
        // Everything the client PUB socket sends, whatever the topic.
        let sniffer = try Sniffer(cluster.nodes[0].publishAddress, topic: [])
        defer { sniffer.close() }
        let teacher = cluster.client("t", .teacher, node: 0, room: room)
        let sam = cluster.client("sam", .student, node: 1, room: room)
        defer { teacher.close(); sam.close() }
        let log = Received(sam)
        try teacher.connect()
        try sam.connect()
        for index in 0..<5 { try teacher.send(Self.text("m\(index)")) }
        #expect(eventually(5) { log.texts.count == 5 })
        #expect(eventually(5) { cluster.converged(room: room, clients: [teacher, sam]) })
        Sleep.milliseconds(300)   // a few heartbeat periods
        var kinds: [UInt8: Int] = [:]
        for message in sniffer.messages {
            if let (kind, _) = Topics.split(message) { kinds[kind, default: 0] += 1 }
        }
        #expect(kinds[0, default: 0] > 0 && kinds[1] == nil && kinds[2] == nil, "client link carried \(kinds)")
    }

    @Test func theHistoryIsBoundedByCountAndByAgeAndSurvivesARestart() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-history-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let cluster = try TestCluster(size: 2, label: "hist") { index, config in
            config.messageRetentionSeconds = 3
            if index == 1 { config.dataDirectory = directory + "/b" }
        }
        #expect(cluster.meshed())
        let room = "hist"
        let teacher = cluster.client("t", .teacher, node: 1, room: room)
        let old = cluster.client("o", .student, node: 0, room: room)
        defer { teacher.close(); old.close() }
        try teacher.connect()
        try old.connect()
        try teacher.write(.setHistoryLimit(5))
        for index in 0..<8 { try teacher.send(Self.text("m\(index)")) }
        #expect(eventually(5) { cluster.nodes.allSatisfy { $0.room(room)?.messages.count == 5 } })
        #expect(eventually(5) { teacher.history.map { String(decoding: $0.payload, as: UTF8.self) } == (3..<8).map { "m\($0)" } })
        try old.send(Self.text("soon gone"))
        #expect(eventually(5) { teacher.history.last?.payload == Self.text("soon gone") })
        // Past the retention (3 s): one node trims the history everywhere (a trim_history delta).
        #expect(eventually(10) { cluster.nodes.allSatisfy { $0.room(room)?.messages.isEmpty == true } })
        #expect(cluster.nodes.contains { $0.metrics["history_trims_total"] > 0 })
        #expect(eventually(5) { cluster.converged(room: room, clients: [teacher, old]) && teacher.history.isEmpty })
        try teacher.send(Self.text("fresh"))
        #expect(eventually(5) { cluster.nodes.allSatisfy { $0.room(room)?.messages.count == 1 } })
        // Node 1 restarts from its store with the history.
        let before = cluster.nodes[1].room(room)?.messages
        cluster.nodes[1].stop()
        var config = cluster.nodes[1].config
        config.seeds = []
        let restarted = try ClusterNode(config: config, logger: cluster.logger)
        defer { restarted.stop() }
        #expect(restarted.room(room)?.messages == before)
    }
}
