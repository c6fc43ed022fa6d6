import Glibc
import Testing
@testable import HomeroomCore

/// The room's camera and microphone mutes (Flexible Classroom's `muteVideo` / `muteAudio`):
/// what they turn off, what they refuse, who they spare, and how every replica decides a
/// mute, an unmute and a student's device write that race across a partition.
@Suite struct RoomMuteTests {
    typealias Node = LockTests.Node
    static let now = LockTests.now

    /// Node n1 holding a room with tom (teacher), ada (assistant), ana and ben (students),
    /// ana on stage with her camera and microphone on and allowed: both live.
    static func liveClassroom() throws -> Node {
        var node = Node("n1")
        for (user, role) in [("tom", Role.teacher), ("ada", .assistant), ("ana", .student), ("ben", .student)] {
            _ = try node.write(user, role, .joinSession(user: user, session: "\(user)-1", name: user, role: role,
                                                        host: node.sequencer.replica, incarnation: 1), at: now).get()
        }
        _ = try node.write("tom", .teacher, .setStage(user: "ana", on: true), at: now + 1).get()
        for device in Device.allCases {
            _ = try node.write("ana", .student, .setDevice(user: "ana", device: device, on: true), at: now + 2).get()
            _ = try node.write("tom", .teacher, .setPrivilege(user: "ana", device: device, allowed: true), at: now + 3).get()
        }
        return node
    }

    static func state(_ room: RoomState, _ user: UserID, _ device: Device) -> StreamState {
        let row = room.roster().rows.first { $0.user == user }
        return device == .camera ? row?.camera ?? .inoperable : row?.microphone ?? .inoperable
    }

