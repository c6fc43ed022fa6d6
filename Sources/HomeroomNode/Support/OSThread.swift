@preconcurrency import Glibc
import CLinuxEvents
import Synchronization

/// A dedicated OS thread for blocking work (an event loop, a request worker, a tick),
/// kept off the Swift concurrency pool.
/// `join()` waits for it to end; it may be called from several threads and only the
/// first really joins (the others return at once). Joining from the thread itself is
/// a no-op, so a handler may close its own owner.
public final class OSThread: Sendable {
    private let handle: Mutex<pthread_t?>
    private let doneFlag: DoneFlag

    private final class Start {
        let name: String
        let body: @Sendable () -> Void
        let finished: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void, finished: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
            self.finished = finished
        }
    }

    /// Starts `body` on a new thread named `name` (Linux keeps the first 15 bytes).
    public init(name: String, _ body: @escaping @Sendable () -> Void) throws(ThreadStartError) {
        handle = Mutex(nil)
        let doneRef = DoneFlag()
        let start = Start(name: name, body: body, finished: { doneRef.set() })
        let arg = Unmanaged.passRetained(start).toOpaque()
        var tid = pthread_t()
        let rv = pthread_create(&tid, nil, { raw in
            let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
            _ = clinux_set_current_thread_name(OSThread.kernelName(start.name))
            start.body()
            start.finished()
            return nil
        }, arg)
        if rv != 0 {
            Unmanaged<Start>.fromOpaque(arg).release()
            throw ThreadStartError(name: name, errno: rv)
        }
        handle.withLock { $0 = tid }
        doneFlag = doneRef
    }

    /// Linux keeps 15 bytes of a thread's name: cut on a character boundary, never inside one.
    static func kernelName(_ name: String) -> String {
        var kept = ""
        for character in name {
            guard kept.utf8.count + character.utf8.count <= 15 else { break }
            kept.append(character)
        }
        return kept
    }

    private final class DoneFlag: Sendable {
        let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .releasing) }
    }

    /// True once the body has returned.
    public var isFinished: Bool { doneFlag.value.load(ordering: .acquiring) }

    /// True when called on this thread.
    public var isCurrent: Bool {
        handle.withLock { tid in tid.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Waits for the thread to end. Safe to call more than once and from the thread itself.
    public func join() {
        let tid: pthread_t? = handle.withLock { tid in
            guard let t = tid, pthread_equal(t, pthread_self()) == 0 else { return nil }
            tid = nil
            return t
        }
        if let tid { pthread_join(tid, nil) }
    }

    deinit {
        // A thread never joined is detached so its resources are freed when it ends.
        if let tid = handle.withLock({ $0 }) { pthread_detach(tid) }
    }
}

/// A thread that could not start: the process is at its thread limit, or out of memory.
public struct ThreadStartError: Error, Sendable, CustomStringConvertible {
    public let name: String
    public let errno: Int32
    public var reason: String { String(cString: strerror(errno)) }
    public var description: String { "cannot start thread \(name): \(reason)" }
}
