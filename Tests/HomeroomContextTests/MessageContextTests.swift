@preconcurrency import Glibc
import HomeroomContext
import HomeroomNode
import Synchronization
import Testing

/// Records message, presence and conflict events.
final class MessageRecorder: MessageHandler, PresenceHandler, RoomHandler, Sendable {
    let room = Mutex<[MessageInfo]>([])
    let peer = Mutex<[MessageInfo]>([])
    let mutes = Mutex<[(UserID?, Bool)]>([])
    let presence = Mutex<[PresenceEvent]>([])
    let conflicts = Mutex<[PropertyConflictInfo]>([])

    func onRoomMessageReceived(_ message: MessageInfo) { room.withLock { $0.append(message) } }
    func onPeerMessageReceived(_ message: MessageInfo) { peer.withLock { $0.append(message) } }
    func onChatMuteUpdated(user: UserInfo?, muted: Bool) { mutes.withLock { $0.append((user?.id, muted)) } }
    func onPresenceEvent(_ event: PresenceEvent) { presence.withLock { $0.append(event) } }
    func onPropertyConflict(_ conflict: PropertyConflictInfo) { conflicts.withLock { $0.append(conflict) } }

    func texts(from sender: UserID) -> [String] { room.withLock { $0.filter { $0.sender.id == sender }.compactMap(\.text) } }
    var peerTexts: [String] { peer.withLock { $0.compactMap(\.text) } }
}

/// The message context against a real in-process cluster.
@Suite(.serialized) struct MessageContextTests {
    func code(_ body: () throws(ContextError) -> Void) -> String? {
        do { try body(); return nil } catch { return error.code }
    }

