import HomeroomContext
import HomeroomNode
import HomeroomSupport
import Testing

/// The contexts against a real in-process cluster: events fire, read models follow,
/// refusals carry codes.
@Suite(.serialized) struct ContextTests {
    @Test func handlersHearEveryKindOfChangeAcrossNodes() throws {
        let cluster = try ContextCluster(size: 2, label: "ctx-events")
        #expect(cluster.meshed())
        let teacher = try cluster.pool("ada", .teacher, node: 0, room: "events")
        let recorder = Recorder()
        teacher.registerEventHandler(recorder)
        try teacher.room.join()
        let bob = try cluster.joined("bob", .student, node: 1, room: "events")

        try bob.user.handsWave()
        try teacher.user.addCoHost("bob")
        try bob.stream.openLocalDevice(.camera)
        // Bob's camera reaches the teacher's node from the other one: wait for it, or the
        // teacher's grant can land first and the privilege-off state is never shown.
        #expect(eventually { recorder.saw("bob camera privilege-off") }, "events so far: \(recorder.all)")
        try teacher.stream.updatePublishPrivilege(of: "bob", device: .camera, allowed: true)
        try teacher.user.setBoard("bob", granted: true)
        try teacher.user.reward("bob", amount: 2)
        try teacher.user.lowerHand(of: "bob")
        try teacher.room.startClass()
        try teacher.room.updateProperties(["topic": "fractions"])
        try bob.user.updateProperties(of: "bob", ["seat": "12"])

        #expect(eventually { recorder.saw("props bob seat") }, "events so far: \(recorder.all)")
        for expected in ["joined events", "connection connected", "joined: bob", "hand up bob", "stage+ bob", "bob camera device-off",
                         "bob camera privilege-off", "bob camera live", "board bob true", "reward bob +2 =2", "hand down bob",
                         "class during", "room properties topic"] {
            #expect(recorder.saw(expected), "missing '\(expected)' in \(recorder.all)")
        }
        // The read models agree with the events.
        let row = try #require(teacher.user.row("bob"))
        #expect(row.onStage && row.boardGranted && row.camera == .live && row.microphone == .deviceOff && row.rewards == 2)
        #expect(teacher.room.properties == ["topic": "fractions"])
        #expect(teacher.user.properties(of: "bob") == ["seat": "12"])
        #expect(teacher.room.classInfo.state == .during)
        let snapshot = teacher.snapshot()
        #expect(snapshot.students.rows.map(\.id) == ["bob"])
        #expect(snapshot.moderators.map(\.id) == ["ada"])
        #expect(snapshot.stage.map(\.id) == ["bob"])
        #expect(snapshot.connection == .connected)
    }

    @Test func refusalsCarryCodesAProgramCanMatch() throws {
        let cluster = try ContextCluster(size: 1, label: "ctx-codes")
        let teacher = try cluster.joined("ada", .teacher, room: "codes")
        let students = try ["bob", "cy", "di"].map { try cluster.joined($0, .student, room: "codes") }
        try teacher.room.setStageLimit(1)
        try teacher.user.addCoHost("bob")

        func code(_ body: () throws(ContextError) -> Void) -> String? {
            do { try body(); return nil } catch { return error.code }
        }
        #expect(code { () throws(ContextError) in try teacher.user.addCoHost("cy") } == ContextError.stageFull)
        #expect(code { () throws(ContextError) in try students[1].user.addCoHost("cy") } == ContextError.notAllowed)
        #expect(code { () throws(ContextError) in try students[1].user.reward("di") } == ContextError.notAllowed)
        #expect(code { () throws(ContextError) in try teacher.user.reward("nobody") } == ContextError.userNotFound)
        #expect(code { () throws(ContextError) in try teacher.user.reward("bob", amount: 0) } == ContextError.invalidArgument)
        try teacher.room.endClass()
        #expect(code { () throws(ContextError) in try teacher.room.startClass() } == ContextError.classStateBackwards)
        // Reads reflect acknowledged writes at once (read your writes).
        #expect(teacher.user.coHostList.map(\.id) == ["bob"])

        let late = try cluster.pool("eve", .student, room: "codes")
        #expect(code { () throws(ContextError) in try late.user.handsWave() } == ContextError.notJoined)
        #expect(throws: ContextError.self) { try ContextPool(config: ClassroomConfig(room: "bad room", user: "x", role: .student, nodes: ["tcp://127.0.0.1:1"]), logger: cluster.logger) }
    }

    @Test func aKickedUserIsToldAndLeaves() throws {
        let cluster = try ContextCluster(size: 1, label: "ctx-kick")
        let teacher = try cluster.joined("ada", .teacher, room: "kick")
        let bob = try cluster.pool("bob", .student, room: "kick")
        let bobHears = Recorder()
        let teacherHears = Recorder()
        bob.user.registerEventHandler(bobHears)
        teacher.user.registerEventHandler(teacherHears)
        try bob.room.join()
        try teacher.user.kickOut("bob")
        #expect(eventually { bobHears.saw("I was kicked") && !bob.room.isJoined }, "\(bobHears.all)")
        #expect(eventually { teacherHears.saw("kicked bob") })
        do {
            try bob.user.handsWave()
            Issue.record("a kicked pool wrote")
        } catch {
            #expect(error.code == ContextError.kicked)
        }
        // Kicked once: joining again works; a ban does not.
        try bob.room.join()
        #expect(bob.room.isJoined)
        try teacher.user.kickOut("bob", forever: true)
        #expect(eventually { bobHears.saw("I was banned") && !bob.room.isJoined })
        do {
            try bob.room.join()
            Issue.record("a banned user joined again")
        } catch {
            #expect(error.code == ContextError.banned)
        }
    }

