import Foundation
import Synchronization
import Testing
@testable import HomeroomNode

/// A handler that answers later (a client's where-now while the peers answer) frees its
/// worker at once: with one worker, other requests are answered meanwhile.
@Suite struct DeferredReplyTests {
    final class Held: Sendable {
        let send = Mutex<(@Sendable ([UInt8]) -> Void)?>(nil)
    }

    @Test("a deferred reply holds no worker, is sent once, and a late one after close is dropped")
    func deferredReplyFreesTheWorker() async throws {
        let replier = try SPReplier()
        let held = Held()
        let bound = try replier.listen("tcp://127.0.0.1:0")
        try replier.serveDeferring(workers: 1) { body, _ in
            guard body == Array("later".utf8) else { return .now(body.reversed()) }
            return .later { send in held.send.withLock { $0 = send } }
        }
        let waiting = try SPRequester()
        let other = try SPRequester()
        defer { waiting.close(); other.close() }
        try waiting.dial(bound)
        try other.dial(bound)
        let deferred = Task { try await waiting.request(Array("later".utf8), timeout: .seconds(20)) }
        // Bounded wait for the deferred request to reach the handler.
        for _ in 0..<500 where held.send.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(10)) }
        let send = try #require(held.send.withLock { $0 }, "the deferred request never reached the handler")
        // The only worker is free: another request is answered while the first waits.
        let quick = try await other.request(Array("abc".utf8), timeout: .seconds(10))
        #expect(quick == Array("cba".utf8))
        send(Array("first".utf8))
        send(Array("second".utf8))   // ignored: a reply is sent once
        #expect(try await deferred.value == Array("first".utf8))
        // The same connection goes on normally after it.
        #expect(try await waiting.request(Array("xyz".utf8), timeout: .seconds(10)) == Array("zyx".utf8))
        replier.close()
        // Closed: a reply given now is dropped (no write to a descriptor that may be reused).
        held.send.withLock { $0 = nil }
        send(Array("late".utf8))
    }
}
