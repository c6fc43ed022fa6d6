import Testing
@testable import HomeroomCore
@testable import HomeroomSimulation

/// `snapshot()` shares the state itself when that is what `missing(since: .empty)` would
/// build; after simulated schedules it is the same value either way.
@Suite struct SimulatedSnapshotTests {
    @Test func snapshotIsTheCutFromNothingAfterRandomSchedules() {
        var shared = 0
        for seed in UInt64(0)..<40 {
            var config = SimulationConfig()
            config.replicas = 3
            config.students = 8
            config.steps = 200
            var simulation = Simulation(seed: 0xA11_0000 + seed, config: config)
            simulation.runToEnd()
            for node in simulation.nodes {
                for world in simulation.worlds {
                    let state = node.state(of: world.id)
                    // The simulation seeds limits as unwritten registers with non-default values: a cut drops them.
                    #expect(!state.isOwnSnapshot)
                    #expect(state.snapshot() == state.missing(since: .empty))
                    var plain = state
                    let fresh = RoomState(roomID: plain.roomID)
                    if plain.stageLimit.stamp == .origin { plain.stageLimit = fresh.stageLimit }
                    if plain.handLimit.stamp == .origin { plain.handLimit = fresh.handLimit }
                    if plain.type.stamp == .origin { plain.type = fresh.type }
                    if plain.historyLimit.stamp == .origin { plain.historyLimit = fresh.historyLimit }
                    if plain.isOwnSnapshot { shared += 1 }
                    #expect(plain.snapshot() == plain.missing(since: .empty))
                    var replica = RoomState(roomID: plain.roomID)
                    replica.merge(plain.snapshot())
                    #expect(replica == plain)
                }
            }
        }
        #expect(shared > 0, "no schedule took the shared snapshot")
    }
}
