@preconcurrency import Glibc
import Testing
@testable import HomeroomNode
import HomeroomTestSupport

/// A TCP listener that accepts and never speaks: a dialer's connection to it stays in
/// the SP header exchange (its TCP is up).
private final class SilentListener {
    let fd: Int32
    let port: UInt16
    private(set) var accepted: [Int32] = []

    init?() {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard let bound = bindLoopback(fd), listen(fd, 16) == 0 else { Glibc.close(fd); return nil }
        port = bound
    }

    /// Accepts whatever is waiting; returns how many connections came so far.
    func acceptWaiting() -> Int {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 { break }
            accepted.append(client)
        }
        return accepted.count
    }

    /// True while the first accepted connection is still open at the dialer's end.
    var firstStillOpen: Bool {
        guard let first = accepted.first else { return false }
        var probe = pollfd(fd: first, events: Int16(POLLIN), revents: 0)
        guard poll(&probe, 1, 0) > 0 else { return true }
        var byte: UInt8 = 0
        return recv(first, &byte, 1, Int32(MSG_PEEK) | Int32(MSG_DONTWAIT)) != 0
    }

    func close() {
        for client in accepted { Glibc.close(client) }
        Glibc.close(fd)
    }
}

/// Link renewal (ClusterNode.renewLinksOfSilentPeers) replaces connections stuck behind
/// TCP's back-off, never one whose TCP is up, and, for a peer just heard again, only a
/// stalled attempt, not the open connection.
@Suite("Redial")
struct RedialTests {
    @Test("a redial leaves a connection whose TCP is up and is exchanging SP headers")
    func aRedialLeavesAHandshakingConnection() throws {
        let listener = try #require(SilentListener())
        defer { listener.close() }
        let subscriber = try SPSubscriber { _ in }
        defer { subscriber.close() }
        let dialer = try subscriber.dial("tcp://127.0.0.1:\(listener.port)")
        #expect(eventually(3) { listener.acceptWaiting() == 1 }, "the dialer never connected")
        subscriber.redial(dialer, keepingAttemptsYoungerThan: 0)
        usleep(300_000)
        #expect(listener.acceptWaiting() == 1, "the redial cut short a connection whose TCP was up and made another")
        #expect(listener.firstStillOpen, "the redial closed the connection exchanging headers")
    }

    @Test("a stalled-attempt retry leaves an open connection; a reconnect replaces it")
    func retryingAStalledAttemptLeavesAnOpenConnection() throws {
        let replier = try SPReplier()
        defer { replier.close() }
        let bound = try replier.listen("tcp://127.0.0.1:0")
        try replier.serve { $0 }
        let requester = try SPRequester()
        defer { requester.close() }
        try requester.dial(bound)
        #expect((try? requester.request([1, 2, 3], timeout: .seconds(3))) == [1, 2, 3])
        let accepted = replier.stats.accepted.load(ordering: .relaxed)
        requester.retryStalledAttempt()
        usleep(300_000)
        #expect(replier.stats.accepted.load(ordering: .relaxed) == accepted, "the retry replaced an open connection")
        #expect((try? requester.request([4], timeout: .seconds(3))) == [4])
        requester.reconnect()
        #expect(eventually(3) { replier.stats.accepted.load(ordering: .relaxed) == accepted + 1 },
                "a reconnect did not replace the open connection")
        #expect((try? requester.request([5], timeout: .seconds(3))) == [5])
    }
}
