@preconcurrency import Glibc
import CLinuxEvents
import Synchronization
import HomeroomSupport

/// What a socket kind does with its connections; called on the loop thread only.
protocol SPRole: AnyObject {
    func opened(_ connection: SPConnection, loop: SPLoop)
    func received(_ message: [UInt8], on connection: SPConnection, loop: SPLoop)
    func closed(_ connection: SPConnection, loop: SPLoop)
    /// Runs on every loop turn; returns the next time (monotonic ms) it wants to run, if any.
    func tick(nowMillis: UInt64, loop: SPLoop) -> UInt64?
    /// Whether this socket's TCP listeners also take SP over WebSocket (the first bytes tell).
    var servesWebSocket: Bool { get }
    /// Why a WebSocket connection may not have `resource` (its request path), or nil.
    func refusal(resource: String) -> String?
}

extension SPRole {
    func tick(nowMillis: UInt64, loop: SPLoop) -> UInt64? { nil }
    var servesWebSocket: Bool { false }
    func refusal(resource: String) -> String? { nil }
}

/// Limits every connection of a loop obeys.
struct SPLimits: Sendable {
    /// Largest message accepted; a peer that announces a larger one is disconnected.
    var maxMessageBytes = 16 << 20
    /// Time a connection has to connect and exchange SP headers.
    var handshakeMillis: UInt64 = 5_000
    /// Accepted connections per loop; more are closed at once.
    var maxConnections = 4_096
    /// Messages and bytes queued for one connection; past either, a PUB drops the oldest
    /// and other kinds drop the connection.
    var sendQueueMessages = 8_192
    var sendQueueBytes = 64 << 20
    /// Bytes received but not yet whole messages, across every connection of the loop;
    /// past this, connections stop being read (all but the one nearest to completing a
    /// message) until messages complete. At least twice `maxMessageBytes`.
    var maxBufferedBytes = 256 << 20
    /// Dial retry back-off.
    var reconnectMinMillis: UInt64 = 50
    var reconnectMaxMillis: UInt64 = 500
}

/// Counters of one loop, readable from any thread.
final class SPLoopStats: Sendable {
    let accepted = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let badHandshakes = Atomic<Int>(0)
    /// The SP protocol the last refused peer spoke (0xffff: not SP at all; 0: none
    /// refused yet), so a request that times out can say it dialed the wrong socket.
    let lastWrongPeer = Atomic<UInt16>(0)
    /// `lastWrongPeer` for a peer that closed a dialed connection before its SP header.
    static let closedBeforeHeader: UInt16 = 0xfffe
    let oversized = Atomic<Int>(0)
    let open = Atomic<Int>(0)
    let dialFailures = Atomic<Int>(0)
    /// Descriptors the kernel refused to watch (epoll_ctl failed): their connections were dropped.
    let watchFailures = Atomic<Int>(0)
    /// TLS sessions that failed (handshake or later), and why the last one did, so a
    /// request that times out can say the certificate did not verify.
    let tlsFailures = Atomic<Int>(0)
    let lastTLSFailure = Mutex<String?>(nil)
    /// Why the last dial failed before any SP byte (the host does not resolve, nothing
    /// listens, no route), so a request that times out can say so; cleared by a handshake.
    let lastDialFailure = Mutex<String?>(nil)
    /// Times a connection was not read because the loop held too many unparsed bytes.
    let starved = Atomic<Int>(0)
    /// When the loop last turned (monotonic ms): it turns at least once a second.
    let lastTurnMillis = Atomic<UInt64>(WallClock.monotonicMillis())

    /// How long the loop has been silent.
    var silenceMillis: UInt64 { WallClock.monotonicMillis() &- lastTurnMillis.load(ordering: .relaxed) }
}

/// One event-loop thread (epoll) that owns a set of nonblocking stream sockets:
/// listeners, accepted connections and dialed ones, with SP headers and framing.
/// Every descriptor it opens it closes itself, on this thread, so nothing can leak
/// or hang behind a library's reaper (see docs/NNG.md).
///
/// `@unchecked Sendable`: the mutable state below `// Loop-confined` is touched only by
/// the loop thread; other threads talk to it through `post` (a locked mailbox and an
/// eventfd wake-up).
final class SPLoop: @unchecked Sendable {
    let protocolKind: SPProtocol
    let limits: SPLimits
    let stats = SPLoopStats()
    private let role: SPRole
    private let epoll: Int32
    private let wakeFD: Int32
    /// Work posted from other threads; `shut` once the loop has closed its descriptors, so
    /// a late post (a reply given after the replier closed) is dropped, never written to a
    /// descriptor number the process may have reused.
    private struct Mailbox {
        var work: [@Sendable (SPLoop) -> Void] = []
        var shut = false
    }
    private let mailbox = Mutex(Mailbox())
    private let stopping = Atomic<Bool>(false)
    private let ids = Atomic<UInt64>(1)
    private var thread: OSThread?

    // Loop-confined.
    private(set) var connections: [UInt64: SPConnection] = [:]
    private var listeners: [UInt64: Listener] = [:]
    private var dialers: [UInt64: Dialer] = [:]
    private var readBuffer = [UInt8](repeating: 0, count: 64 << 10)
    private var plainBuffer = [UInt8](repeating: 0, count: 64 << 10)
    private var inprocNames: [String] = []
    /// Unix socket files this loop listens on, removed when it stops (as nng does).
    private var socketFiles: [String] = []
    /// Connections not open yet (connecting or exchanging headers): the only ones with a
    /// deadline, kept apart so a turn does not walk every connection.
    private var unopened: Set<UInt64> = []
    /// Unparsed bytes held by all connections, and the connections not read because of it.
    private var buffered = 0
    private var starved: Set<UInt64> = []
    private var bufferBudget: Int { max(limits.maxBufferedBytes, 2 * limits.maxMessageBytes) }

    private struct Listener {
        let fd: Int32
        let framing: SPFraming
        let tls: TLSContext?
        var pausedUntil: UInt64?
    }

