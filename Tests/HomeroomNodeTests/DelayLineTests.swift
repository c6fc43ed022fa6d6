import HomeroomSupport
import Synchronization
import Testing
@testable import HomeroomNode

/// The delay fault's queue releases in due order, and runs a thread only while it holds
/// messages: a node without the fault has no thread waking every millisecond.
@Suite struct DelayLineTests {
    @Test func itReleasesInDueOrderAndItsThreadGoesWhenIdle() async throws {
        let line = DelayLine()
        let released = Mutex<[[UInt8]]>([])
        line.start { message in released.withLock { $0.append(message) } }
        defer { line.stop() }
        #expect(!line.isReleasing, "no message held, no thread")
        line.hold([1], forMillis: 60)
        line.hold([2], forMillis: 10)
        #expect(line.isReleasing)
        #expect(await settles(within: 5) { released.withLock { $0 } == [[2], [1]] })
        // Gone about a second after the queue emptied.
        #expect(await settles(within: 10) { !line.isReleasing }, "the release thread stayed after the queue emptied")
        line.hold([3], forMillis: 0)
        #expect(await settles(within: 5) { released.withLock { $0 } == [[2], [1], [3]] }, "a message held later is released too")
    }
}
