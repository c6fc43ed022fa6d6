import Foundation
import HomeroomCore
import HomeroomTestSupport
import Synchronization
import Testing
@testable import HomeroomNode

/// Issue 43: Signaling's link states with reasons, against real `homeroom node` processes.
/// Every node dies: the client says reconnecting (the link lost), then every node failed
/// after each round, then suspended once the (shortened) backoff is spent, still trying;
/// a node comes back on the same addresses: connected again, reattached.
@Suite(.serialized) struct LinkScheduleProcessTests {
    /// Polls the client's status every few milliseconds and keeps each new (state, reason).
    final class Transitions: Sendable {
        let seen = Mutex<[ClientLinkStatus]>([])
        let stopping = Atomic<Bool>(false)

        func watch(_ client: RoomClient) -> Thread {
            let thread = Thread { [self] in
                // Bounded: at most a minute of polling, whatever the test does.
                for _ in 0..<12_000 where !stopping.load(ordering: .acquiring) {
                    let status = client.linkStatus
                    seen.withLock { seen in
                        if seen.last.map({ ($0.state, $0.reason) != (status.state, status.reason) }) ?? true { seen.append(status) }
                    }
                    usleep(5_000)
                }
            }
            thread.start()
            return thread
        }

        var pairs: [String] { seen.withLock { $0.map { "\($0.state.rawValue)/\($0.reason.rawValue)" } } }
        var last: ClientLinkStatus? { seen.withLock { $0.last } }
    }

    @Test func everyNodeLostReconnectsThenSuspendsThenComesBackWithReasons() throws {
        let listen = "tcp://127.0.0.1:\(try freeLoopbackPort())", publish = "tcp://127.0.0.1:\(try freeLoopbackPort())"
        var a = try NodeChild(name: "ls-a", listen: listen, publish: publish)
        let b = try NodeChild(name: "ls-b", seeds: [a.listen])
        defer { a.stop(); b.stop() }
        var options = RoomClient.Options()
        options.requestTimeoutMillis = 300
        options.syncIntervalMillis = 50
        // Signaling's shape, shortened: two backoff waits, then suspended with a round every 400 ms.
        options.reconnect = ReconnectSchedule.Options(backoffMillis: [200, 300], suspendedIntervalMillis: 400, jitter: 0.1)
        let seed = UInt64.random(in: 0...UInt64.max)
        options.reconnectJitterSeed = seed
        let (logger, _) = Logger.capturing(label: "ann", level: .error)
        let client = RoomClient(room: "schedule", user: "ann", role: .student, name: "Ann",
                                endpoints: [NodeEndpoint(a.listen), NodeEndpoint(b.listen)], options: options, logger: logger)
        defer { client.close() }
        try client.connect()
        let transitions = Transitions()
        let watcher = transitions.watch(client)
        defer {
            transitions.stopping.store(true, ordering: .releasing)
            while watcher.isExecuting { usleep(5_000) }
        }
        #expect(eventually(10) { transitions.pairs == ["connected/joined"] }, "\(transitions.pairs); seed \(seed)")

        a.crash()
        b.crash()
        // Suspended: the backoff (two failed rounds after the first) is spent, and it keeps trying.
        #expect(eventually(20) { transitions.last?.state == .suspended }, "\(transitions.pairs); seed \(seed)")
        #expect(transitions.pairs == ["connected/joined", "reconnecting/link-lost", "reconnecting/every-node-failed",
                                      "suspended/backoff-spent"], "replay with jitter seed \(seed)")
        let suspended = client.linkStatus
        #expect(suspended.node == a.listen || suspended.node == b.listen, "the lost node stays named: \(suspended)")
        #expect(suspended.cause != nil)
        let now = WallClock.nowMillis()
        let summary = suspended.summary(nowMillis: now)
        #expect(summary.hasPrefix("suspended: lost tcp://") && (summary.contains("every node failed for") || summary.contains("; trying tcp://")),
                "\(summary)")
        // Still trying while suspended: a round every 400 ms (a little more), each failing and
        // scheduling the next; the state and its reason stay.
        let firstNext = suspended.nextRoundMillis
        #expect(eventually(5) { client.linkStatus.nextRoundMillis.map { $0 != firstNext } ?? false }, "no round after suspension: \(client.linkStatus)")
        #expect(client.connectionState == .suspended && client.linkStatus.reason == .backoffSpent && client.finalRefusal == nil)

        // A node comes back on the same addresses: connected again, for a reason.
        a = try NodeChild(name: "ls-a", listen: listen, publish: publish)
        #expect(eventually(10) { client.connectionState == .connected }, "\(transitions.pairs); \(client.linkStatus)")
        #expect(eventually(2) { transitions.pairs.last == "connected/reattached" }, "\(transitions.pairs)")
        let back = client.linkStatus
        #expect(back.node == listen && back.nextRoundMillis == nil)
        #expect(back.recoveredFrom?.node == suspended.node && back.recoveredFrom?.cause == suspended.cause, "\(back)")
        // Attached, the client works again: a write is acknowledged by the node that came back.
        try client.write(.setHand(user: "ann", raised: true))

        client.close()
        #expect(eventually(2) { transitions.pairs.last == "aborted/closed-by-client" }, "\(transitions.pairs)")
    }
}
