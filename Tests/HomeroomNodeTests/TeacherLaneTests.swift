import Foundation
import HomeroomCore
import Synchronization
import Testing
@testable import HomeroomNode

/// The teacher lane's two queues: a worker takes a waiting control request before the
/// ordinary ones that came earlier (`SPJobQueue`), and a room's write gate goes to a
/// waiting control write before the ordinary writes queued ahead of it (`RoomWriteGates`).
@Suite struct TeacherLaneTests {
    static func job(_ tag: UInt8) -> SPJob { SPJob(connection: UInt64(tag), backtrace: [], body: [tag]) }

    @Test func aWorkerTakesTheUrgentRequestFirstAndOtherwiseInOrder() {
        let queue = SPJobQueue()
        for tag: UInt8 in [1, 2, 3] { queue.push(Self.job(tag)) }
        queue.push(Self.job(9), urgent: true)
        queue.push(Self.job(4))
        queue.push(Self.job(8), urgent: true)
        let taken = (0..<6).compactMap { _ in queue.take()?.body.first }
        #expect(taken == [9, 8, 1, 2, 3, 4])
        #expect(queue.overtaken == 2 && queue.count == 0 && queue.bytes == 0)
        queue.close()
        #expect(queue.take() == nil)
    }

    @Test func aControlWriteWaitingAtItsRoomsGateGoesBeforeTheChatQueuedAheadOfIt() throws {
        let gates = RoomWriteGates()
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        func waitForHolders(_ count: Int) -> Bool {
            for _ in 0..<2_000 where gates.holders(of: "hall") < count { usleep(1_000) }
            return gates.holders(of: "hall") == count
        }
        // The first chat write holds the gate until released.
        done.enter()
        Thread { gates.withGate("hall") { release.wait(); order.withLock { $0.append("chat-0") } }; done.leave() }.start()
        #expect(waitForHolders(1))
        // Three more chat writes queue, one after another, then the teacher's mute.
        for index in 1...3 {
            done.enter()
            Thread { gates.withGate("hall") { order.withLock { $0.append("chat-\(index)") } }; done.leave() }.start()
            #expect(waitForHolders(1 + index))
        }
        done.enter()
        Thread { gates.withGate("hall", urgent: true) { order.withLock { $0.append("mute") } }; done.leave() }.start()
        #expect(waitForHolders(5))
        release.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(order.withLock { $0 } == ["chat-0", "mute", "chat-1", "chat-2", "chat-3"])
        #expect(gates.overtakes.load(ordering: .relaxed) == 1)
        #expect(gates.count == 0)
    }
}