    private struct Dialer {
        let address: SPAddress
        let tls: TLSContext?
        var connection: UInt64?
        var nextAttemptMillis: UInt64
        var backoffMillis: UInt64
        /// A host name being looked up off the loop thread (`SPResolver`).
        var resolving = false
        /// What the lookup found, for the attempt it was made for.
        var resolved: [SPSocketAddress]? = nil
        /// The lookup waiting or running: cancelled when the dialer goes.
        var lookup: SPResolver.Ticket? = nil
    }

    private static let wakeToken: UInt64 = 0
    private static let listenerBit: UInt64 = 1 << 63

    init(name: String, protocolKind: SPProtocol, limits: SPLimits, role: SPRole) throws(TransportError) {
        self.protocolKind = protocolKind
        self.limits = limits
        self.role = role
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0 else { throw .system("create an event loop", errno: Glibc.errno) }
        wakeFD = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard wakeFD >= 0 else {
            let e = Glibc.errno
            Glibc.close(epoll)
            throw .system("create an event loop wake-up", errno: e)
        }
        var event = epoll_event()
        clinux_event_set(&event, EPOLLIN.rawValue, Self.wakeToken)
        guard epoll_ctl(epoll, EPOLL_CTL_ADD, wakeFD, &event) == 0 else {
            let e = Glibc.errno
            Glibc.close(wakeFD)
            Glibc.close(epoll)
            throw .system("watch the event loop wake-up", errno: e)
        }
        do {
            thread = try OSThread(name: name) { [self] in run() }
        } catch {
            Glibc.close(wakeFD)
            Glibc.close(epoll)
            throw TransportError(.other, "start thread \(name)", reason: error.reason)
        }
    }

    var isStopping: Bool { stopping.load(ordering: .acquiring) }