    @Test func aMuteShowsStudentsCamerasOffRefusesTurningThemOnAndAnUnmuteTurnsNothingOn() throws {
        var node = try Self.liveClassroom()
        #expect(Self.state(node.room, "ana", .camera) == .live)
        let mute = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 10).get()
        // The mute is the room's change; ana's camera shows off (state 2), her flag stays as she wrote it.
        #expect(node.room.apply(mute) == .duplicate)
        var replay = try Self.liveClassroom().room
        #expect(replay.apply(mute).changes == [.deviceMuteUpdated(.camera, muted: true), .streamUpdated("ana", .camera, .deviceOff)])
        #expect(Self.state(node.room, "ana", .camera) == .deviceOff && node.room.users["ana"]?.cameraDevice.value == true)
        #expect(Self.state(node.room, "ana", .microphone) == .live, "only the camera is muted")
        #expect(node.room.mute(.camera).isClosed && !node.room.mute(.microphone).isClosed)
        // Refused at the origin with a code that says what happened; turning it off is fine.
        let refused = node.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 11)
        #expect(node.refusalCode(refused) == "device-muted")
        if case let .failure(error) = refused { #expect(error.description.contains("once they unmute it")) }
        _ = try node.write("ana", .student, .setDevice(user: "ana", device: .camera, on: false), at: Self.now + 12).get()
        _ = try node.write("ana", .student, .setDevice(user: "ana", device: .microphone, on: true), at: Self.now + 12).get()
        // Unmuted: nothing turns on by itself, and ana may turn hers on again.
        _ = try node.write("ana", .student, .setDevice(user: "ana", device: .camera, on: false), at: Self.now + 13).get()
        let unmute = try node.write("ada", .assistant, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 14).get()
        guard case let .setDeviceMuted(_, false, ending) = unmute.operation else { Issue.record("not an unmute"); return }
        #expect(ending == mute.stamp, "the origin names the mute it ends")
        #expect(!node.room.mute(.camera).isClosed && Self.state(node.room, "ana", .camera) == .deviceOff)
        _ = try node.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 15).get()
        #expect(Self.state(node.room, "ana", .camera) == .live)
    }

    @Test func aCameraOnBeforeTheMuteStaysOffAfterTheUnmute() throws {
        var node = try Self.liveClassroom()
        _ = try node.write("tom", .teacher, .setDeviceMuted(device: .microphone, muted: true), at: Self.now + 10).get()
        let unmute = try node.write("tom", .teacher, .setDeviceMuted(device: .microphone, muted: false), at: Self.now + 11).get()
        // Its flag is still on, written before the mute: the unmute does not bring it back.
        #expect(node.room.users["ana"]?.microphoneDevice.value == true && Self.state(node.room, "ana", .microphone) == .deviceOff)
        // The same on a replica that takes the unmute alone, ahead of its mute (a patch brings that later).
        var replay = try Self.liveClassroom().room
        _ = replay.apply(unmute)
        #expect(Self.state(replay, "ana", .microphone) == .deviceOff)
        replay.merge(node.room.missing(since: replay.seen))
        #expect(replay == node.room && Self.state(replay, "ana", .microphone) == .deviceOff)
    }

    @Test func teachersAndAssistantsAreNotMuted() throws {
        var node = try Self.liveClassroom()
        _ = try node.write("tom", .teacher, .setStage(user: "ada", on: true), at: Self.now + 4).get()
        _ = try node.write("ada", .assistant, .setDevice(user: "ada", device: .camera, on: true), at: Self.now + 5).get()
        _ = try node.write("tom", .teacher, .setPrivilege(user: "ada", device: .camera, allowed: true), at: Self.now + 6).get()
        _ = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 10).get()
        #expect(Self.state(node.room, "ada", .camera) == .live)
        _ = try node.write("tom", .teacher, .setDevice(user: "tom", device: .camera, on: true), at: Self.now + 11).get()
        #expect(node.room.streamRules.deviceOn(node.room.users["tom"]!, .camera))
        // Only they mute; a student cannot, on any replica.
        #expect(node.refusalCode(node.write("ana", .student, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 12)) == "not-allowed")
        #expect(Authority.check(author: "ana", role: .student, operation: .setDeviceMuted(device: .camera, muted: false))?.code == "requires-moderator")
    }

    /// The race: tom mutes the cameras on n1 while ana, cut off on n2, turns hers on (n2
    /// admits it: it has not seen the mute), stamped after the mute. Every replica, in any
    /// order, shows it off, and it stays off after the unmute: she turns it on again.
    @Test func aStudentsCameraOnThatRacesTheMuteNeverCounts() throws {
        var a = try Self.liveClassroom()
        _ = try a.write("ana", .student, .setDevice(user: "ana", device: .camera, on: false), at: Self.now + 5).get()
        var b = Node("n2", room: a.room)
        let mute = try a.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 10).get()
        let raced = try b.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 20).get()
        #expect(mute.stamp < raced.stamp && Self.state(b.room, "ana", .camera) == .live)
        // Heal: by deltas in both orders, and by patches both ways.
        var deltasMuteFirst = a.room, deltasRaceFirst = b.room
        _ = deltasMuteFirst.apply(raced)
        let changes = deltasRaceFirst.apply(mute).changes
        #expect(changes.contains(.streamUpdated("ana", .camera, .deviceOff)))
        a.room.merge(b.room.missing(since: a.room.seen))
        b.room.merge(a.room.missing(since: b.room.seen))
        for room in [deltasMuteFirst, deltasRaceFirst, a.room, b.room] {
            #expect(room == a.room)
            #expect(Self.state(room, "ana", .camera) == .deviceOff && room.users["ana"]?.cameraDevice.value == true)
        }
        // The unmute does not bring the raced write back.
        _ = try a.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 30).get()
        #expect(Self.state(a.room, "ana", .camera) == .deviceOff)
        _ = try a.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 31).get()
        #expect(Self.state(a.room, "ana", .camera) == .live)
    }

    /// A mute and an unmute race: the room is muted on both nodes; tom unmutes on n1 while
    /// ada mutes again on n2. An unmute ends only the mute its origin saw, so the room stays
    /// muted on every replica whichever write the clock puts last, and ana's camera turned
    /// on in between on n1 (admitted there: unmuted) is off everywhere, then and after.
    @Test(arguments: [false, true])
    func aMuteWinsOverAConcurrentUnmute(_ unmuteStampedLast: Bool) throws {
        var a = try Self.liveClassroom()
        _ = try a.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 10).get()
        let split = a.room
        var b = Node("n2", room: split)
        let unmuteAt = Self.now + (unmuteStampedLast ? 30 : 20), muteAt = Self.now + (unmuteStampedLast ? 20 : 30)
        let unmute = try a.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: false), at: unmuteAt).get()
        let cameraOn = try a.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: unmuteAt + 1).get()
        let mute = try b.write("ada", .assistant, .setDeviceMuted(device: .camera, muted: true), at: muteAt).get()
        #expect((mute.stamp < unmute.stamp) == unmuteStampedLast && Self.state(a.room, "ana", .camera) == .live)
        var orders: [RoomState] = []
        for deltas in [[unmute, cameraOn, mute], [mute, unmute, cameraOn], [cameraOn, mute, unmute]] {
            var room = split
            for delta in deltas { _ = room.apply(delta) }
            orders.append(room)
        }
        a.room.merge(b.room.missing(since: a.room.seen))
        b.room.merge(a.room.missing(since: b.room.seen))
        for room in orders + [b.room] {
            #expect(room == a.room)
            #expect(room.mute(.camera).isClosed && Self.state(room, "ana", .camera) == .deviceOff)
        }
        // Everyone refuses her camera now; the next unmute ends ada's mute, and ana turns it on again.
        #expect(b.refusalCode(b.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 40)) == "device-muted")
        _ = try b.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 41).get()
        #expect(!b.room.mute(.camera).isClosed && Self.state(b.room, "ana", .camera) == .deviceOff)
    }

    /// Unmuting a room that is not muted changes nothing (it names no mute), so a second
    /// unmute cannot switch off a camera turned on after the first.
    @Test func anUnmuteOfAnUnmutedRoomChangesNothing() throws {
        var node = try Self.liveClassroom()
        let noop = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 10).get()
        #expect(noop.operation == .setDeviceMuted(device: .camera, muted: false, ending: .origin))
        #expect(node.room.mute(.camera) == RoomGate() && Self.state(node.room, "ana", .camera) == .live)
        _ = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 11).get()
        _ = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 12).get()
        _ = try node.write("ana", .student, .setDevice(user: "ana", device: .camera, on: true), at: Self.now + 13).get()
        let again = try node.write("ada", .assistant, .setDeviceMuted(device: .camera, muted: false), at: Self.now + 14).get()
        #expect(node.room.apply(again) == .duplicate && Self.state(node.room, "ana", .camera) == .live)
    }

    /// A camera-on carousel counts a camera as the room does: a muted student's is off.
    @Test func aCameraOnCarouselLeavesMutedCamerasOut() throws {
        var node = try Self.liveClassroom()
        _ = try node.write("tom", .teacher, .setCarousel(Carousel(running: true, intervalSeconds: 10, range: .cameraOn, order: .joinOrder)),
                           at: Self.now + 5).get()
        #expect(node.room.carouselTurn(atMillis: Self.now + 6)?.candidates == ["ana"])
        _ = try node.write("tom", .teacher, .setDeviceMuted(device: .camera, muted: true), at: Self.now + 7).get()
        #expect(node.room.carouselTurn(atMillis: Self.now + 8)?.candidates ?? [] == [])
    }
}

