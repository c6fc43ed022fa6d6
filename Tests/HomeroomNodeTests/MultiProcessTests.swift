import HomeroomTestSupport
import Foundation
import HomeroomCore
import Testing
@testable import HomeroomNode

/// Real `homeroom node` processes on tcp loopback: partition one away, heal, converge.
@Suite(.serialized) struct MultiProcessTests {
    @Test func threeProcessesPartitionHealAndConverge() throws {
        let first = try NodeProcess(name: "mp-a", seeds: [])
        let second = try NodeProcess(name: "mp-b", seeds: [first.listen])
        let third = try NodeProcess(name: "mp-c", seeds: [first.listen])
        let nodes = [first, second, third]
        defer { for node in nodes { node.stop() } }
        let (logger, _) = Logger.capturing(label: "mp", level: .warning)
        func client(_ user: String, _ role: Role, _ node: NodeProcess) -> RoomClient {
            var options = RoomClient.Options()
            options.syncIntervalMillis = 100
            options.requestTimeoutMillis = 500
            let endpoints = [node] + nodes.filter { $0 !== node }
            return RoomClient(room: "physics", user: user, role: role, name: user, endpoints: endpoints.map { NodeEndpoint($0.listen) },
                              options: options, logger: logger)
        }
        let teacher = client("teacher", .teacher, first)
        let bob = client("bob", .student, second)
        let carol = client("carol", .student, third)
        let clients = [teacher, bob, carol]
        defer { for client in clients { client.close() } }
        for client in clients { try client.connect() }
        func converged() -> Bool { clients.allSatisfy { $0.replica == teacher.replica } }
        #expect(eventually(10) { clients.allSatisfy { $0.replica.users.count == 3 } && converged() },
                "clients did not converge before the partition")

        third.signal(SIGUSR1)   // cut mp-c from the cluster (its clients still reach it)
        usleep(300_000)
        for _ in 0..<10 { try teacher.write(.reward(user: "carol", amount: 1)) }
        try teacher.write(.setStage(user: "bob", on: true))
        try carol.write(.setHand(user: "carol", raised: true))
        usleep(500_000)
        #expect(carol.replica.users["carol"]?.rewardTotal ?? 0 < 10, "the partition did not hold")
        #expect(teacher.replica.raisedHands.isEmpty, "the partition did not hold")

        third.signal(SIGUSR2)   // heal
        let healed = eventually(10) { converged() }
        #expect(healed, "no convergence after heal; logs:\n\(nodes.map(\.log).joined(separator: "\n"))")
        #expect(carol.replica.users["carol"]?.rewardTotal == 10)
        #expect(teacher.replica.raisedHands == ["carol"])
        #expect(carol.replica.stageWinners == ["bob"])
        for node in nodes {
            #expect(!node.log.contains("Fatal error"), "\(node.name) crashed")
        }
    }
}