    /// Stops the loop and closes every descriptor it owns. Idempotent; from the loop
    /// thread itself it only asks (the loop ends after the current turn).
    func close() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
            thread?.join()
            return
        }
        wake()
        thread?.join()
    }

    /// Runs `body` on the loop thread soon.
    func post(_ body: @escaping @Sendable (SPLoop) -> Void) {
        mailbox.withLock { box in
            guard !box.shut else { return }
            box.work.append(body)
            // Under the lock, so `shutdown` cannot close the descriptor in between.
            if box.work.count == 1 { wake() }
        }
    }

    func wake() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wakeFD, $0.baseAddress, 8) }
    }

    func nextID() -> UInt64 { ids.add(1, ordering: .relaxed).newValue }

    // MARK: Endpoints (any thread)

    /// Binds and listens now (errors surface here), then serves from the loop.
    func listen(_ url: String) throws(TransportError) -> String {
        let address = try SPAddress(url)
        if case .inproc(let name) = address.kind {
            let id = nextID() | Self.listenerBit
            try SPInproc.register(name, url: url) { [weak self] fd in
                guard let self else { Glibc.close(fd); return }
                self.post { loop in loop.adopt(fd, listener: id) }
            }
            post { loop in loop.inprocNames.append(name) }
            return url
        }
        let tls = address.secure ? try TransportTLS.server(for: url) : nil
        var lastError = TransportError(.addressInvalid, "listen on \(url)")
        for candidate in try address.resolve(passive: true) {
            let fd = socket(candidate.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { lastError = .system("listen on \(url)", errno: Glibc.errno); continue }
            if candidate.family != AF_UNIX {
                var on: Int32 = 1
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            }
            if case .ipc(let path) = address.kind { Self.removeStaleSocket(path, candidate) }
            let bound = candidate.withPointer { Glibc.bind(fd, $0, $1) }
            if bound != 0 || Glibc.listen(fd, 512) != 0 {
                lastError = .system("listen on \(url)", errno: Glibc.errno)
                Glibc.close(fd)
                continue
            }
            let id = nextID() | Self.listenerBit
            let framing = address.framing
            if case .ipc(let path) = address.kind { post { loop in loop.socketFiles.append(path) } }
            post { loop in loop.addListener(id: id, fd: fd, framing: framing, tls: tls) }
            return address.withPort(Self.boundPort(fd) ?? 0)
        }
        throw lastError
    }

    /// Starts dialing `url` in the background (retrying with back-off) and returns the
    /// dialer's id. Address syntax errors surface here; unreachable peers never do.
    func dial(_ url: String) throws(TransportError) -> UInt64 {
        let address = try SPAddress(url)
        if case .tcp(let host, _) = address.kind, host.isEmpty || host == "*" {
            throw TransportError(.addressInvalid, "dial \(url)", reason: "a dial needs a host")
        }
        let tls = address.secure ? try TransportTLS.client(for: url) : nil
        let id = nextID()
        post { loop in
            loop.dialers[id] = Dialer(address: address, tls: tls, connection: nil, nextAttemptMillis: 0, backoffMillis: loop.limits.reconnectMinMillis)
        }
        return id
    }

    /// Stops dialing and closes that dialer's connection.
    func removeDialer(_ id: UInt64) {
        post { loop in
            guard let dialer = loop.dialers.removeValue(forKey: id) else { return }
            dialer.lookup?.cancel()
            if let c = dialer.connection.flatMap({ loop.connections[$0] }) { loop.drop(c) }
        }
    }

    /// Replaces a dialer's connection with a fresh attempt now (after a partition, TCP's
    /// own retry back-off can be many seconds). An attempt whose TCP connection is up
    /// (exchanging headers) is left to its handshake deadline, and one still connecting
    /// until it is `keepingAttemptsYoungerThan` old: on a long round trip a redial every
    /// period would otherwise never connect.
    /// With `keepingOpen`, an open connection stays too: only a stalled attempt goes.
    func redial(_ id: UInt64, keepingAttemptsYoungerThan youngMillis: UInt64 = 0, keepingOpen: Bool = false) {
        post { loop in
            guard var dialer = loop.dialers[id] else { return }
            if let c = dialer.connection.flatMap({ loop.connections[$0] }) {
                let startedMillis = c.deadlineMillis &- loop.limits.handshakeMillis
                switch c.phase {
                case .handshaking: return
                case .open where keepingOpen: return
                case .connecting where WallClock.monotonicMillis() &- startedMillis < youngMillis: return
                case .connecting, .open: loop.drop(c)
                }
            }
            dialer.connection = nil
            dialer.nextAttemptMillis = 0
            dialer.backoffMillis = loop.limits.reconnectMinMillis
            loop.dialers[id] = dialer
        }
    }

    /// A socket file left by a process that died: nothing accepts on it, so it goes
    /// (a live listener refuses nothing and keeps its file).
    private static func removeStaleSocket(_ path: String, _ address: SPSocketAddress) {
        guard access(path, F_OK) == 0 else { return }
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return }
        defer { Glibc.close(probe) }
        let connected = address.withPointer { Glibc.connect(probe, $0, $1) }
        if connected != 0 && Glibc.errno == ECONNREFUSED { unlink(path) }
    }

    private static func boundPort(_ fd: Int32) -> UInt16? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        guard rv == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET: return withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        case AF_INET6: return withUnsafeBytes(of: &storage) { UInt16(bigEndian: $0.load(fromByteOffset: 2, as: UInt16.self)) }
        default: return nil
        }
    }

    // MARK: Connections (loop thread)

    /// Queues one message (the prefix is added here) and writes what the socket takes now.
    /// Returns false when the queue was full: a PUB (`dropOldest`) then drops its oldest
    /// unsent message; any other kind drops the connection.
    @discardableResult
    func send(_ body: [UInt8], on c: SPConnection, dropOldest: Bool = false) -> Bool {
        guard !c.closed, c.phase == .open else { return false }
        if c.framing == .websocket {
            return enqueue(SPWebSocket.message(body, masked: c.isDialed), on: c, dropOldest: dropOldest)
        }
        return enqueue(SPOutFrame(prefix: c.framing.prefix(length: body.count), body: body), on: c, dropOldest: dropOldest)
    }

    /// Queues a frame built for this connection's framing (a WebSocket message built once
    /// for many connections).
    @discardableResult
    func send(frame: SPOutFrame, on c: SPConnection, dropOldest: Bool = false) -> Bool {
        guard !c.closed, c.phase == .open else { return false }
        return enqueue(frame, on: c, dropOldest: dropOldest)
    }

    private func enqueue(_ frame: SPOutFrame, on c: SPConnection, dropOldest: Bool) -> Bool {
        guard !c.closed else { return false }
        // The byte bound applies to what is already queued: one message larger than it
        // (a whole-room reply) still goes out on an idle connection.
        func full() -> Bool {
            c.outbound.count >= limits.sendQueueMessages || (c.outboundBytes > 0 && c.outboundBytes + frame.count > limits.sendQueueBytes)
        }
        var dropped = false
        if full() {
            guard dropOldest else {
                drop(c)
                return false
            }
            // The head may be partly written: never drop it.
            while full() && c.outbound.count > 1 {
                let old = c.outbound.remove(at: 1)
                c.outboundBytes -= old.count
                dropped = true
            }
            if full() { return false }
        }
        // Nothing queued on a plain connection: write now, and queue only what the socket
        // did not take (a fan-out to thousands of idle subscribers queues nothing).
        if c.outbound.isEmpty && c.tls == nil && c.phase == .open {
            var written = 0
            while written < frame.count {
                let n = Self.write(frame, from: written, to: c.fd)
                if n < 0 {
                    let e = Glibc.errno
                    if e == EINTR { continue }
                    if e == EAGAIN || e == EWOULDBLOCK { break }
                    drop(c)
                    return false
                }
                written += n
            }
            if written == frame.count { return !dropped }
            c.outbound.append(frame)
            c.outboundBytes += frame.count
            c.outboundOffset = written
            updateInterest(c)
            return !dropped
        }
        c.outbound.append(frame)
        c.outboundBytes += frame.count
        flush(c)
        return !dropped
    }

    func pauseReading(_ c: SPConnection) {
        guard !c.readPaused else { return }
        c.readPaused = true
        updateInterest(c)
    }

    func resumeReading(_ c: SPConnection) {
        guard c.readPaused, !c.closed else { return }
        c.readPaused = false
        updateInterest(c)
        // Whole messages may already wait in the buffer.
        parse(c)
    }

    /// Closes a connection now; the role hears `closed` if it was open.
    func drop(_ c: SPConnection) {
        guard !c.closed else { return }
        c.closed = true
        _ = epoll_ctl(epoll, EPOLL_CTL_DEL, c.fd, nil)
        Glibc.close(c.fd)
        connections.removeValue(forKey: c.id)
        unopened.remove(c.id)
        buffered -= c.unparsed
        starved.remove(c.id)
        if !starved.isEmpty { feedStarvedIfDue() }
        let wasOpen = c.phase == .open
        if wasOpen { stats.open.subtract(1, ordering: .relaxed) }
        if case .dialed(let dialerID) = c.origin, var dialer = dialers[dialerID], dialer.connection == c.id {
            dialer.connection = nil
            dialer.nextAttemptMillis = WallClock.monotonicMillis() + dialer.backoffMillis
            dialer.backoffMillis = min(dialer.backoffMillis * 2, limits.reconnectMaxMillis)
            dialers[dialerID] = dialer
        }
        if wasOpen { role.closed(c, loop: self) }
    }

    // MARK: The loop

    private func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 128)
        var posted = false
        while !stopping.load(ordering: .acquiring) {
            let now = WallClock.monotonicMillis()
            stats.lastTurnMillis.store(now, ordering: .relaxed)
            let next = turnTimers(nowMillis: now)
            // Work left in the mailbox: look at the sockets without waiting, then go on with it.
            let timeout: Int32 = posted ? 0 : next.map { $0 <= now ? 0 : Int32(min($0 - now, 1_000)) } ?? 1_000
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(epoll, $0.baseAddress, 128, timeout) }
            if count < 0 {
                if Glibc.errno == EINTR { continue }
                usleep(1_000)
                continue
            }
            for i in 0..<Int(count) {
                let token = clinux_event_token(&events[i])
                let flags = clinux_event_flags(&events[i])
                if token == Self.wakeToken {
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { Glibc.read(wakeFD, $0.baseAddress, 8) }
                    continue
                }
                if token & Self.listenerBit != 0 {
                    acceptAll(listener: token)
                } else if let c = connections[token] {
                    handle(c, flags: flags)
                }
            }
            posted = runMailbox()
        }
        shutdown()
    }

    /// Runs what was posted, for about `mailboxBudgetMillis` at most, and returns whether
    /// work is left (put back first in line, in order). A publisher far behind (a backlog
    /// of broadcasts to thousands of subscribers) so still lets the loop accept, finish
    /// handshakes and read every turn, and the loop keeps turning (a loop that does not
    /// turn for 10 s is taken as wedged: the node steps aside).
    private func runMailbox() -> Bool {
        let work = mailbox.withLock { box -> [@Sendable (SPLoop) -> Void] in
            defer { box.work.removeAll(keepingCapacity: true) }
            return box.work
        }
        let deadline = WallClock.monotonicMillis() + Self.mailboxBudgetMillis
        var done = 0
        while done < work.count {
            work[done](self)
            done += 1
            if done % 8 == 0 && done < work.count && WallClock.monotonicMillis() >= deadline { break }
        }
        guard done < work.count else { return false }
        mailbox.withLock { box in box.work.insert(contentsOf: work[done...], at: 0) }
        return true
    }

    /// How long one turn runs posted work before it looks at the sockets again.
    static let mailboxBudgetMillis: UInt64 = 20

    private func shutdown() {
        // Listeners registered late still get closed; nothing posted after this runs.
        mailbox.withLock { $0.shut = true }
        while runMailbox() {}
        for c in Array(connections.values) { drop(c) }
        for name in inprocNames { SPInproc.unregister(name) }
        for path in socketFiles { unlink(path) }
        for (_, listener) in listeners { Glibc.close(listener.fd) }
        listeners.removeAll()
        for dialer in dialers.values { dialer.lookup?.cancel() }
        dialers.removeAll()
        Glibc.close(wakeFD)
        Glibc.close(epoll)
    }

    /// Handshake deadlines, dial attempts, paused listeners and the role's own timers.
    private func turnTimers(nowMillis now: UInt64) -> UInt64? {
        var next: UInt64? = nil
        func consider(_ t: UInt64) { next = min(next ?? t, t) }
        for id in unopened {
            guard let c = connections[id] else { unopened.remove(id); continue }
            // Held back by the byte budget: the node stopped reading, so the peer's
            // handshake clock stops too (it restarts when the connection is read again).
            if c.starved { continue }
            if c.deadlineMillis <= now {
                if c.phase == .connecting {
                    stats.lastDialFailure.withLock { $0 = "no answer to the connection at \(c.peerName) (a firewall dropping it, or a host that is down)" }
                    stats.dialFailures.add(1, ordering: .relaxed)
                } else {
                    stats.badHandshakes.add(1, ordering: .relaxed)
                }
                drop(c)
            } else {
                consider(c.deadlineMillis)
            }
        }
        for (id, dialer) in dialers where dialer.connection == nil {
            if dialer.nextAttemptMillis <= now { startDial(id) } else { consider(dialer.nextAttemptMillis) }
        }
        for (id, listener) in listeners {
            guard let until = listener.pausedUntil else { continue }
            if until <= now {
                listeners[id]?.pausedUntil = nil
                watch(listener: id, fd: listener.fd, now: now)
            } else {
                consider(until)
            }
        }
        if let t = role.tick(nowMillis: now, loop: self) { consider(t) }
        return next
    }

    private func addListener(id: UInt64, fd: Int32, framing: SPFraming, tls: TLSContext?) {
        if stopping.load(ordering: .acquiring) { Glibc.close(fd); return }
        listeners[id] = Listener(fd: fd, framing: framing, tls: tls, pausedUntil: nil)
        watch(listener: id, fd: fd, now: WallClock.monotonicMillis())
    }

    /// Watches a listener; if the kernel refuses (out of memory, or the user's epoll
    /// watches), it is tried again in a second rather than left deaf for good.
    private func watch(listener id: UInt64, fd: Int32, now: UInt64) {
        var event = epoll_event()
        clinux_event_set(&event, EPOLLIN.rawValue, id)
        if epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) != 0 {
            stats.watchFailures.add(1, ordering: .relaxed)
            listeners[id]?.pausedUntil = now + 1_000
        }
    }

    private func acceptAll(listener id: UInt64) {
        guard let listener = listeners[id] else { return }
        for _ in 0..<256 {
            let fd = clinux_accept_nonblocking(listener.fd)
            if fd < 0 {
                let e = Glibc.errno
                if e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM {
                    // Out of descriptors: stop accepting for a moment rather than spin.
                    _ = epoll_ctl(epoll, EPOLL_CTL_DEL, listener.fd, nil)
                    listeners[id]?.pausedUntil = WallClock.monotonicMillis() + 100
                    stats.refused.add(1, ordering: .relaxed)
                }
                return
            }
            guard connections.count < limits.maxConnections else {
                Glibc.close(fd)
                stats.refused.add(1, ordering: .relaxed)
                continue
            }
            stats.accepted.add(1, ordering: .relaxed)
            if listener.framing != .ipc { Self.setNoDelay(fd) }
            let c = SPConnection(id: nextID(), fd: fd, framing: listener.framing, origin: .accepted(listener: id),
                                 peerName: Self.peerName(fd), phase: .handshaking,
                                 deadlineMillis: WallClock.monotonicMillis() + limits.handshakeMillis)
            if let context = listener.tls {
                do { c.tls = try context.channel(host: nil) } catch { Glibc.close(fd); continue }
            }
            register(c)
            if listener.framing == .tcp && role.servesWebSocket {
                c.sniffing = true // the header waits for the peer's first bytes
            } else if listener.framing != .websocket {
                c.outbound.append(SPOutFrame(prefix: protocolKind.header, body: []))
                c.outboundBytes = SPProtocol.headerSize
            }
            flush(c)
        }
    }

    /// Takes the far end of an inproc socket pair as an accepted connection.
    private func adopt(_ fd: Int32, listener: UInt64) {
        if stopping.load(ordering: .acquiring) || connections.count >= limits.maxConnections {
            Glibc.close(fd)
            return
        }
        stats.accepted.add(1, ordering: .relaxed)
        let c = SPConnection(id: nextID(), fd: fd, framing: .tcp, origin: .accepted(listener: listener), peerName: "inproc",
                             phase: .handshaking, deadlineMillis: WallClock.monotonicMillis() + limits.handshakeMillis)
        register(c)
        c.outbound.append(SPOutFrame(prefix: protocolKind.header, body: []))
        c.outboundBytes = SPProtocol.headerSize
        flush(c)
    }

    private func startDial(_ id: UInt64) {
        guard var dialer = dialers[id], !dialer.resolving else { return }
        let now = WallClock.monotonicMillis()
        if case .inproc(let name) = dialer.address.kind {
            guard let fd = SPInproc.connect(name) else {
                dialer.nextAttemptMillis = now + dialer.backoffMillis
                dialer.backoffMillis = min(dialer.backoffMillis * 2, limits.reconnectMaxMillis)
                dialers[id] = dialer
                stats.dialFailures.add(1, ordering: .relaxed)
                return
            }
            let c = SPConnection(id: nextID(), fd: fd, framing: .tcp, origin: .dialed(dialer: id), peerName: dialer.address.url,
                                 phase: .handshaking, deadlineMillis: now + limits.handshakeMillis)
            dialer.connection = c.id
            dialers[id] = dialer
            register(c)
            c.outbound.append(SPOutFrame(prefix: protocolKind.header, body: []))
            c.outboundBytes = SPProtocol.headerSize
            flush(c)
            return
        }
        let candidates: [SPSocketAddress]
        if let found = dialer.resolved {
            candidates = found
            dialer.resolved = nil   // each attempt looks the name up again: it may move
        } else if dialer.address.needsNameLookup {
            // getaddrinfo can block for seconds on a slow resolver: never on this thread,
            // which serves every other connection meanwhile.
            dialer.resolving = true
            dialer.lookup = SPResolver.lookUp(dialer.address) { [weak self] result in
                self?.post { loop in loop.lookedUp(id, result) }
            }
            // (A lookup that failed at once has already posted its answer: it comes next turn.)
            dialers[id] = dialer
            return
        } else {
            do {
                candidates = try dialer.address.resolve(passive: false)
            } catch {
                dialNotResolved(id, dialer, error, now: now)
                return
            }
        }
        let target = candidates[0]
        let fd = socket(target.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            dialer.nextAttemptMillis = now + limits.reconnectMaxMillis
            dialers[id] = dialer
            stats.dialFailures.add(1, ordering: .relaxed)
            return
        }
        if target.family != AF_UNIX { Self.setNoDelay(fd) }
        let rv = target.withPointer { Glibc.connect(fd, $0, $1) }
        if rv != 0 && Glibc.errno != EINPROGRESS {
            let reason = Self.dialFailure(Glibc.errno, url: dialer.address.url)
            stats.lastDialFailure.withLock { $0 = reason }
            Glibc.close(fd)
            dialer.nextAttemptMillis = now + dialer.backoffMillis
            dialer.backoffMillis = min(dialer.backoffMillis * 2, limits.reconnectMaxMillis)
            dialers[id] = dialer
            stats.dialFailures.add(1, ordering: .relaxed)
            return
        }
        let c = SPConnection(id: nextID(), fd: fd, framing: dialer.address.framing, origin: .dialed(dialer: id),
                             peerName: dialer.address.url, phase: .connecting, deadlineMillis: now + limits.handshakeMillis)
        if let context = dialer.tls {
            do {
                if case .tcp(let host, _) = dialer.address.kind { c.tls = try context.channel(host: host) }
            } catch {
                Glibc.close(fd)
                dialer.nextAttemptMillis = now + limits.reconnectMaxMillis
                dialers[id] = dialer
                stats.dialFailures.add(1, ordering: .relaxed)
                return
            }
        }
        dialer.connection = c.id
        dialers[id] = dialer
        register(c)
        let opening: SPOutFrame
        if let resource = dialer.address.resource {
            let key = SPWebSocket.newKey()
            c.webSocketKey = key
            c.resource = resource
            opening = SPOutFrame(prefix: [], body: SPWebSocket.request(host: dialer.address.hostHeader, resource: resource, key: key,
                                                                        subprotocol: SPWebSocket.subprotocol(protocolKind.peer)))
        } else {
            opening = SPOutFrame(prefix: protocolKind.header, body: [])
        }
        c.outbound.append(opening)
        c.outboundBytes = opening.count
        if rv == 0 { c.phase = .handshaking; flush(c) }
        updateInterest(c)
    }

    /// A dialer's name lookup ended: dial what it found, or back off.
    private func lookedUp(_ id: UInt64, _ result: Result<[SPSocketAddress], TransportError>) {
        guard var dialer = dialers[id], dialer.resolving else { return }
        dialer.resolving = false
        dialer.lookup = nil
        switch result {
        case let .success(found):
            dialer.resolved = found
            dialers[id] = dialer
            startDial(id)
        case let .failure(error):
            dialNotResolved(id, dialer, error, now: WallClock.monotonicMillis())
        }
    }

    private func dialNotResolved(_ id: UInt64, _ failed: Dialer, _ error: TransportError, now: UInt64) {
        var dialer = failed
        stats.lastDialFailure.withLock { $0 = "the host in \(dialer.address.url) does not resolve (\(error.reason))" }
        dialer.nextAttemptMillis = now + dialer.backoffMillis
        dialer.backoffMillis = min(dialer.backoffMillis * 2, limits.reconnectMaxMillis)
        dialers[id] = dialer
        stats.dialFailures.add(1, ordering: .relaxed)
    }

    private func register(_ c: SPConnection) {
        connections[c.id] = c
        if c.phase != .open { unopened.insert(c.id) }
        var event = epoll_event()
        c.interest = wantedInterest(c)
        clinux_event_set(&event, c.interest, c.id)
        // Unwatched, it would never be read or written: it goes now (a dialer retries).
        if epoll_ctl(epoll, EPOLL_CTL_ADD, c.fd, &event) != 0 {
            stats.watchFailures.add(1, ordering: .relaxed)
            drop(c)
        }
    }

    private func wantedInterest(_ c: SPConnection) -> UInt32 {
        var interest: UInt32 = 0
        if c.phase == .connecting { return EPOLLOUT.rawValue }
        if !c.readPaused && !c.starved { interest |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if let tls = c.tls {
            // Frames wait for the handshake without asking for writability.
            if c.sealedOffset < c.sealed.count || (tls.established && !tls.writeBlocked && !c.outbound.isEmpty) { interest |= EPOLLOUT.rawValue }
        } else if !c.outbound.isEmpty {
            interest |= EPOLLOUT.rawValue
        }
        return interest
    }

    private func updateInterest(_ c: SPConnection) {
        guard !c.closed else { return }
        let wanted = wantedInterest(c)
        guard wanted != c.interest else { return }
        c.interest = wanted
        var event = epoll_event()
        clinux_event_set(&event, wanted, c.id)
        if epoll_ctl(epoll, EPOLL_CTL_MOD, c.fd, &event) != 0 {
            stats.watchFailures.add(1, ordering: .relaxed)
            drop(c)
        }
    }

    /// A failed connect in words an operator acts on.
    static func dialFailure(_ code: Int32, url: String) -> String {
        switch code {
        case ECONNREFUSED: return "nothing listens at \(url) (connection refused: is the node running, on that port?)"
        case ENETUNREACH, EHOSTUNREACH: return "no route to \(url) (\(String(cString: strerror(code))))"
        case ETIMEDOUT: return "no answer to the connection at \(url) (a firewall dropping it, or a host that is down)"
        case ENOENT: return "no socket at \(url) (is the node running?)"
        default: return "cannot connect to \(url): \(String(cString: strerror(code)))"
        }
    }

    private func handle(_ c: SPConnection, flags: UInt32) {
        if c.phase == .connecting {
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 || flags & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0 {
                let reason = Self.dialFailure(error != 0 ? error : ECONNREFUSED, url: c.peerName)
                stats.lastDialFailure.withLock { $0 = reason }
                stats.dialFailures.add(1, ordering: .relaxed)
                drop(c)
                return
            }
            c.phase = .handshaking
            flush(c)
            updateInterest(c)
            return
        }
        if flags & EPOLLOUT.rawValue != 0 { flush(c) }
        if c.closed { return }
        if flags & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            if (c.readPaused || c.starved) && flags & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
                drop(c) // the peer is gone; what it sent no longer matters
                return
            }
            if !c.readPaused && !c.starved { readAvailable(c) }
        }
    }

    /// Reads what the socket has (up to 1 MiB a turn, for fairness) and parses it.
    private func readAvailable(_ c: SPConnection) {
        var total = 0
        while !c.closed && !c.readPaused && !c.starved && total < 1 << 20 {
            if buffered >= bufferBudget && starve(c) { break }
            let n = readBuffer.withUnsafeMutableBytes { Glibc.read(c.fd, $0.baseAddress, $0.count) }
            if n > 0 {
                total += n
                if let tls = c.tls {
                    receiveSealed(c, count: n, tls: tls)
                    continue
                }
                c.inbound.append(contentsOf: readBuffer[0..<n])
                buffered += n
                parse(c)
                continue
            }
            if n == 0 {
                if c.phase == .handshaking, c.tls == nil, case .dialed = c.origin, c.inbound.isEmpty {
                    // Closed before saying anything: what a TLS listener does to a plain dial.
                    stats.lastWrongPeer.store(SPLoopStats.closedBeforeHeader, ordering: .relaxed)
                }
                drop(c)
                return
            }
            let e = Glibc.errno
            if e == EAGAIN || e == EWOULDBLOCK { break }
            if e == EINTR { continue }
            drop(c)
            return
        }
    }

    /// Stops reading `c` while the loop holds too many unparsed bytes; true when it did.
    /// The connection nearest to completing a message (most bytes of one held) is never
    /// starved, so some message always completes and the budget frees.
    private func starve(_ c: SPConnection) -> Bool {
        let nearest = connections.values.filter { $0.unparsed > 0 && !$0.closed }.max { $0.unparsed < $1.unparsed }
        if nearest?.id == c.id { return false }
        c.starved = true
        starved.insert(c.id)
        stats.starved.add(1, ordering: .relaxed)
        updateInterest(c)
        return true
    }

    /// Reads the starved connections again once the budget has room, or as soon as no
    /// connection that is still read holds part of a message (else none would finish).
    private func feedStarvedIfDue() {
        if buffered < bufferBudget / 2 || !connections.values.contains(where: { !$0.starved && !$0.readPaused && $0.unparsed > 0 }) {
            feedStarved()
        }
    }

    private func feedStarved() {
        let waiting = starved
        starved.removeAll()
        for id in waiting {
            guard let c = connections[id] else { continue }
            c.starved = false
            if c.phase != .open { c.deadlineMillis = WallClock.monotonicMillis() + limits.handshakeMillis }
            updateInterest(c)
        }
    }

    /// Takes the header, then whole messages, from the buffer.
    private func parse(_ c: SPConnection) {
        if c.sniffing {
            guard c.unparsed >= 4 else { return }
            c.sniffing = false
            if c.inbound[c.inboundOffset..<c.inboundOffset + 4].elementsEqual("GET ".utf8) {
                c.framing = .websocket
            } else {
                c.outbound.append(SPOutFrame(prefix: protocolKind.header, body: []))
                c.outboundBytes += SPProtocol.headerSize
                flush(c)
                if c.closed { return }
            }
        }
        if c.framing == .websocket {
            parseWebSocket(c)
            return
        }
        if c.phase == .handshaking {
            guard c.unparsed >= SPProtocol.headerSize else { return }
            let header = c.inbound[c.inboundOffset..<c.inboundOffset + SPProtocol.headerSize]
            c.inboundOffset += SPProtocol.headerSize
            buffered -= SPProtocol.headerSize
            let spoken = SPProtocol.peerProtocol(inHeader: header)
            guard spoken == protocolKind.peer.rawValue else {
                stats.badHandshakes.add(1, ordering: .relaxed)
                stats.lastWrongPeer.store(spoken ?? 0xffff, ordering: .relaxed)
                drop(c)
                return
            }
            markOpen(c)
        }
        let prefix = c.framing.prefixSize
        while !c.closed && !c.readPaused && c.unparsed >= prefix {
            let announced = c.inbound.withUnsafeBytes { raw in
                c.framing.length(inPrefix: UnsafeRawBufferPointer(rebasing: raw[c.inboundOffset..<c.inboundOffset + prefix]))
            }
            guard let length = announced, length <= UInt64(limits.maxMessageBytes) else {
                stats.oversized.add(1, ordering: .relaxed)
                drop(c)
                return
            }
            let size = Int(length)
            // No reservation for what is only announced: the buffer grows as bytes come.
            guard c.unparsed >= prefix + size else { break }
            let start = c.inboundOffset + prefix
            let message = Array(c.inbound[start..<start + size])
            c.inboundOffset = start + size
            buffered -= prefix + size
            role.received(message, on: c, loop: self)
        }
        if !c.closed { c.compactInbound() }
        if !starved.isEmpty { feedStarvedIfDue() }
    }

    private func markOpen(_ c: SPConnection) {
        c.phase = .open
        stats.lastWrongPeer.store(0, ordering: .relaxed)
        stats.lastDialFailure.withLock { $0 = nil }
        if c.tls != nil { stats.lastTLSFailure.withLock { $0 = nil } }
        unopened.remove(c.id)
        stats.open.add(1, ordering: .relaxed)
        if case .dialed(let dialerID) = c.origin { dialers[dialerID]?.backoffMillis = limits.reconnectMinMillis }
        role.opened(c, loop: self)
    }

    private func consume(_ c: SPConnection, _ count: Int) {
        c.inboundOffset += count
        buffered -= count
    }

    /// SP over WebSocket: the HTTP upgrade, then frames (SPWebSocket).
    private func parseWebSocket(_ c: SPConnection) {
        defer {
            if !c.closed { c.compactInbound() }
            if !starved.isEmpty { feedStarvedIfDue() }
        }
        if c.phase == .handshaking {
            let available = c.inbound[c.inboundOffset...]
            if c.isDialed {
                switch SPWebSocket.parseResponse(available, key: c.webSocketKey ?? "", subprotocol: SPWebSocket.subprotocol(protocolKind.peer)) {
                case .incomplete: return
                case .refused:
                    stats.badHandshakes.add(1, ordering: .relaxed)
                    stats.lastWrongPeer.store(0xffff, ordering: .relaxed)
                    drop(c)
                    return
                case .accepted(let consumed):
                    consume(c, consumed)
                    markOpen(c)
                }
            } else {
                switch SPWebSocket.parseRequest(available) {
                case .incomplete: return
                case .invalid(let status, let reason):
                    refuseWebSocket(c, status: status, reason: reason)
                    return
                case .request(let request, let consumed):
                    consume(c, consumed)
                    let spoken = SPWebSocket.subprotocol(protocolKind)
                    guard request.subprotocols.contains(spoken) else {
                        refuseWebSocket(c, status: 400, reason: "Sec-WebSocket-Protocol must name \(spoken)")
                        return
                    }
                    if let why = role.refusal(resource: request.resource) {
                        refuseWebSocket(c, status: 404, reason: why)
                        return
                    }
                    c.resource = request.resource
                    let answer = SPWebSocket.response(key: request.key, subprotocol: spoken)
                    c.outbound.append(SPOutFrame(prefix: [], body: answer))
                    c.outboundBytes += answer.count
                    flush(c)
                    if c.closed { return }
                    markOpen(c)
                }
            }
        }
        // A PUB takes nothing but control frames (at most 125 bytes): a longer frame is
        // refused at its header, not buffered first.
        let maxPayload = protocolKind == .pub ? 125 : limits.maxMessageBytes
        while !c.closed && !c.readPaused && c.phase == .open {
            switch SPWebSocket.parseFrame(c.inbound[c.inboundOffset...], fromClient: !c.isDialed, maxPayload: maxPayload) {
            case .incomplete:
                return
            case .invalid:
                stats.oversized.add(1, ordering: .relaxed)
                drop(c)
                return
            case .frame(let frame):
                consume(c, frame.consumed)
                switch frame.opcode {
                case .ping:
                    _ = enqueue(SPWebSocket.message(frame.payload, opcode: .pong, masked: c.isDialed), on: c, dropOldest: false)
                case .pong:
                    break
                case .close:
                    // Answer the close (best effort), then go.
                    _ = enqueue(SPWebSocket.message(Array(frame.payload.prefix(2)), opcode: .close, masked: c.isDialed), on: c, dropOldest: false)
                    drop(c)
                    return
                case .text, .binary:
                    guard !c.fragmenting else { drop(c); return }
                    if frame.fin {
                        role.received(frame.payload, on: c, loop: self)
                    } else {
                        c.fragmenting = true
                        c.fragments = frame.payload
                    }
                case .continuation:
                    guard c.fragmenting, c.fragments.count + frame.payload.count <= limits.maxMessageBytes else {
                        stats.oversized.add(1, ordering: .relaxed)
                        drop(c)
                        return
                    }
                    c.fragments += frame.payload
                    if frame.fin {
                        let message = c.fragments
                        c.fragments = []
                        c.fragmenting = false
                        role.received(message, on: c, loop: self)
                    }
                }
            }
        }
    }

    /// Answers a bad upgrade with an HTTP error (what the socket takes now), then closes.
    private func refuseWebSocket(_ c: SPConnection, status: Int, reason: String) {
        stats.badHandshakes.add(1, ordering: .relaxed)
        let answer = SPWebSocket.refusal(status: status, reason: reason)
        c.outbound.append(SPOutFrame(prefix: [], body: answer))
        c.outboundBytes += answer.count
        flush(c)
        drop(c)
    }

    /// Decrypts what the socket gave, answers the handshake, and parses the plaintext.
    private func receiveSealed(_ c: SPConnection, count: Int, tls: TLSChannel) {
        readBuffer.withUnsafeBytes { tls.receive(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        reading: while true {
            switch plainBuffer.withUnsafeMutableBytes({ tls.read(into: $0) }) {
            case .data(let n):
                c.inbound.append(contentsOf: plainBuffer[0..<n])
                buffered += n
            case .wouldBlock:
                break reading
            case .closed:
                // close_notify: what came before it is still the peer's to be heard.
                parse(c)
                drop(c)
                return
            case .failed(let why):
                failTLS(c, why)
                return
            }
        }
        parse(c)
        flush(c) // handshake answers, and frames that waited for the handshake
    }

    private func failTLS(_ c: SPConnection, _ why: String) {
        stats.tlsFailures.add(1, ordering: .relaxed)
        stats.lastTLSFailure.withLock { $0 = why }
        // The alert OpenSSL queued tells the peer why (best effort, one send).
        if let tls = c.tls, !c.closed {
            var alert: [UInt8] = []
            tls.takeOutput(into: &alert)
            if !alert.isEmpty { _ = alert.withUnsafeBytes { Glibc.send(c.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) } }
        }
        drop(c)
    }

    /// TLS: encrypts queued frames (up to 256 KiB ahead of the socket) and writes the
    /// ciphertext until the socket would block.
    private func flushSealed(_ c: SPConnection, tls: TLSChannel) {
        if !tls.established, case .failed(let why) = tls.handshake() {
            failTLS(c, why)
            return
        }
        if tls.established {
            // What waits inside OpenSSL counts too: at most 256 KiB is encrypted ahead of
            // the socket, so a slow reader's queue stays plaintext (shared, droppable).
            encrypting: while let head = c.outbound.first, c.sealed.count - c.sealedOffset + tls.pendingOutput < 256 << 10 {
                let result: TLSChannel.WriteResult
                if c.outboundOffset < head.prefix.count {
                    result = head.prefix.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[c.outboundOffset...])) }
                } else if c.outboundOffset < head.count {
                    let start = c.outboundOffset - head.prefix.count
                    result = head.body.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[start...])) }
                } else {
                    result = .wrote(0)
                }
                switch result {
                case .wrote(let n): c.outboundOffset += n
                case .wouldBlock: break encrypting
                case .failed(let why): failTLS(c, why); return
                }
                if c.outboundOffset >= head.count {
                    c.outbound.removeFirst()
                    c.outboundBytes -= head.count
                    c.outboundOffset = 0
                }
            }
        }
        tls.takeOutput(into: &c.sealed)
        while c.sealedOffset < c.sealed.count {
            let n = c.sealed.withUnsafeBytes { Glibc.send(c.fd, $0.baseAddress! + c.sealedOffset, $0.count - c.sealedOffset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                let e = Glibc.errno
                if e == EAGAIN || e == EWOULDBLOCK { break }
                if e == EINTR { continue }
                drop(c)
                return
            }
            c.sealedOffset += n
        }
        if c.sealedOffset == c.sealed.count {
            c.sealed.removeAll(keepingCapacity: c.sealed.capacity <= 64 << 10)
            c.sealedOffset = 0
        } else if c.sealedOffset >= 1 << 20 {
            c.sealed.removeFirst(c.sealedOffset)
            c.sealedOffset = 0
        }
        updateInterest(c)
    }

    /// Writes queued bytes until the socket would block.
    private func flush(_ c: SPConnection) {
        guard !c.closed, c.phase != .connecting else { return }
        if let tls = c.tls {
            flushSealed(c, tls: tls)
            return
        }
        while let head = c.outbound.first {
            let n = Self.write(head, from: c.outboundOffset, to: c.fd)
            if n < 0 {
                let e = Glibc.errno
                if e == EAGAIN || e == EWOULDBLOCK { break }
                if e == EINTR { continue }
                drop(c)
                return
            }
            c.outboundOffset += n
            if c.outboundOffset == head.count {
                c.outbound.removeFirst()
                c.outboundBytes -= head.count
                c.outboundOffset = 0
            }
        }
        updateInterest(c)
    }

    /// One `sendmsg` of what is left of a frame (prefix and body as two pieces; no heap
    /// allocation, as a fan-out makes one per subscriber).
    private static func write(_ frame: SPOutFrame, from offset: Int, to fd: Int32) -> Int {
        frame.prefix.withUnsafeBytes { prefix in
            frame.body.withUnsafeBytes { body in
                withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { pieces in
                    var count = 0
                    if offset < prefix.count {
                        pieces[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: prefix.baseAddress! + offset), iov_len: prefix.count - offset)
                        count = 1
                        if body.count > 0 {
                            pieces[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress!), iov_len: body.count)
                            count = 2
                        }
                    } else {
                        let start = offset - prefix.count
                        pieces[0] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + start), iov_len: body.count - start)
                        count = 1
                    }
                    var message = msghdr()
                    message.msg_iov = pieces.baseAddress
                    message.msg_iovlen = count
                    return Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
                }
            }
        }
    }

    private static func setNoDelay(_ fd: Int32) {
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func peerName(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rv = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) } }
        guard rv == 0 else { return "?" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let ok = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        } }
        guard ok == 0 else { return Int32(storage.ss_family) == AF_UNIX ? "ipc" : "?" }
        func text(_ chars: [CChar]) -> String { String(decoding: chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        return text(host) + ":" + text(service)
    }
}
