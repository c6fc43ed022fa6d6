import Foundation
import HomeroomCore
import Synchronization
import Testing
@testable import HomeroomNode

/// The teacher lane's two queues: a worker takes a waiting control request before the
/// ordinary ones that came earlier (`SPJobQueue`), and a room's write gate goes to a
/// waiting control write before the ordinary writes queued ahead of it (`RoomWriteGates`).
@Suite struct TeacherLaneTests {
    static func job(_ tag: UInt8, urgent: Bool = false) -> SPJob { SPJob(connection: UInt64(tag), backtrace: [], body: [tag], urgent: urgent) }

    @Test func aWorkerTakesTheUrgentRequestFirstAndOtherwiseInOrder() {
        let queue = SPJobQueue()
        for tag: UInt8 in [1, 2, 3] { queue.push(Self.job(tag)) }
        queue.push(Self.job(9, urgent: true))
        queue.push(Self.job(4))
        queue.push(Self.job(8, urgent: true))
        let taken = (0..<6).compactMap { _ in queue.take()?.body.first }
        #expect(taken == [9, 8, 1, 2, 3, 4])
        #expect(queue.overtaken == 2 && queue.count == 0 && queue.bytes == 0)
        queue.close()
        #expect(queue.take() == nil)
    }

    /// A flood of urgent requests (forged ones too: the lane is chosen before the token is
    /// checked) slows ordinary requests down but never stops them: after a run of urgent
    /// ones, an ordinary one is taken.
    @Test func aFloodOfUrgentRequestsStillLetsOrdinaryOnesThrough() {
        let queue = SPJobQueue()
        queue.push(Self.job(1))
        for _ in 0..<20 { queue.push(Self.job(200, urgent: true)) }
        let taken = (0..<10).compactMap { _ in queue.take()?.body.first }
        #expect(taken == Array(repeating: 200, count: SPJobQueue.maxUrgentRun) + [1, 200])
        queue.close()
    }

    @Test func aControlWriteWaitingAtItsRoomsGateGoesBeforeTheChatQueuedAheadOfIt() throws {
        let gates = RoomWriteGates()
        let order = Mutex<[String]>([])
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        // Waits until `count` callers are queued behind the holder (each in its place).
        func waitForQueued(_ count: Int) -> Bool {
            for _ in 0..<20_000 where gates.queued(at: "hall") < count { usleep(1_000) }
            return gates.queued(at: "hall") == count
        }
        // The first chat write holds the gate until released.
        done.enter()
        let holding = DispatchSemaphore(value: 0)
        Thread { gates.withGate("hall") { holding.signal(); release.wait(); order.withLock { $0.append("chat-0") } }; done.leave() }.start()
        #expect(holding.wait(timeout: .now() + 30) == .success)
        // Three more chat writes queue, one after another, then the teacher's mute.
        for index in 1...3 {
            done.enter()
            Thread { gates.withGate("hall") { order.withLock { $0.append("chat-\(index)") } }; done.leave() }.start()
            #expect(waitForQueued(index))
        }
        done.enter()
        Thread { gates.withGate("hall", urgent: true) { order.withLock { $0.append("mute") } }; done.leave() }.start()
        #expect(waitForQueued(4))
        release.signal()
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(order.withLock { $0 } == ["chat-0", "mute", "chat-1", "chat-2", "chat-3"])
        #expect(gates.overtakes.load(ordering: .relaxed) == 1)
        #expect(gates.count == 0)
    }
}