    @Test func roomMessagesArriveOnceInOrderAndPeerMessagesStayPrivate() throws {
        let cluster = try ContextCluster(size: 2, label: "msg-order")
        #expect(cluster.meshed())
        let ada = try cluster.pool("ada", .teacher, node: 0, room: "chat")
        let adaHears = MessageRecorder()
        ada.registerEventHandler(adaHears)
        try ada.room.join()
        let cy = try cluster.pool("cy", .student, node: 0, room: "chat")
        let cyHears = MessageRecorder()
        cy.message.registerEventHandler(cyHears)
        try cy.room.join()
        let bob = try cluster.joined("bob", .student, node: 1, room: "chat")

        let sent = (1...20).map { "line \($0)" }
        for text in sent { try bob.message.sendRoomMessage(text) }
        try bob.message.sendPeerMessage(to: "cy", "psst, cy")
        #expect(eventually { adaHears.texts(from: "bob") == sent }, "ada heard \(adaHears.texts(from: "bob"))")
        #expect(eventually { cyHears.peerTexts == ["psst, cy"] })
        #expect(cyHears.texts(from: "bob") == sent)
        let whisper = try #require(cyHears.peer.withLock { $0.first })
        #expect(whisper.recipient == "cy" && whisper.sender.id == "bob" && whisper.sender.name == "Bob" && whisper.isPeer)
        // Nobody else sees the whisper, not even in the history.
        usleep(300_000)
        #expect(adaHears.peerTexts.isEmpty)
        #expect(!ada.message.history().contains { $0.isPeer })
        #expect(bob.message.history().filter(\.isPeer).compactMap(\.text) == ["psst, cy"])
        #expect(cy.message.history().filter(\.isPeer).compactMap(\.text) == ["psst, cy"])
        // Pages of the history, newest last.
        let last = ada.message.history(limit: 5)
        #expect(last.compactMap(\.text) == Array(sent.suffix(5)))
        let before = ada.message.history(limit: 5, before: last[0].key)
        #expect(before.compactMap(\.text) == Array(sent.dropLast(5).suffix(5)))
        // Bad input is refused before it leaves the pool.
        #expect(code { () throws(ContextError) in try bob.message.sendRoomMessage(payload: Array(repeating: 0, count: 32 * 1024 + 1), type: "blob") }
                == ContextError.invalidArgument)
        #expect(code { () throws(ContextError) in try bob.message.sendRoomMessage("hi", type: "") } == ContextError.invalidArgument)
        #expect(code { () throws(ContextError) in try bob.message.sendPeerMessage(to: "bob", "me") } == ContextError.invalidArgument)
    }

    @Test func aReconnectingPoolReceivesWhatItMissed() throws {
        let cluster = try ContextCluster(size: 2, label: "msg-catchup")
        #expect(cluster.meshed())
        let ada = try cluster.joined("ada", .teacher, node: 0, room: "catchup")
        let bob = try cluster.pool("bob", .student, node: 1, room: "catchup")
        let bobHears = MessageRecorder()
        bob.message.registerEventHandler(bobHears)
        try bob.room.join()
        try ada.message.sendRoomMessage("before")
        #expect(eventually { bobHears.texts(from: "ada") == ["before"] })
        // Bob's node dies while ada keeps talking; bob's pool reconnects through node 0.
        cluster.nodes[1].stop()
        let during = (1...10).map { "during \($0)" }
        for text in during { try ada.message.sendRoomMessage(text) }
        #expect(eventually(10) { bobHears.texts(from: "ada") == ["before"] + during }, "bob heard \(bobHears.texts(from: "ada"))")
        #expect(bob.monitor.connectionState == .connected)
    }

    @Test func mutedChatIsRefusedWithACodeAndEveryoneIsTold() throws {
        let cluster = try ContextCluster(size: 1, label: "msg-mute")
        let ada = try cluster.joined("ada", .teacher, room: "mute")
        let bob = try cluster.pool("bob", .student, room: "mute")
        let bobHears = MessageRecorder()
        bob.message.registerEventHandler(bobHears)
        try bob.room.join()
        let cy = try cluster.joined("cy", .student, room: "mute")

        #expect(code { () throws(ContextError) in try bob.message.muteChat(of: "cy") } == ContextError.notAllowed)
        try ada.message.muteChat(of: "bob")
        #expect(eventually { bob.message.isLocalUserMuted })
        #expect(code { () throws(ContextError) in try bob.message.sendRoomMessage("let me talk") } == ContextError.muted)
        #expect(eventually { bobHears.mutes.withLock { $0.contains { $0.0 == "bob" && $0.1 } } })
        try cy.message.sendRoomMessage("cy may")
        try ada.message.muteChat(of: "bob", muted: false)
        try ada.message.muteRoomChat()
        #expect(eventually { cy.message.isRoomChatMuted })
        #expect(code { () throws(ContextError) in try cy.message.sendRoomMessage("now I may not") } == ContextError.muted)
        try ada.message.sendRoomMessage("teachers may always speak")
        try ada.message.muteRoomChat(false)
        #expect(eventually { !bob.message.isLocalUserMuted })
        try bob.message.sendRoomMessage("thanks")
        #expect(eventually { ada.message.history().compactMap(\.text) == ["cy may", "teachers may always speak", "thanks"] },
                "history: \(ada.message.history().compactMap(\.text))")
        #expect(eventually { bobHears.mutes.withLock { $0.contains { $0.0 == nil && !$0.1 } } })
    }

    @Test func presenceHasASnapshotStateAndEvents() throws {
        let cluster = try ContextCluster(size: 2, label: "msg-presence")
        #expect(cluster.meshed())
        let ada = try cluster.pool("ada", .teacher, node: 0, room: "presence")
        let adaHears = MessageRecorder()
        ada.message.registerPresenceHandler(adaHears)
        try ada.room.join()
        let bob = try cluster.joined("bob", .student, node: 1, room: "presence")
        #expect(eventually { adaHears.presence.withLock { $0.contains { if case .joined(let user) = $0 { return user.id == "bob" } else { return false } } } })
        try bob.message.setPresenceState(["mood": "curious"])
        #expect(eventually { ada.message.presenceState(of: "bob") == ["mood": Array("curious".utf8)] })
        #expect(eventually {
            adaHears.presence.withLock { $0.contains { if case let .stateChanged(user, state) = $0 { return user.id == "bob" && state["mood"] != nil } else { return false } } }
        })
        let online = ada.message.onlineUsers
        #expect(online.map(\.user.id) == ["ada", "bob"])
        #expect(online.first { $0.user.id == "bob" }?.text("mood") == "curious")
        #expect(code { () throws(ContextError) in
            try bob.message.setPresenceState(Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", "v") }))
        } == ContextError.invalidArgument)
        #expect(code { () throws(ContextError) in try bob.message.setPresenceState(["": "x"]) } == ContextError.invalidArgument)
        bob.room.leave()
        #expect(eventually { adaHears.presence.withLock { $0.contains { if case .left(let user) = $0 { return user.id == "bob" } else { return false } } } })
        #expect(eventually { ada.message.presenceState(of: "bob").isEmpty && ada.message.onlineUsers.map(\.user.id) == ["ada"] })
    }

    @Test func conditionalPropertyWritesAndTheLoserOfAPartitionIsTold() throws {
        let cluster = try ContextCluster(size: 2, label: "msg-props")
        #expect(cluster.meshed())
        let ada = try cluster.pool("ada", .teacher, node: 0, room: "props")
        let eve = try cluster.pool("eve", .assistant, node: 1, room: "props")
        let adaHears = MessageRecorder()
        let eveHears = MessageRecorder()
        ada.registerEventHandler(adaHears)
        eve.registerEventHandler(eveHears)
        try ada.room.join()
        try eve.room.join()

        let first = try ada.room.updateProperty("quiz", value: "q1", cause: "start", ifRevision: 0)
        #expect(first.revision == 1)
        #expect(code { () throws(ContextError) in try ada.room.updateProperty("quiz", value: "again", ifRevision: 0) } == ContextError.revisionMismatch)
        let entry = try #require(ada.room.property("quiz"))
        #expect(entry.value == "q1" && entry.revision == 1 && entry.operatorID == "ada" && entry.cause == "start")
        #expect(eventually { eve.room.property("quiz")?.revision == 1 })
        // A short partition: both sides write "only if still at revision 1", and both are accepted.
        var cut = FaultPolicy()
        cut.isolated = true
        cluster.nodes[1].faults = cut
        usleep(60_000)
        let mine = try ada.room.updateProperty("quiz", value: "ada's", ifRevision: 1)
        let theirs = try eve.room.updateProperty("quiz", value: "eve's", ifRevision: 1)
        #expect(mine.revision == 2 && theirs.revision == 2)
        cluster.nodes[1].faults = FaultPolicy()
        #expect(eventually(10) { ada.room.property("quiz") != nil && ada.room.property("quiz") == eve.room.property("quiz") })
        let kept = try #require(ada.room.property("quiz"))
        let (loser, loserHears, winnerHears) = kept.value == "ada's" ? ("eve", eveHears, adaHears) : ("ada", adaHears, eveHears)
        #expect(eventually(5) { loserHears.conflicts.withLock { $0.contains { $0.key == "quiz" && $0.lostAuthor == loser } } },
                "\(loser) was not told its write was lost")
        #expect(!winnerHears.conflicts.withLock { $0.contains { $0.lostAuthor != loser } })
        let winning = kept.value == "ada's" ? mine : theirs
        #expect(eventually { ada.room.isPropertyWriteKept(winning) == true && eve.room.isPropertyWriteKept(winning) == true })
        // User properties carry revisions too.
        let seat = try eve.user.updateProperty(of: "eve", "seat", value: "12")
        #expect(seat.revision == 1 && seat.owner == "eve")
        #expect(eventually { ada.user.propertyEntries(of: "eve").map(\.value) == ["12"] })
    }
}
