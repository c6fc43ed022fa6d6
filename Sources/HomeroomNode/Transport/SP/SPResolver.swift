import Dispatch

/// Host name lookups for dials, off the event loops: `getaddrinfo` blocks for as long as
/// the system's resolver takes (seconds, when a DNS server is slow or gone), and a loop
/// blocked that long stops serving every other connection. A few lookups run at once;
/// more wait their turn, so a burst of dials to names cannot start a thread each.
enum SPResolver {
    /// Lookups running at once, in the whole process.
    static let concurrentLookups = 4
    private static let slots = DispatchSemaphore(value: concurrentLookups)
    private static let queue = DispatchQueue(label: "hr-resolve", attributes: .concurrent)

    /// Looks `address` up on a background thread and calls `done` there.
    static func lookUp(_ address: SPAddress, done: @escaping @Sendable (Result<[SPSocketAddress], TransportError>) -> Void) {
        queue.async {
            slots.wait()
            defer { slots.signal() }
            do throws(TransportError) {
                done(.success(try address.resolve(passive: false)))
            } catch {
                done(.failure(error))
            }
        }
    }
}
