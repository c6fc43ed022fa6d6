@preconcurrency import Glibc
import CLinuxEvents
import Synchronization

/// `inproc://name` endpoints: a process-wide table of listeners; a dial makes a socket
/// pair and hands the far end to the listener's loop, so inproc connections go through
/// the same code (headers, framing, limits) as TCP ones.
enum SPInproc {
    private static let listeners = Mutex<[String: @Sendable (Int32) -> Void]>([:])

    static func register(_ name: String, url: String, adopt: @escaping @Sendable (Int32) -> Void) throws(TransportError) {
        let added = listeners.withLock { table -> Bool in
            if table[name] != nil { return false }
            table[name] = adopt
            return true
        }
        if !added { throw TransportError(.addressInUse, "listen on \(url)") }
    }

    static func unregister(_ name: String) { _ = listeners.withLock { $0.removeValue(forKey: name) } }

    /// This end of a new connection to `name`, or nil when nothing listens there.
    static func connect(_ name: String) -> Int32? {
        guard let adopt = listeners.withLock({ $0[name] }) else { return nil }
        var pair: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, type, 0, &pair) == 0 else { return nil }
        adopt(pair[1])
        return pair[0]
    }
}
