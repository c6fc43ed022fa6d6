import Foundation
import HomeroomCore
import Testing
@testable import HomeroomContext

/// The roster UIs draw is kept from the change sets (`LiveRoster`); the reference is the
/// whole roster rebuilt and sorted from the replica (`ReadModel.snapshot`). After every
/// step of seeded workloads (joins, leaves, names that tie and sort naturally, stage and
/// hands with changing limits, devices and privileges, mute-all, kicks, bans, breakout
/// groups, a node declared down, carousels whose turns pass with the clock, patches merged
/// from a second replica) the two agree, page by page.
///
///     HOMEROOM_SEED=<seed> swift test --filter LiveRosterTests
@Suite struct LiveRosterTests {
    static let nodeA = ReplicaID(name: "node-a"), nodeB = ReplicaID(name: "node-b")
    static let names = ["Ann", "ann", "Bob", "a2", "a10", "Zoë", "zoe", "Émile", "Student 9", "Student 10"]
    static let pages: [(index: Int, size: Int)?] = [nil, (0, 7), (1, 7), (3, 5), (99, 4)]

    struct Workload {
        var rng: SplitMix64
        var sequencerA = Sequencer(replica: LiveRosterTests.nodeA)
        var sequencerB = Sequencer(replica: LiveRosterTests.nodeB)
        var main = RoomState(roomID: "hall")
        var side = RoomState(roomID: "hall")
        var now: UInt64 = 1_780_000_000_000
        var counter: UInt64 = 0
        let users: [UserID]

        init(seed: UInt64, users: Int) {
            rng = SplitMix64(seed: seed)
            self.users = (0..<users).map { "u\($0)" }
        }

        func role(_ user: UserID) -> Role {
            guard let index = Int(user.dropFirst()) else { return .student }
            switch index % 10 {
            case 0: return .assistant
            case 1: return .observer
            default: return .student
            }
        }

        mutating func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        mutating func chance(_ percent: UInt64) -> Bool { rng.next() % 100 < percent }

        /// A delta applied to the main replica (or to the side one, merged later); the
        /// changes the main replica reports.
        mutating func write(_ author: UserID, _ role: Role, _ operation: HomeroomCore.Operation, onSide: Bool = false) -> [RoomChange] {
            now += rng.next() % 50
            counter += 1
            let write = Write(author: author, authorRole: role, authorCounter: counter, operation: operation)
            if onSide {
                _ = side.apply(sequencerB.stamp(write, nowMillis: now))
                return []
            }
            return main.apply(sequencerA.stamp(write, nowMillis: now)).changes
        }

        mutating func start() -> [RoomChange] {
            write("t", .teacher, .joinSession(user: "t", session: "t-1", name: "Teacher", role: .teacher, host: LiveRosterTests.nodeA, incarnation: 1))
        }

        mutating func step() -> [RoomChange] {
            let user = pick(users)
            let role = role(user)
            let onSide = chance(20)
            switch rng.next() % 21 {
            case 0, 1, 2:
                let host = chance(30) ? LiveRosterTests.nodeB : LiveRosterTests.nodeA
                return write(user, role, .joinSession(user: user, session: "\(user)-\(counter)", name: pick(LiveRosterTests.names), role: role,
                                                      host: host, incarnation: 1), onSide: onSide)
            case 3:
                guard let session = main.users[user]?.sessions.first(where: { $0.ended == nil }) else { return [] }
                return write(user, role, .leaveSession(user: user, session: session.id, started: session.started), onSide: onSide)
            case 4, 5: return write("t", .teacher, .setStage(user: user, on: chance(60)), onSide: onSide)
            case 6, 7: return write(user, role, .setHand(user: user, raised: chance(60)), onSide: onSide)
            case 8: return write(user, role, .setDevice(user: user, device: chance(50) ? .camera : .microphone, on: chance(60)), onSide: onSide)
            case 9: return write("t", .teacher, .setPrivilege(user: user, device: chance(50) ? .camera : .microphone, allowed: chance(60)), onSide: onSide)
            case 10: return write("t", .teacher, .reward(user: user, amount: Int32(rng.next() % 5) + 1, issuedAtMillis: now), onSide: onSide)
            case 11: return write(user, role, .setName(user: user, name: pick(LiveRosterTests.names)), onSide: onSide)
            case 12: return chance(30) ? write("t", .teacher, .kick(user: user), onSide: onSide) : []
            case 13: return chance(10) ? write("t", .teacher, .ban(user: user), onSide: onSide) : []
            case 14:
                if chance(20) { return write("t", .teacher, .muteAll, onSide: onSide) }
                // The room's mutes: every stream on stage may change, and no change set names the carousel's.
                if chance(25) {
                    let device: Device = chance(50) ? .camera : .microphone
                    let ending = (onSide ? side : main).mute(device)
                    return write("t", .teacher, .setDeviceMuted(device: device, muted: chance(55), ending: ending.isClosed ? ending.closedAt : .origin),
                                 onSide: onSide)
                }
                // Hand raising off, or on with auto-stage or not: raised hands may all go down.
                if chance(20) {
                    let gate = (onSide ? side : main).handRaising
                    let allowed = chance(60)
                    return write("t", .teacher, .setHandRaising(allowed: allowed, autoStage: chance(50),
                                                               ending: allowed && gate.isClosed ? gate.closedAt : .origin), onSide: onSide)
                }
                return write("t", .teacher, .setBoard(user: user, granted: chance(50)), onSide: onSide)
            case 15: return write("t", .teacher, chance(50) ? .setStageLimit(UInt32(rng.next() % 5) + 1) : .setHandLimit(UInt32(rng.next() % 4) + 1), onSide: onSide)
            case 16:
                if chance(30) { return write("t", .teacher, .setBreakoutGroup(id: "g\(rng.next() % 3)", name: "Group"), onSide: onSide) }
                return write("t", .teacher, .assignBreakoutGroup(user: user, group: chance(80) ? "g\(rng.next() % 3)" : nil), onSide: onSide)
            case 17:
                guard chance(10) else { return [] }
                return write("node:a", .system, .replicaDown(replica: LiveRosterTests.nodeB, incarnation: 1))
            case 18:
                // A carousel: its turns move the stage with the clock, and no change set says so.
                return write("t", .teacher, .setCarousel(Carousel(running: chance(70), intervalSeconds: 10, range: chance(50) ? .all : .cameraOn,
                                                                  order: chance(50) ? .joinOrder : .random)), onSide: onSide)
            case 19 where chance(50):
                // A quiet moment: the next turn may come.
                now += 2_000 + rng.next() % 10_000
                return []
            default:
                // Anti-entropy: what the side replica has that the main one lacks, as a patch.
                let changes = main.merge(side.missing(since: main.seen))
                side.merge(main.missing(since: side.seen))
                return changes
            }
        }
    }

