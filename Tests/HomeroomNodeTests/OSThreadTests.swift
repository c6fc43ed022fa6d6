import Synchronization
import Testing
@testable import HomeroomNode

/// Homeroom's own threads: named within Linux's 15 bytes without cutting a character,
/// and a started thread runs its body.
@Suite struct OSThreadTests {
    @Test func aThreadNameIsCutOnACharacterBoundary() {
        #expect(OSThread.kernelName("hr-rep-3") == "hr-rep-3")
        #expect(OSThread.kernelName("hr-a-very-long-thread-name") == "hr-a-very-long-")
        // 14 ASCII bytes then a 2-byte character: it does not fit whole, so it is left out.
        let cut = OSThread.kernelName("abcdefghijklmné-more")
        #expect(cut == "abcdefghijklmn" && cut.utf8.count <= 15)
        #expect(OSThread.kernelName("ééééééééé").utf8.count == 14)
    }

    @Test func aStartedThreadRunsAndJoins() throws {
        let ran = Atomic<Bool>(false)
        let thread = try OSThread(name: "hr-test-é-thread") { ran.store(true, ordering: .releasing) }
        thread.join()
        #expect(ran.load(ordering: .acquiring) && thread.isFinished)
    }
}
