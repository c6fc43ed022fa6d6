import Dispatch
import HomeroomContext
import HomeroomCore
import HomeroomNode
import Synchronization
import HomeroomSupport

/// The demo's scripted lesson: a teacher, an assistant and students in one small
/// classroom on a three-node cluster, driven only through the contexts.
final class Lesson: Sendable {
    static let steps = 12
    let room = "demo-lesson"
    let cluster: DemoCluster
    let log: DemoLog
    let studentCount: Int
    let stepMillis: UInt64
    let logger: Logger
    let cancelled = Flag()

    let teacher: ContextPool
    let chat = LessonChat()
    private let pools = Mutex<[(user: String, node: Int, pool: ContextPool)]>([])
    private let facts = Mutex<Facts>(Facts())

    /// What happened, for the summary.
    struct Facts: Sendable {
        var stoppedNode = ""
        var stoppedAtMillis: UInt64 = 0
        var affectedClients = 0
        var reconnectMillis: UInt64?
        var declaredDownMillis: UInt64?
        var replacementNode = ""
        var catchUpMillis: UInt64?
        var concurrentRewards: (user: String, teacher: Int, assistant: Int)?
        var kicked: String?
        var kickNoticed = false
        /// The carousel's first turn, and whether every client derived that same turn.
        var carouselStage: [String] = []
        var carouselAgreed: Bool?
        /// The breakout round: how many groups met, and whether each heard only its own talk, the broadcast, and came back.
        var breakoutGroups = 0
        var breakoutKeptApart: Bool?
        var breakoutBroadcastHeard: Bool?
        var breakoutEnded: Bool?
        var seats = 0
    }

