import Testing
import HomeroomNode

/// The benchmark's baseline (raw nng sockets, what the SP transport is compared with).
@Suite("Raw nng baseline")
struct RawBaselineTests {
    @Test("raw baseline runs end to end (a smoke test, not a measurement)")
    func rawBaselineSmoke() throws {
        let pubsub = try RawBaseline.pubSubThroughput(url: "tcp://127.0.0.1:0", messageSize: 64, count: 2_000,
                                                      sendBuffer: 8192, receiveBuffer: 8192)
        #expect(pubsub.delivered + pubsub.lost == 2_000)
        #expect(pubsub.delivered > 0)
        let reqrep = try RawBaseline.requestReplyLatency(url: "tcp://127.0.0.1:0", messageSize: 64, count: 200)
        #expect(reqrep.p50Micros > 0 && reqrep.p99Micros >= reqrep.p50Micros && reqrep.perSecond > 0)
    }
}