/// `RoomGate` is a join-semilattice: any order, grouping and repetition of closings and
/// openings gives the same gate, and the same verdict on every governed write.
@Suite struct RoomGateLatticeTests {
    static func stamp(_ millis: UInt64, _ replica: UInt64) -> Stamp {
        Stamp(clock: HybridTimestamp(millis: millis, logical: 0, replica: ReplicaID(replica)), sequence: millis)
    }

    @Test func mergesCommuteAssociateAndRepeat() {
        let replay = getenv("HOMEROOM_SEED").flatMap { UInt64(String(cString: $0)) }
        for seed in replay.map({ $0...$0 }) ?? 7_000...7_199 {
            var rng = SplitMix64(seed: seed)
            // Closings at random moments, openings each naming one of them (or none).
            var closings: [Stamp] = []
            var writes: [(inout RoomGate) -> Void] = []
            for index in 0..<Int.random(in: 1...8, using: &rng) {
                let at = Self.stamp(UInt64.random(in: 1...100, using: &rng), UInt64(index % 3 + 1))
                if closings.isEmpty || rng.chance(50) {
                    closings.append(at)
                    writes.append { $0.close(at: at) }
                } else {
                    let ends = rng.chance(85) ? closings.randomElement(using: &rng)! : .origin
                    writes.append { $0.open(ending: ends, at: at) }
                }
            }
            func gate(_ order: [Int]) -> RoomGate {
                var gate = RoomGate()
                for index in order { writes[index](&gate) }
                return gate
            }
            let reference = gate(Array(writes.indices))
            let shuffled = gate(writes.indices.shuffled(using: &rng))
            // Split in two replicas, merged both ways and twice.
            let cut = Int.random(in: 0...writes.count, using: &rng)
            var left = gate(Array(0..<cut)), right = gate(Array(cut..<writes.count))
            let leftBefore = left
            left.merge(right); left.merge(right)
            right.merge(leftBefore)
            #expect(shuffled == reference && left == reference && right == reference, "seed \(seed)")
            #expect(reference.merged(reference) == reference, "seed \(seed)")
            for probe in 0...101 { #expect(shuffled.admits(Self.stamp(UInt64(probe), 9)) == reference.admits(Self.stamp(UInt64(probe), 9))) }
        }
    }

    @Test func theLatestClosingHoldsUntilAnOpeningNamesIt() {
        var gate = RoomGate()
        #expect(!gate.isClosed && gate.admits(Self.stamp(1, 1)))
        let openedNothing = gate.open(ending: .origin, at: Self.stamp(2, 1))
        #expect(!openedNothing, "nothing to open")
        gate.close(at: Self.stamp(10, 1))
        #expect(gate.isClosed && !gate.admits(Self.stamp(11, 1)))
        gate.open(ending: Self.stamp(10, 1), at: Self.stamp(20, 1))
        #expect(!gate.isClosed && !gate.admits(Self.stamp(15, 2)) && gate.admits(Self.stamp(21, 2)))
        // A later opening of the same closing changes nothing; a closing it did not see holds.
        let reopened = gate.open(ending: Self.stamp(10, 1), at: Self.stamp(25, 1))
        #expect(!reopened)
        gate.close(at: Self.stamp(18, 2))
        #expect(gate.isClosed, "an opening ends only the closing its origin saw")
        // An opening that arrives before its closing already counts.
        var early = RoomGate()
        early.open(ending: Self.stamp(10, 1), at: Self.stamp(20, 1))
        #expect(!early.isClosed && early.openSince == Self.stamp(20, 1))
        early.close(at: Self.stamp(10, 1))
        #expect(!early.isClosed && early.openSince == Self.stamp(20, 1))
    }
}

extension RoomGate {
    /// A copy merged with `other` (for expressions).
    fileprivate func merged(_ other: RoomGate) -> RoomGate {
        var copy = self
        copy.merge(other)
        return copy
    }
}
