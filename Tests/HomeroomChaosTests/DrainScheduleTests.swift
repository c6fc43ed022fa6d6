import HomeroomEngine
import Testing
@testable import HomeroomChaosKit

/// The drain fault: planned only with placement, always on one of the room's owners (a
/// drain of a node that holds nothing would move nothing), and long enough for the
/// drain to end.
@Suite struct DrainScheduleTests {
    static func options(seed: UInt64, replicas: Int?, mode: ChaosOptions.Mode = .short) -> ChaosOptions {
        var options = ChaosOptions()
        options.seed = seed
        options.seedGiven = true
        options.replicas = replicas
        options.mode = mode
        options.durationSeconds = 600
        return options
    }

    @Test func withoutPlacementTheDrainIsSkippedAndSaysWhy() {
        let (faults, skipped) = Schedule.make(options: Self.options(seed: 20261201, replicas: 0), cutsLinks: true)
        #expect(!faults.contains { $0.kind == .drain })
        #expect(!faults.contains { $0.kind == .join })
        #expect(skipped == [.drain, .join])
        #expect(FaultKind.describeSkipped(skipped) == "drain, join (need placement: --replicas 1 or more)")
        #expect(FaultKind.describeSkipped([.halves, .drain, .ring]) == "partition-halves, partition-ring (need --netns); drain (need placement: --replicas 1 or more)")
    }

    @Test func aShortRunDrainsOneOwnerOfTheRoomOnceForLongEnough() {
        var targets = Set<Int>()
        var fresh = Set<Int>()
        for seed in UInt64(1)...40 {
            let (faults, skipped) = Schedule.make(options: Self.options(seed: seed, replicas: 3), cutsLinks: true)
            #expect(skipped.isEmpty)
            let drains = faults.filter { $0.kind == .drain }
            #expect(drains.count == 1, "seed \(seed)")
            guard let drain = drains.first else { continue }
            let owners = Placement(replicas: 3, members: ["n1", "n2", "n3", "n4", "n5"]).owners(of: ChaosRun.room)
            #expect(owners.contains("n\(drain.nodes[0] + 1)"), "seed \(seed): n\(drain.nodes[0] + 1) is not an owner of \(owners)")
            #expect(Schedule.drainMillis.contains(drain.durationMillis))
            #expect(Set(drain.nodes) == Set(0..<5))
            targets.insert(drain.nodes[0])
            fresh.insert(drain.amount)
            // The next fault starts after the drain's planned end.
            if let next = faults.first(where: { $0.startMillis > drain.startMillis }) { #expect(next.startMillis >= drain.endMillis) }
        }
        // The seed picks among the three owners, and both ways back (own store, empty store).
        #expect(targets.count == 3)
        #expect(fresh == [0, 1])
    }

    @Test func aSoakDrainsAgainAndNeverOnlyWithoutPlacement() {
        let placed = Schedule.make(options: Self.options(seed: 99, replicas: 2, mode: .soak), cutsLinks: true).faults
        #expect(placed.filter { $0.kind == .drain }.count >= 2)
        let everywhere = Schedule.make(options: Self.options(seed: 99, replicas: 0, mode: .soak), cutsLinks: true).faults
        #expect(!everywhere.contains { $0.kind == .drain })
        // The nodes' default (3 copies) is placement: drains are planned.
        let byDefault = Schedule.make(options: Self.options(seed: 99, replicas: nil, mode: .soak), cutsLinks: true).faults
        #expect(byDefault.contains { $0.kind == .drain })
    }

    @Test func theNewcomerIsTheRoomsFirstOwnerOnceItJoins() {
        for (nodes, replicas) in [(3, 1), (3, 3), (5, 2), (5, 3), (7, 3), (9, 5)] {
            let name = Schedule.newcomerName(nodes: nodes, replicas: replicas)
            let members = (1...nodes).map { "n\($0)" }
            #expect(!members.contains(name), "\(nodes) nodes: \(name) is already a member")
            let owners = Placement(replicas: replicas, members: members + [name]).owners(of: ChaosRun.room)
            #expect(owners.first == name, "\(nodes) nodes, \(replicas) copies: \(name) is not the first owner of \(owners)")
            // So one member loses the room to it: the join moves the room.
            let before = Placement(replicas: replicas, members: members).owners(of: ChaosRun.room)
            #expect(Set(before).subtracting(owners).count == 1)
        }
    }

    @Test func aShortRunJoinsOnceForLongEnoughAndNothingOverlapsIt() {
        for seed in UInt64(1)...40 {
            let (faults, _) = Schedule.make(options: Self.options(seed: seed, replicas: 3), cutsLinks: true)
            let joins = faults.filter { $0.kind == .join }
            #expect(joins.count == 1, "seed \(seed)")
            guard let join = joins.first else { continue }
            // The newcomer's slot comes after the members'.
            #expect(join.nodes[0] == 5)
            #expect(Nemesis.affected(by: join, cutsLinks: true) == [5])
            #expect(Schedule.drainMillis.contains(join.durationMillis))
            if let next = faults.first(where: { $0.startMillis > join.startMillis }) { #expect(next.startMillis >= join.endMillis) }
        }
        // In a soak, no fault overlaps a join or a drain.
        let soak = Schedule.make(options: Self.options(seed: 7, replicas: 3, mode: .soak), cutsLinks: true).faults
        #expect(soak.filter { $0.kind == .join }.count >= 2)
        for (index, fault) in soak.enumerated() where fault.kind.overlapsNothing {
            let overlapping = soak.enumerated().filter { other in
                other.offset != index && other.element.startMillis < fault.endMillis && fault.startMillis < other.element.endMillis
            }.map(\.element.kind)
            #expect(overlapping.isEmpty, "\(fault.kind) at \(fault.startMillis) overlaps \(overlapping)")
        }
    }
}