    @Test func theMonitorFollowsTheLinkThroughANodeLoss() throws {
        let cluster = try ContextCluster(size: 2, label: "ctx-monitor", transport: "tcp")
        #expect(cluster.meshed())
        let teacher = try cluster.joined("ada", .teacher, node: 0, room: "monitor")
        let bob = try cluster.pool("bob", .student, node: 1, room: "monitor")
        let heard = Recorder()
        bob.monitor.registerEventHandler(heard)
        #expect(bob.monitor.connectionState == .connecting)
        try bob.room.join()
        #expect(bob.monitor.connectionState == .connected)
        let first = bob.monitor.attachedNode
        #expect(first == cluster.nodes[1].replica.description)
        #expect(eventually { bob.monitor.latencyMicros > 0 })
        cluster.nodes[1].stop()
        #expect(eventually(8) { bob.monitor.attachedNode == cluster.nodes[0].replica.description && bob.monitor.connectionState == .connected })
        try teacher.user.reward("bob")
        #expect(eventually { bob.user.row("bob")?.rewards == 1 })
        #expect(heard.saw("connection connected"))
        bob.room.leave()
        #expect(bob.monitor.connectionState == .aborted)
        #expect(eventually { heard.saw("connection aborted") })
    }

    /// Issue 43: every node lost, the monitor goes reconnecting, then suspended (a short
    /// schedule here), with the reason for each change, an event for each, and when the
    /// next round starts; the summary says so for people.
    @Test func theMonitorSaysSuspendedWithItsReasonOnceTheBackoffIsSpent() throws {
        let cluster = try ContextCluster(size: 1, label: "ctx-suspend", transport: "tcp")
        let bob = try cluster.pool("bob", .student, room: "suspend",
                                   reconnect: ReconnectOptions(backoffMillis: [150], suspendedIntervalMillis: 300, jitter: 0))
        let heard = Recorder()
        bob.monitor.registerEventHandler(heard)
        try bob.room.join()
        #expect(bob.monitor.link.reason == .joined && bob.monitor.link.nextTryMillis == nil)
        cluster.nodes[0].stop()
        #expect(eventually(10) { bob.monitor.connectionState == .suspended }, "\(bob.monitor.link.summary(nowMillis: WallClock.nowMillis()))")
        let link = bob.monitor.link
        #expect(link.state == .suspended && link.reason == .backoffSpent)
        #expect(link.node == cluster.nodes[0].listenAddress && link.cause != nil)
        #expect(link.nextTryMillis != nil)
        #expect(link.summary(nowMillis: WallClock.nowMillis()).hasPrefix("suspended: lost \(cluster.nodes[0].listenAddress)"))
        #expect(eventually { heard.saw("connection suspended") })
        #expect(heard.saw("connection reconnecting"))
        // Suspended is not the end: the state keeps trying, and only leaving aborts it.
        bob.room.leave()
        #expect(bob.monitor.connectionState == .aborted && bob.monitor.link.reason == .closedByClient)
    }

    @Test func everyLinkReasonOfTheClientHasAContextCode() {
        #expect(LinkReason.allCases.map(\.rawValue) == ClientLinkReason.allCases.map(\.rawValue))
    }

    @Test func eventsAlsoArriveAsAnAsyncSequence() async throws {
        let cluster = try ContextCluster(size: 1, label: "ctx-async")
        let teacher = try cluster.joined("ada", .teacher, room: "async")
        let bob = try cluster.joined("bob", .student, room: "async")
        let events = teacher.events()
        try bob.user.handsWave()
        try teacher.user.reward("bob", amount: 3)
        let seen = try await withThrowingTaskGroup(of: [ContextEvent].self) { group in
            group.addTask {
                var seen: [ContextEvent] = []
                for await event in events {
                    seen.append(event)
                    if case .userRewarded = event { break }
                }
                return seen
            }
            // A bound only (the stream answers in milliseconds): generous, as the shared pool
            // may be busy with other suites' tests on a loaded machine.
            group.addTask {
                try await Task.sleep(for: .seconds(30))
                return []
            }
            let first = try await group.next() ?? []
            group.cancelAll()
            return first
        }
        #expect(seen.contains(.handWaved(UserInfo(id: "bob", name: "Bob", role: .student))))
        #expect(seen.contains(.userRewarded(UserInfo(id: "bob", name: "Bob", role: .student), amount: 3, total: 3)))
    }

    @Test func largeRoomsArePaged() throws {
        let cluster = try ContextCluster(size: 1, label: "ctx-pages")
        let teacher = try cluster.joined("ada", .teacher, room: "pages")
        for index in 0..<7 { _ = try cluster.joined("s\(index)", .student, room: "pages") }
        #expect(eventually { teacher.user.userList(.students).count == 7 })
        let page = teacher.user.userPage(.students, index: 2, size: 3)
        #expect(page.total == 7 && page.count == 3 && page.rows.map(\.id) == ["s6"])
        #expect(teacher.user.userPage(.students, index: 99, size: 3).index == 2)
        let snapshot = teacher.snapshot(page: 1, pageSize: 3)
        #expect(snapshot.students.rows.map(\.id) == ["s3", "s4", "s5"] && snapshot.students.total == 7)
        #expect(teacher.user.userList(UserQuery(roles: [.teacher])).map(\.id) == ["ada"])
    }
}