    static let names = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Ken", "Liam", "Mia",
                        "Noah", "Olga", "Pablo", "Quinn", "Rosa", "Sam", "Tara", "Uma", "Victor", "Wendy", "Xavier", "Yara", "Zoe"]

    static func student(_ index: Int) -> (id: String, name: String) {
        index < names.count ? (names[index].lowercased(), names[index]) : ("student-\(index + 1)", "Student \(index + 1)")
    }

    /// Starts the teacher (through node 1); the rest joins in `run()`.
    init(cluster: DemoCluster, log: DemoLog, students: Int, seconds: Int, logger: Logger) throws(CommandLineError) {
        self.cluster = cluster
        self.log = log
        self.studentCount = students
        self.logger = logger
        // The steps share the lesson's length: the last one (class end) comes 1.5 s before it,
        // which leaves the final check time to finish within it.
        self.stepMillis = max(400, (UInt64(seconds) * 1000 - 1_500) / UInt64(Self.steps - 1))
        teacher = try Self.join(cluster: cluster, room: room, user: "lovelace", name: "Ms Lovelace", role: .teacher, node: 0, logger: logger)
        pools.withLock { $0.append((user: "lovelace", node: 0, pool: teacher)) }
        chat.follow("lovelace", teacher)
    }

    /// A room message through the contexts, counted for the summary's delivery check.
    private func say(_ pool: ContextPool, _ user: String, _ text: String) {
        var key: MessageKey?
        log.write("\(user) sends a message") { () throws(ContextError) in key = try pool.message.sendRoomMessage(text) }
        if let key { chat.sent(key) }
    }

    static func join(cluster: DemoCluster, room: String, user: String, name: String, role: Role, node: Int,
                     logger: Logger) throws(CommandLineError) -> ContextPool {
        let addresses = cluster.addresses
        let ordered = [addresses[node % addresses.count]] + addresses.enumerated().filter { $0.offset != node % addresses.count }.map(\.element)
        var config = ClassroomConfig(room: room, user: user, name: name, role: role, nodes: ordered)
        config.requestTimeoutMillis = 400
        config.syncIntervalMillis = 150
        do {
            let pool = try ContextPool(config: config, logger: logger)
            try pool.room.join()
            return pool
        } catch {
            throw .failure("\(user) could not join the demo room: \(error)")
        }
    }

    var allPools: [(user: String, node: Int, pool: ContextPool)] { pools.withLock { $0 } }
    var summaryFacts: Facts { facts.withLock { $0 } }

    private func pool(_ user: String) -> ContextPool? { pools.withLock { $0.first { $0.user == user }?.pool } }

    /// Sleeps until step `index` is due (steps are spread over the lesson), unless cancelled.
    private func pace(_ index: Int) -> Bool {
        log.nextStep()
        let due = log.started + UInt64(index) * stepMillis
        while WallClock.monotonicMillis() < due {
            if cancelled.isSet { return false }
            sleepMillis(20)
        }
        return !cancelled.isSet
    }

    // MARK: - The script

    func run() throws(CommandLineError) {
        let t = teacher
        let students = (0..<studentCount).map(Self.student)
        let seats = min(4, max(1, studentCount - 1))
        facts.withLock { $0.seats = seats }

        // 1. The room.
        log.write("room name") { () throws(ContextError) in try t.room.setName("Demo lesson") }
        log.write("room type") { () throws(ContextError) in try t.room.setType(.smallClassroom) }
        log.write("stage limit") { () throws(ContextError) in try t.room.setStageLimit(seats) }
        log.write("schedule") { () throws(ContextError) in
            try t.room.setSchedule(Schedule(startMillis: WallClock.nowMillis(), durationSeconds: 45 * 60, closeDelaySeconds: 600))
        }
        log.say("Ms Lovelace (teacher) opened 'Demo lesson' through demo-1: small classroom, \(seats) stage seats")

        // 2. Everyone else joins, spread over the nodes.
        guard pace(1) else { return }
        let assistant = try Self.join(cluster: cluster, room: room, user: "turing", name: "Mr Turing", role: .assistant, node: 2, logger: logger)
        pools.withLock { $0.append((user: "turing", node: 2, pool: assistant)) }
        chat.follow("turing", assistant)
        for (index, student) in students.enumerated() {
            if cancelled.isSet { return }
            let node = (index + 1) % 3
            let pool = try Self.join(cluster: cluster, room: room, user: student.id, name: student.name, role: .student, node: node, logger: logger)
            pools.withLock { $0.append((user: student.id, node: node, pool: pool)) }
            chat.follow(student.id, pool)
        }
        let perNode = (0..<3).map { node in allPools.filter { $0.node == node }.count }
        log.say("Mr Turing (assistant) and \(studentCount) students joined: \(perNode[0]) / \(perNode[1]) / \(perNode[2]) clients on demo-1 / demo-2 / demo-3")

        // 3. Class starts.
        guard pace(2) else { return }
        log.write("class start") { () throws(ContextError) in try t.room.startClass() }
        say(t, "lovelace", "Welcome, everyone! Today: fractions.")
        log.say("class started; Ms Lovelace greets the room in the chat")

        // 4. Hands go up.
        guard pace(3) else { return }
        let raising = Array(students.prefix(min(studentCount, seats + 2)))
        for student in raising {
            guard let pool = pool(student.id) else { continue }
            log.write("\(student.id) hand up") { () throws(ContextError) in try pool.user.handsWave() }
        }
        log.say("hands up: " + raising.map(\.name).joined(separator: ", "))

        // 5. The stage: one more than it seats; the last is refused.
        guard pace(4) else { return }
        let invited = Array(raising.prefix(seats + 1))
        var onStage: [(id: String, name: String)] = []
        for student in invited {
            let isExtra = onStage.count == seats
            let refusal = log.write("stage add \(student.id)", expecting: isExtra ? ContextError.stageFull : nil) { () throws(ContextError) in
                try t.user.addCoHost(student.id)
            }
            if let refusal {
                log.say("\(student.name) invited to the stage: refused [\(refusal.code)] (\(seats) seats taken)")
            } else {
                onStage.append(student)
                log.write("lower \(student.id)'s hand") { () throws(ContextError) in try t.user.lowerHand(of: student.id) }
            }
        }
        log.say("on stage: " + onStage.map(\.name).joined(separator: ", ") + " (their hands lowered by the teacher)")

        // 6. Devices and privileges: the four camera/microphone states.
        guard pace(5) else { return }
        for (index, student) in onStage.enumerated() {
            guard let pool = pool(student.id) else { continue }
            if index != 2 { log.write("\(student.id) camera on") { () throws(ContextError) in try pool.stream.openLocalDevice(.camera) } }
            if index != 3 { log.write("\(student.id) mic on") { () throws(ContextError) in try pool.stream.openLocalDevice(.microphone) } }
            if index == 0 || index == 3 {
                log.write("allow \(student.id) camera") { () throws(ContextError) in try t.stream.updatePublishPrivilege(of: student.id, device: .camera, allowed: true) }
            }
            if index == 0 || index == 1 {
                log.write("allow \(student.id) mic") { () throws(ContextError) in try assistant.stream.updatePublishPrivilege(of: student.id, device: .microphone, allowed: true) }
            }
        }
        if let first = onStage.first {
            log.write("board \(first.id)") { () throws(ContextError) in try t.user.setBoard(first.id, granted: true) }
        }
        log.say("devices on, privileges granted: the roster shows all four camera/mic states; whiteboard for \(onStage.first?.name ?? "nobody")")

        // 7. Rewards, two at the same moment; and writes the rules refuse.
        guard pace(6) else { return }
        for student in onStage {
            if log.write("reward \(student.id)", { () throws(ContextError) in try t.user.reward(student.id, amount: 1) }) == nil {
                log.rewarded(student.id, 1)
            }
        }
        if let target = (onStage.count > 1 ? onStage[1] : onStage.first) {
            let group = DispatchGroup()
            for (pool, amount) in [(t, 2), (assistant, 3)] {
                DispatchQueue.global().async(group: group) { [log] in
                    if log.write("reward \(target.id) +\(amount)", { () throws(ContextError) in try pool.user.reward(target.id, amount: amount) }) == nil {
                        log.rewarded(target.id, amount)
                    }
                }
            }
            group.wait()
            facts.withLock { $0.concurrentRewards = (target.id, 2, 3) }
            log.say("teacher (+2) and assistant (+3) rewarded \(target.name) at the same moment: both count")
        }
        if let last = students.last, let pool = pool(last.id) {
            let refusal = log.write("\(last.id) puts itself on stage", expecting: ContextError.notAllowed) { () throws(ContextError) in
                try pool.user.addCoHost(last.id)
            }
            log.write("\(last.id) rewards itself", expecting: ContextError.notAllowed) { () throws(ContextError) in
                try pool.user.reward(last.id, amount: 5)
            }
            log.say("\(last.name) tried to go on stage and to reward itself: refused [\(refusal?.code ?? "none")] twice")
        }

        // 7b. Chat: a question, a whisper to the teacher, and a muted student.
        if let first = students.first, let pool = pool(first.id) {
            say(pool, first.id, "Could you repeat the last example?")
        }
        if students.count > 1, let pool = pool(students[1].id) {
            var key: MessageKey?
            log.write("\(students[1].id) whispers the teacher") { () throws(ContextError) in
                key = try pool.message.sendPeerMessage(to: "lovelace", "I may have to leave early today.")
            }
            if let key { chat.whispered(key, from: students[1].id, to: "lovelace") }
        }
        if studentCount >= 3, let last = students.last, let pool = pool(last.id) {
            log.write("mute \(last.id)'s chat") { () throws(ContextError) in try t.message.muteChat(of: last.id) }
            _ = waitUntil(millis: 2_000) { pool.message.isLocalUserMuted }
            let refusal = log.write("\(last.id) sends while muted", expecting: ContextError.muted) { () throws(ContextError) in
                try pool.message.sendRoomMessage("lol")
            }
            log.say("\(students.first?.name ?? "a student") asked a question in the chat, \(students.count > 1 ? students[1].name : "nobody") whispered the teacher; "
                    + "\(last.name)'s chat was muted and the next message refused [\(refusal?.code ?? "none")]")
        }

        // 8. Devices toggle.
        guard pace(7) else { return }
        if let first = onStage.first, let pool = pool(first.id) {
            log.write("\(first.id) camera off") { () throws(ContextError) in try pool.stream.closeLocalDevice(.camera) }
            log.write("\(first.id) camera on") { () throws(ContextError) in try pool.stream.openLocalDevice(.camera) }
            log.write("\(first.id) mic off") { () throws(ContextError) in try pool.stream.closeLocalDevice(.microphone) }
            log.say("\(first.name) toggled the camera off and on, and turned the microphone off")
        }

        // 9. A node is lost: its clients move to the others.
        guard pace(8) else { return }
        loseANode(onStage: onStage)

        // 10. A replacement node joins and catches up.
        guard pace(9) else { return }
        replaceTheNode()

        // 11. The stage rotates; someone is kicked out once.
        guard pace(10) else { return }
        if onStage.count == seats, let leaving = onStage.last, let waiting = invited.last, waiting.id != leaving.id {
            log.write("stage remove \(leaving.id)") { () throws(ContextError) in try t.user.removeCoHost(leaving.id) }
            log.write("stage add \(waiting.id)") { () throws(ContextError) in try t.user.addCoHost(waiting.id) }
            log.write("lower \(waiting.id)'s hand") { () throws(ContextError) in try t.user.lowerHand(of: waiting.id) }
            log.say("\(leaving.name) left the stage; \(waiting.name) took the seat")
        }
        runACarousel()
        runABreakout()
        if studentCount >= 3, let kicked = students.last, let pool = pool(kicked.id) {
            let noticed = Flag()
            pool.addEventListener { event in
                if case .localUserKickedOut = event { noticed.set() }
            }
            log.write("kick \(kicked.id)") { () throws(ContextError) in try t.user.kickOut(kicked.id, forever: false) }
            let seen = waitUntil(millis: 3_000) { noticed.isSet }
            facts.withLock { $0.kicked = kicked.id; $0.kickNoticed = seen }
            log.say("\(kicked.name) was kicked out once" + (seen ? "; their client was told and left" : "; their client was NOT told"))
        }

        // 12. Class ends.
        guard pace(11) else { return }
        log.write("class end") { () throws(ContextError) in try t.room.endClass() }
        log.say("class ended")
    }

    /// Flexible Classroom's stage carousel: the teacher starts one, every client derives
    /// the same turn from the class clock with nobody coordinating, then it stops.
    private func runACarousel() {
        let t = teacher
        log.write("carousel start --interval 10") { () throws(ContextError) in try t.stream.startCarousel(intervalSeconds: 10) }
        let agreed = waitUntil(millis: 3_000) {
            let turns = self.activePools.map { $0.pool.stream.carousel?.onStage }
            return turns.allSatisfy { $0 != nil && $0 == turns.first! }
        }
        let stage = t.stream.carousel?.onStage ?? []
        facts.withLock { $0.carouselStage = stage; $0.carouselAgreed = agreed }
        let names = stage.map { id in Self.names.first { $0.lowercased() == id } ?? id }
        log.say("a stage carousel (every 10 s) put \(names.isEmpty ? "nobody" : names.joined(separator: ", ")) on stage: "
                + (agreed ? "every client derived the same turn" : "clients disagree on the turn"))
        log.write("carousel stop") { () throws(ContextError) in try t.stream.stopCarousel() }
    }

    /// Flexible Classroom's breakout round: the teacher spreads the students over two
    /// groups at random, each student's client goes to its group's room and talks there,
    /// the teacher broadcasts to every group, then ends them and everyone is back.
    private func runABreakout() {
        let t = teacher
        guard studentCount >= 2 else { return }
        let count = studentCount >= 4 ? 2 : 1
        log.write("group random \(count)") { () throws(ContextError) in try t.group.createRandom(count: count, seed: 20_261_202) }
        let students = activePools.filter { $0.pool.config.role == .student }
        _ = waitUntil(millis: 3_000) { students.allSatisfy { $0.pool.group.localGroup != nil } }
        var visits: [(user: String, group: String, pool: ContextPool)] = []
        for entry in students {
            if let group = entry.pool.group.localGroup?.id, let pool = try? entry.pool.group.joinGroup() { visits.append((entry.user, group, pool)) }
        }
        defer { for visit in visits { visit.pool.close() } }
        let groups = t.group.groups
        for group in groups {
            guard let first = visits.first(where: { $0.group == group.id }) else { continue }
            log.write("\(first.user) talks in \(group.id)") { () throws(ContextError) in
                try first.pool.message.sendRoomMessage("Hello \(group.name), I'll take notes.")
            }
        }
        // Each member hears its own group's talk and not the other's.
        let apart = waitUntil(millis: 3_000) {
            visits.allSatisfy { visit in
                let texts = visit.pool.message.history().compactMap(\.text)
                return groups.allSatisfy { group in texts.contains("Hello \(group.name), I'll take notes.") == (group.id == visit.group)
                    || !visits.contains { $0.group == group.id } }
            }
        }
        log.write("group broadcast") { () throws(ContextError) in try t.group.broadcast("Five minutes left, then back to the main room.") }
        let heard = waitUntil(millis: 3_000) {
            visits.allSatisfy { $0.pool.message.history().contains { $0.text == "Five minutes left, then back to the main room." } }
        }
        log.write("group end") { () throws(ContextError) in try t.group.endAll() }
        let back = waitUntil(millis: 3_000) { self.activePools.allSatisfy { $0.pool.group.groups.isEmpty && $0.pool.group.localGroup == nil } }
        facts.withLock { $0.breakoutGroups = groups.count; $0.breakoutKeptApart = apart; $0.breakoutBroadcastHeard = heard; $0.breakoutEnded = back }
        log.say("breakout: \(groups.map { "\($0.name) (\($0.members.count))" }.joined(separator: ", ")) met in rooms of their own; "
                + (apart ? "each heard only its own group" : "talk crossed between groups") + (heard ? ", the broadcast reached all" : ", the broadcast was missed")
                + (back ? "; the teacher ended them and everyone is back" : "; not everyone came back"))
    }

    private func loseANode(onStage: [(id: String, name: String)]) {
        guard let lost = cluster.nodes.last, cluster.nodes.count >= 3 else { return }
        let affected = allPools.filter { $0.pool.monitor.attachedNode == lost.replica.description }
        let stoppedAt = log.elapsedMillis
        facts.withLock { $0.stoppedNode = lost.name; $0.stoppedAtMillis = stoppedAt; $0.affectedClients = affected.count }
        cluster.stop(lost)
        log.say("\(lost.name) stopped (\(affected.count) clients attached to it); the teacher keeps teaching")
        say(teacher, "lovelace", "We lost a node; carry on, you will catch up.")
        // Writes go on through the other nodes meanwhile.
        if let someone = onStage.first {
            if log.write("reward \(someone.id) during the outage", { () throws(ContextError) in try teacher.user.reward(someone.id, amount: 1) }) == nil {
                log.rewarded(someone.id, 1)
            }
        }
        // Two things to see, timed separately: the clients move, and every replica records
        // the lost incarnation as dead (which ends its sessions everywhere).
        var movedAt: UInt64?
        var downAt: UInt64?
        _ = waitUntil(millis: 10_000, cancelled: { cancelled.isSet }) {
            if movedAt == nil, affected.allSatisfy({ $0.pool.monitor.connectionState == .connected
                                                     && $0.pool.monitor.attachedNode != lost.replica.description }) {
                movedAt = log.elapsedMillis
                log.say("all \(affected.count) clients of \(lost.name) reconnected through the other nodes in \(Self.seconds(movedAt! - stoppedAt))")
            }
            if downAt == nil, cluster.nodes.allSatisfy({ $0.room(room)?.deadIncarnations[lost.replica] != nil }) {
                downAt = log.elapsedMillis
                log.say("every replica recorded \(lost.name) as down after \(Self.seconds(downAt! - stoppedAt)): its old sessions are over")
            }
            return movedAt != nil && downAt != nil
        }
        facts.withLock { facts in
            facts.reconnectMillis = movedAt.map { $0 - stoppedAt }
            facts.declaredDownMillis = downAt.map { $0 - stoppedAt }
        }
        if movedAt == nil { log.say("some clients of \(lost.name) did not reconnect within 10 s") }
    }

    private func replaceTheNode() {
        let started = log.elapsedMillis
        let node: ClusterNode
        do {
            node = try cluster.add(name: "demo-4")
        } catch {
            log.say("could not start a replacement node: \(error)")
            return
        }
        facts.withLock { $0.replacementNode = node.name }
        log.say("\(node.name) started empty, seeded by demo-1")
        let caughtUp = waitUntil(millis: 8_000, cancelled: { cancelled.isSet }) {
            guard let mine = node.room(room), let reference = cluster.nodes.first?.room(room) else { return false }
            return mine == reference
        }
        let at = log.elapsedMillis
        if caughtUp { facts.withLock { $0.catchUpMillis = at - started } }
        let deltas = node.room(room)?.seen.count ?? 0
        log.say(caughtUp ? "\(node.name) caught up with the room (\(deltas) deltas) by anti-entropy in \(Self.seconds(at - started))"
                : "\(node.name) has not caught up yet")
    }

    static func seconds(_ millis: UInt64) -> String {
        if millis < 1_000 { return "\(millis) ms" }
        let tenths = (millis + 50) / 100
        return "\(tenths / 10).\(tenths % 10) s"
    }

    // MARK: - The final check

    /// Pools still in the room (a kicked one has left).
    var activePools: [(user: String, node: Int, pool: ContextPool)] { allPools.filter { $0.pool.room.isJoined } }

    /// Every running node holds the same room, and every client in it the same replica.
    func converged() -> Bool {
        guard let reference = cluster.agreedRoom(room) else { return false }
        return activePools.allSatisfy { $0.pool.monitor.replicaMatches(reference) }
    }

    func closeAll() {
        for entry in allPools { entry.pool.close() }
    }
}
