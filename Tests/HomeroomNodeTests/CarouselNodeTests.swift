import HomeroomCore
import Testing
@testable import HomeroomNode

/// The stage carousel at the nodes: the operators' room listing shows the turn every
/// replica derives, and a carousel out of its bounds is a refused write on every node.
@Suite(.serialized) struct CarouselNodeTests {
    @Test func theRoomListingShowsTheCarouselsTurnAndTheNextTurnOnceItStarts() throws {
        let cluster = try TestCluster(size: 1, label: "carousel-listing")
        let node = cluster.nodes[0]
        let teacher = cluster.client("t", .teacher, node: 0, room: "rota")
        let students = ["s1", "s2", "s3"].map { cluster.client($0, .student, node: 0, room: "rota") }
        defer { for client in [teacher] + students { client.close() } }
        try teacher.connect()
        for student in students { try student.connect() }
        try teacher.write(.setStageLimit(2))
        try teacher.write(.setCarousel(Carousel(intervalSeconds: 10, range: .all, order: .joinOrder)))
        #expect(eventually(5) { node.room("rota")?.carouselTurn(atMillis: node.wallMillis())?.candidates.count == 3 })
        let room = try #require(node.room("rota"))
        #expect(room.stageWinners.isEmpty, "nobody was put on stage by hand")

        // Now: the stage is the turn's two students, as the room derives it at the node's clock.
        let now = node.wallMillis()
        let turn = try #require(room.carouselTurn(atMillis: now))
        let listed = try #require(node.roomSummaries(atWallMillis: now).first { $0.id == "rota" })
        #expect(listed.stage == room.stage(atMillis: now) && listed.stage == turn.onStage && listed.stage.count == 2, "\(listed.stage) / \(turn)")
        #expect(node.roomsJSON().contains("\"stage\":[\(turn.onStage.map { "\"\($0)\"" }.joined(separator: ","))]"), "\(node.roomsJSON())")

        // At the next turn the listing, made a moment ago, is made again: a new stage.
        let next = turn.nextTurnAtMillis
        let later = try #require(node.roomSummaries(atWallMillis: next).first { $0.id == "rota" })
        #expect(later.stage == room.stage(atMillis: next) && later.stage != listed.stage, "\(later.stage) after \(listed.stage)")

        // Stopped: the stage as written again.
        try teacher.write(.setCarousel(.stopped))
        #expect(eventually(5) { node.room("rota")?.carousel.value.running == false })
        // (A listing is up to a second old: read until it is made again.)
        #expect(eventually(5) { node.roomSummaries(atWallMillis: next + 1_000).first { $0.id == "rota" }?.stage == [] })
    }

    @Test(arguments: [UInt32(5), 100])
    func aCarouselOutOfItsBoundsIsARefusedWriteOnEveryNode(seconds: UInt32) throws {
        let cluster = try TestCluster(size: 2, label: "carousel-bounds-\(seconds)")
        #expect(cluster.meshed())
        let teachers = [cluster.client("t", .teacher, node: 0, room: "rota"), cluster.client("a", .assistant, node: 1, room: "rota")]
        defer { for client in teachers { client.close() } }
        for (index, teacher) in teachers.enumerated() {
            try teacher.connect()
            do {
                try teacher.write(.setCarousel(Carousel(intervalSeconds: seconds)))
                Issue.record("node \(index) took a carousel turning every \(seconds) s")
            } catch {
                // The policy's refusal (a write acknowledgement, REJECTED), as for a lock TTL
                // out of range: not a message that failed to decode (invalid-value).
                #expect(error.code == "not-allowed", "node \(index): \(error)")
                #expect(error.description.contains("10 to 99 s, not \(seconds)"), "node \(index): \(error)")
            }
        }
        // The bounds themselves are taken.
        try teachers[0].write(.setCarousel(Carousel(intervalSeconds: 99)))
        try teachers[1].write(.setCarousel(Carousel(intervalSeconds: 10)))
        #expect(eventually(5) { cluster.converged(room: "rota") && cluster.nodes[0].room("rota")?.carousel.value.running == true })
    }
}