    static func seeds(_ count: UInt64) -> [UInt64] {
        if let text = ProcessInfo.processInfo.environment["HOMEROOM_SEED"], let seed = UInt64(text) { return [seed] }
        return (1...count).map { 20261203 &+ $0 &* 7919 }
    }

    /// Runs one seeded workload, comparing after every step; the first difference fails.
    static func check(seed: UInt64, users: Int, steps: Int, bulkEvery: Int = 0) -> (updates: Int, rebuilds: Int)? {
        var workload = Workload(seed: seed, users: users)
        var live = LiveRoster()
        let local = UserInfo(id: "t", name: "Teacher", role: .teacher)
        live.note(workload.start())
        for step in 0..<steps {
            live.note(workload.step())
            if bulkEvery > 0 && step % bulkEvery == bulkEvery - 1 {
                // Many at once between two frames (a class renamed, a burst of joins): the
                // students are sorted again rather than re-placed one by one.
                for user in workload.users.prefix(users / 3) {
                    live.note(workload.write(user, workload.role(user), .setName(user: user, name: workload.pick(LiveRosterTests.names))))
                    live.note(workload.write(user, workload.role(user), .joinSession(user: user, session: "\(user)-bulk-\(step)", name: "Bulk \(step)",
                                                                                      role: workload.role(user), host: LiveRosterTests.nodeA, incarnation: 1)))
                }
            }
            for page in pages {
                let got = live.snapshot(workload.main, nowMillis: workload.now, local: local, connection: .connected, latencyMicros: 0, page: page)
                let want = ReadModel.snapshot(workload.main, local: local, connection: .connected, latencyMicros: 0, page: page, nowMillis: workload.now)
                if got != want {
                    let replay = "HOMEROOM_SEED=\(seed) swift test --filter LiveRosterTests"
                    Issue.record("""
                        seed \(seed), step \(step), page \(page.map { "\($0.index)/\($0.size)" } ?? "all"): the live roster differs from the rebuilt one
                        students: \(got.students.rows.map(\.info.id)) vs \(want.students.rows.map(\.info.id)) (total \(got.students.total) vs \(want.students.total))
                        moderators equal: \(got.moderators == want.moderators), stage equal: \(got.stage == want.stage), counts \(got.onlineCount)/\(got.observerCount) vs \(want.onlineCount)/\(want.observerCount)
                        rows equal as sets: \(Set(got.students.rows) == Set(want.students.rows))
                        first row that differs: \(zip(got.stage + got.students.rows, want.stage + want.students.rows).first { $0 != $1 }.map { "\($0.0) vs \($0.1)" } ?? "none")
                        replay: \(replay)
                        """)
                    return nil
                }
            }
        }
        return (live.updates, live.rebuilds)
    }

    @Test func theLiveRosterEqualsTheRebuiltOneAfterEveryStep() {
        var updates = 0, rebuilds = 0
        for seed in Self.seeds(30) {
            guard let counts = Self.check(seed: seed, users: 40, steps: 250) else { return }
            updates += counts.updates
            rebuilds += counts.rebuilds
        }
        // The comparison must have exercised the incremental path, not only rebuilds.
        #expect(updates > rebuilds * 2, "\(updates) incremental frames, \(rebuilds) rebuilds")
    }

    @Test func aLargeRoomIsKeptIncrementallyAndStillEqual() {
        for seed in Self.seeds(2) {
            guard let counts = Self.check(seed: seed, users: 600, steps: 400, bulkEvery: 50) else { return }
            #expect(counts.updates > counts.rebuilds * 2, "\(counts.updates) incremental frames, \(counts.rebuilds) rebuilds")
        }
    }
}
