import Foundation
import HomeroomTestSupport
import Synchronization
import Testing
@testable import HomeroomNode
import HomeroomNNG

/// The publisher's room streams with real sockets: libnng's own ws:// SUB socket and
/// this transport's SUB follow one room each and get nothing else, while an SP/TCP
/// subscriber on the same port still gets everything (v1).
@Suite(.serialized) struct RoomStreamTransportTests {
    static func waitUntil(_ seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    final class Inbox: Sendable {
        let messages = Mutex<[[UInt8]]>([])
        var all: [[UInt8]] { messages.withLock { $0 } }
    }

    @Test func libnngAndOurSubscriberFollowOneRoomEachWhileTCPGetsEverything() throws {
        let publisher = try SPPublisher(router: RoomStreams.follow(resource:))
        defer { publisher.close() }
        let address = try publisher.listen("tcp://127.0.0.1:0")
        let port = address.split(separator: ":").last.map(String.init) ?? ""

        // libnng 1.5.2's ws transport, as any nng binding would dial it.
        let stock = try NNGSocket(.sub)
        defer { _ = stock.close() }
        try stock.subscribe([UInt8]())
        try stock.setReceiveTimeout(.milliseconds(200))
        try stock.dial("ws://127.0.0.1:\(port)\(RoomStreams.path(room: "roomA"))", blocking: true)
        // This transport's SUB, following room B and user bob's private stream there.
        let ours = Inbox(), everything = Inbox()
        let subscriber = try SPSubscriber { [ours] message in ours.messages.withLock { $0.append(message) } }
        defer { subscriber.close() }
        subscriber.subscribe([UInt8]())
        try subscriber.dial("ws://127.0.0.1:\(port)\(RoomStreams.path(room: "roomB", user: "bob"))")
        let firehose = try SPSubscriber { [everything] message in everything.messages.withLock { $0.append(message) } }
        defer { firehose.close() }
        firehose.subscribe([UInt8]())
        try firehose.dial(address)
        #expect(Self.waitUntil(10) { publisher.subscribers == 3 && publisher.streamSubscribers == 2 }, "\(publisher.subscribers) subscribers")

        let published: [([UInt8], [UInt8])] = [
            (Topics.clientRoom("roomA"), Array("a1".utf8)), (Topics.clientRoom("roomB"), Array("b1".utf8)),
            (Topics.clientRoom("roomAB"), Array("ab".utf8)), (Topics.clientUser("roomB", "bob"), Array("to-bob".utf8)),
            (Topics.clientUser("roomB", "carol"), Array("to-carol".utf8)), (Topics.nodeRoom("roomA"), Array("node".utf8)),
            (Topics.heartbeat, Array("beat".utf8)), (Topics.clientRoom("roomA"), [UInt8](repeating: 7, count: 300_000)),
        ]
        for (topic, payload) in published { try publisher.send(topic: topic, payload: payload) }

        var stockGot: [[UInt8]] = []
        for _ in 0..<50 {
            guard let message = try? stock.receive() else { if stockGot.count >= 2 { break } else { continue } }
            stockGot.append(message)
        }
        #expect(stockGot == [Topics.clientRoom("roomA") + Array("a1".utf8), Topics.clientRoom("roomA") + [UInt8](repeating: 7, count: 300_000)],
                "libnng's SUB got \(stockGot.map { $0.prefix(12) })")
        #expect(Self.waitUntil(10) { everything.all.count == published.count }, "the SP/TCP subscriber got \(everything.all.count)")
        #expect(Self.waitUntil(5) { ours.all.count >= 2 })
        usleep(200_000)
        #expect(ours.all == [Topics.clientRoom("roomB") + Array("b1".utf8), Topics.clientUser("roomB", "bob") + Array("to-bob".utf8)],
                "our SUB got \(ours.all.map { String(decoding: $0, as: UTF8.self) })")
    }

    @Test func aBadPathOrAStrangerGetsAnHTTPErrorAndTheConnectionCloses() throws {
        let publisher = try SPPublisher(router: RoomStreams.follow(resource:))
        defer { publisher.close() }
        let address = try publisher.listen("tcp://127.0.0.1:0")
        let port = try #require(UInt16(address.split(separator: ":").last ?? ""))
        for (request, status) in [(SPWebSocketTests.request("/v1/rooms/a%20b"), "404"), (SPWebSocketTests.request("/nope"), "404"),
                                  (SPWebSocketTests.request("/v1/rooms/a", protocolName: "req.sp.nanomsg.org"), "400"),
                                  (Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8), "426")] {
            let connection = try #require(RawConnection(port: port))
            defer { connection.close() }
            connection.write(request)
            let answer = String(decoding: connection.read(12), as: UTF8.self)
            #expect(answer == "HTTP/1.1 \(status)", "\(String(decoding: request.prefix(40), as: UTF8.self)): \(answer)")
            #expect(connection.peerClosed())
        }
        // A peer that sends a data frame to a PUB is dropped, as on SP/TCP.
        let connection = try #require(RawConnection(port: port))
        defer { connection.close() }
        connection.write(SPWebSocketTests.request("/v1/rooms/a"))
        #expect(String(decoding: connection.read(12), as: UTF8.self) == "HTTP/1.1 101")
        let data = SPWebSocket.message(Array("hello".utf8), masked: true)
        connection.write(data.prefix + data.body)
        #expect(connection.peerClosed())
        // One that announces a 10 MiB frame is dropped at the header, before any payload.
        let announcer = try #require(RawConnection(port: port))
        defer { announcer.close() }
        announcer.write(SPWebSocketTests.request("/v1/rooms/a"))
        #expect(String(decoding: announcer.read(12), as: UTF8.self) == "HTTP/1.1 101")
        announcer.write(SPWebSocket.header(opcode: .binary, fin: true, length: 10 << 20, mask: [1, 2, 3, 4]))
        #expect(announcer.peerClosed())
        #expect(Self.waitUntil(5) { publisher.streamSubscribers == 0 && publisher.subscribers == 0 })
    }
}
