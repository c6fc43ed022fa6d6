import Testing
import HomeroomNode
import HomeroomNNG

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

    /// The burst baseline sends the nodes' mean batch per send: every message of every
    /// batch reaches every subscriber once (a batch of 4 over 50 messages ends with 2).
    @Test func batchedFanOutDeliversEveryMessageOfEveryBatch() throws {
        let run = try RawBaseline.pubSubFanOut(publishers: 3, subscribers: 6, messages: 50, messageSize: 40, intervalMicros: 2_000, batch: 4)
        #expect(run.expected == 300)
        #expect(run.delivered == 300, "\(run.delivered) of 300 delivered")
    }
}
