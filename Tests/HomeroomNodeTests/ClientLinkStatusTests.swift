import HomeroomCore
@testable import HomeroomNode
import Testing

/// The link told for people (issue 42, item 1): which node, since when, why, what is tried;
/// and (issue 43) a reason with every change of state, and `suspended` after the backoff.
@Suite struct ClientLinkStatusTests {
    let a = "tcp://10.0.0.1:7100", b = "tcp://10.0.0.2:7100"

    @Test func aLostNodeIsNamedWithItsAgeCauseAndWhatIsTried() {
        let lost = ClientLinkStatus(state: .reconnecting, reason: .linkLost, node: a, sinceMillis: 1_000, cause: "timed out", trying: b,
                                    lastFailure: "tcp://10.0.0.3:7100: refused")
        #expect(lost.summary(nowMillis: 13_500) == "lost \(a) 12 s ago (timed out); trying \(b) (before: tcp://10.0.0.3:7100: refused)")
        let down = ClientLinkStatus(state: .reconnecting, reason: .everyNodeFailed, node: a, sinceMillis: 0, cause: "timed out",
                                    lastFailure: "\(b): refused", nextRoundMillis: 200_000)
        #expect(down.summary(nowMillis: 197_000) == "lost \(a) 3 min ago (timed out); every node failed (last: \(b): refused); next try in 3 s")
    }

    @Test func aSuspendedLinkSaysForHowLongEveryNodeFailedAndWhenItTriesNext() {
        let suspended = ClientLinkStatus(state: .suspended, reason: .backoffSpent, node: a, sinceMillis: 0, cause: "timed out",
                                         lastFailure: "\(b): refused", nextRoundMillis: 58_000)
        #expect(suspended.summary(nowMillis: 30_000)
                == "suspended: lost \(a) 30 s ago (timed out); every node failed for 30 s (last: \(b): refused); next try in 28 s")
        var trying = suspended
        trying.trying = b
        #expect(trying.summary(nowMillis: 30_000) == "suspended: lost \(a) 30 s ago (timed out); trying \(b) (before: \(b): refused)")
    }

    @Test func anAbortedLinkSaysWhyItEnded() {
        let banned = ClientLinkStatus(state: .connected, reason: .joined, node: a, sinceMillis: 0).ended(.banned)
        #expect(banned.state == .aborted && banned.reason == .banned)
        #expect(banned.summary(nowMillis: 5_000) == "given up: banned from the room (was on \(a))")
        let never = ClientLinkStatus(state: .connecting, lastFailure: "\(a): refused").ended(.joinFailed)
        #expect(never.summary(nowMillis: 5_000) == "given up: no node took the join (last: \(a): refused)")
    }

    @Test func aRecoveryNamesTheNodeLostAndForHowLong() {
        var status = ClientLinkStatus(state: .connected, node: b, sinceMillis: 5_000)
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b)")
        status.recoveredFrom = ClientLinkStatus.Recovery(node: a, millis: 4_200, cause: "timed out")
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b) (moved from \(a) after 4 s: timed out)")
        status.recoveredFrom = ClientLinkStatus.Recovery(node: b, millis: 2_000, cause: nil)
        #expect(status.summary(nowMillis: 6_000) == "connected to \(b) (back after 2 s)")
    }

    /// The transitions RoomClient makes, in the order a loss of every node makes them:
    /// each change of state carries its reason; the backoff's rounds keep the loss's node,
    /// time and cause; back, the recovery remembers them.
    @Test func everyChangeOfStateCarriesItsReason() {
        var schedule = ReconnectSchedule(.init(backoffMillis: [2_000, 4_000], suspendedIntervalMillis: 30_000, jitter: 0))
        var random = SplitMix64(seed: 7)   // jitter is off: any generator does
        var status = ClientLinkStatus(state: .connecting)
        #expect(status.reason == .starting)
        status = status.attached(to: a, after: status.state, nowMillis: 1_000)
        #expect((status.state, status.reason) == (.connected, .joined) && status.recoveredFrom == nil)
        status = status.lost(.linkLost, cause: "timed out", nowMillis: 10_000)
        #expect((status.state, status.reason, status.node, status.sinceMillis, status.cause) == (.reconnecting, .linkLost, a, 10_000, "timed out"))
        var seen: [(ClientLinkState, ClientLinkReason, UInt64?)] = []
        var now: UInt64 = 10_500
        for _ in 0..<4 {
            status = status.roundFailed(schedule.roundFailed(using: &random), nowMillis: now)
            seen.append((status.state, status.reason, status.nextRoundMillis.map { $0 - now }))
            now += 40_000
        }
        #expect(seen.map(\.0) == [.reconnecting, .reconnecting, .suspended, .suspended])
        #expect(seen.map(\.1) == [.everyNodeFailed, .everyNodeFailed, .backoffSpent, .backoffSpent])
        #expect(seen.map(\.2) == [2_000, 4_000, 30_000, 30_000])
        #expect((status.node, status.sinceMillis, status.cause) == (a, 10_000, "timed out"), "the loss stays named")
        status = status.attached(to: b, after: status.state, nowMillis: now)
        #expect((status.state, status.reason) == (.connected, .reattached))
        #expect(status.recoveredFrom == ClientLinkStatus.Recovery(node: a, millis: now - 10_000, cause: "timed out"))
        #expect(status.nextRoundMillis == nil)
        status = status.ended(.closedByClient)
        #expect((status.state, status.reason) == (.aborted, .closedByClient))
    }

    @Test func finalRefusalsMapToTheirReasons() {
        #expect(ClientLinkReason.finalRefusal("banned") == .banned)
        #expect(ClientLinkReason.finalRefusal("token-expired") == .tokenExpired)
        #expect(ClientLinkReason.finalRefusal("token-revoked") == .tokenRevoked)
        #expect(ClientLinkReason.finalRefusal("token-wrong-room") == .tokenRefused)
        #expect(ClientLinkReason.finalRefusal("not-in-group") == .removedFromGroup)
        #expect(ClientLinkReason.finalRefusal("room-closed") == .roomClosed)
        #expect(ClientLinkReason.finalRefusal("something-new") == .refused)
        // Codes are what the page and scripts read: unique, and stable in form.
        let codes = ClientLinkReason.allCases.map(\.rawValue)
        #expect(Set(codes).count == codes.count)
        #expect(codes.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "-" } })
    }
}
