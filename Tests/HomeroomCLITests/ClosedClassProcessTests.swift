import Foundation
import HomeroomCore
import HomeroomTestSupport
import Testing
@testable import HomeroomNode

/// A closed class against a real `homeroom node` process (Agora's class state 3): the
/// teacher ends the class with a 1 s close delay; the student's `homeroom join` is told
/// and exits, the teacher's client stops for good, a rejoin is refused `room-closed`;
/// 2 s later (`--closed-room-retention 2`) the room's rows leave the store while joins are
/// still refused, and a restart keeps refusing them (the tombstone is stored).
@Suite(.serialized) struct ClosedClassProcessTests {
    @Test func everyoneLeavesNobodyRejoinsAndTheRoomIsRemovedAfterTheRetention() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-closed-class-\(UInt32.random(in: 0...UInt32.max))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let options = ["--data-dir", directory, "--closed-room-retention", "2", "--http", "http://127.0.0.1:0"]
        var node: NodeChild? = try NodeChild(name: "closed-class", extra: options)
        defer { node?.stop() }
        let listen = node!.listen
        let room = "bio-\(UInt32.random(in: 0...UInt32.max))"

        var clientOptions = RoomClient.Options()
        clientOptions.requestTimeoutMillis = 2_000
        let (logger, _) = Logger.capturing(label: "tina", level: .error)
        let tina = RoomClient(room: room, user: "tina", role: .teacher, name: "Tina", endpoints: [NodeEndpoint(listen)], options: clientOptions, logger: logger)
        defer { tina.close() }
        try tina.connect()
        _ = try tina.write(.setSchedule(Schedule(startMillis: WallClock.nowMillis(), durationSeconds: 60, closeDelaySeconds: 1)))
        _ = try tina.write(.setClassState(.during))

        let ana = try TerminalSession(["join", "--user", "ana", "--name", "Ana", "--room", room, "--node", listen])
        #expect(ana.waitFor("\(room) ana (student)> "), "no prompt: \(ana.shown)")
        #expect(eventually(10) { tina.replica.isOnline("ana") }, "tina never saw ana join")

        let ended = WallClock.nowMillis()
        _ = try tina.write(.setClassState(.after))
        // Told, and gone: the join prints why and ends with status 0 (a class ending is no failure).
        #expect(ana.waitFor("[room-closed]", timeout: 10), "ana was never told: \(ana.shown.suffix(400))")
        #expect(ana.waitForExit(timeout: 10) == 0, "\(ana.shown.suffix(400))")
        #expect(ana.shown.contains("class over: room \(room) is closed"), "\(ana.shown.suffix(400))")
        #expect(WallClock.nowMillis() >= ended + 1_000, "told before the close delay passed")
        #expect(eventually(10) { tina.finalRefusal == "room-closed" }, "tina's client: \(String(describing: tina.finalRefusal))")
        #expect(tina.connectionState == .aborted)
        // The node ended both sessions itself.
        #expect(eventually(10) { (node!.metric("homeroom_sessions_ended_closed_total") ?? 0) >= 2 },
                "sessions ended: \(String(describing: node!.metric("homeroom_sessions_ended_closed_total")))")

        // Nobody rejoins.
        let rejoin = try CLI.run(["join", "--user", "ana", "--room", room, "--node", listen], stdin: "")
        #expect(rejoin.status != 0 && rejoin.stderr.contains("room-closed"), "\(rejoin.status) \(rejoin.stdout) \(rejoin.stderr)")

        // After the retention the room goes; a join is refused all the same.
        #expect(eventually(10) { (node!.metric("homeroom_closed_rooms_removed_total") ?? 0) >= 1 }, "the room was never removed")
        let late = try CLI.run(["join", "--as", "teacher", "--user", "tina", "--room", room, "--node", listen], stdin: "")
        #expect(late.status != 0 && late.stderr.contains("room-closed"), "\(late.status) \(late.stdout) \(late.stderr)")

        // Its rows are gone from the node's store, its tombstone kept there.
        node!.stop()
        node = nil
        do {
            let store = try NodeStore(path: directory + "/homeroom.sqlite3")
            #expect(try store.rowCount(room: room) == 0)
            #expect(try store.loadTombstones()[room] != nil)
        }
        // A restart keeps refusing it.
        node = try NodeChild(name: "closed-class", extra: options)
        let restarted = try CLI.run(["join", "--user", "ana", "--room", room, "--node", node!.listen], stdin: "")
        #expect(restarted.status != 0 && restarted.stderr.contains("room-closed"), "\(restarted.status) \(restarted.stdout) \(restarted.stderr)")
    }
}
