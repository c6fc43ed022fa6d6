import HomeroomNode
import Testing

/// The link told for people (issue 42, item 1): which node, since when, why, what is tried.
@Suite struct ClientLinkStatusTests {
    let a = "tcp://10.0.0.1:7100", b = "tcp://10.0.0.2:7100"

    @Test func aLostNodeIsNamedWithItsAgeCauseAndWhatIsTried() {
        let lost = ClientLinkStatus(state: .reconnecting, node: a, sinceMillis: 1_000, cause: "timed out", trying: b,
                                    lastFailure: "tcp://10.0.0.3:7100: refused")
        #expect(lost.summary(nowMillis: 13_500) == "lost \(a) 12 s ago (timed out); trying \(b) (before: tcp://10.0.0.3:7100: refused)")
        let down = ClientLinkStatus(state: .aborted, node: a, sinceMillis: 0, cause: "timed out", lastFailure: "\(b): refused",
                                    nextRoundMillis: 200_000)
        #expect(down.summary(nowMillis: 197_000) == "lost \(a) 3 min ago (timed out); every node failed (last: \(b): refused); next try in 3 s")
    }

    @Test func aRecoveryNamesTheNodeLostAndForHowLong() {
        var status = ClientLinkStatus(state: .connected, node: b, sinceMillis: 5_000)
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b)")
        status.recoveredFrom = ClientLinkStatus.Recovery(node: a, millis: 4_200, cause: "timed out")
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b) (moved from \(a) after 4 s: timed out)")
        status.recoveredFrom = ClientLinkStatus.Recovery(node: b, millis: 2_000, cause: nil)
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b) (back after 2 s)")
    }
}
