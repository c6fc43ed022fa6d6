@preconcurrency import Glibc

/// One stream connection of an `SPLoop`: the SP header exchange, then framed messages.
/// Touched only on its loop's thread.
final class SPConnection {
    enum Origin { case accepted(listener: UInt64), dialed(dialer: UInt64) }
    enum Phase { case connecting, handshaking, open }

    let id: UInt64
    let fd: Int32
    /// `.websocket` once an accepted connection's first bytes were an HTTP upgrade.
    var framing: SPFraming
    let origin: Origin
    /// Who is at the other end, for logs ("127.0.0.1:52144" or the dialed URL).
    let peerName: String
    var phase: Phase
    /// When the connection must be open (connect and header exchange), monotonic ms.
    var deadlineMillis: UInt64

    /// Received bytes not yet parsed, from `inboundOffset`.
    var inbound: [UInt8] = []
    var inboundOffset = 0
    /// Messages waiting to be written; the first may be partly written (`outboundOffset`).
    var outbound: [SPOutFrame] = []
    var outboundOffset = 0
    var outboundBytes = 0
    /// Set by the role to stop reading (backpressure); bytes wait in the kernel.
    var readPaused = false
    /// Set by the loop while it holds too many unparsed bytes across connections.
    var starved = false
    /// Requests read but not yet answered (REP), or anything else a role counts.
    var pending = 0
    /// Of `pending`, those waiting in the urgent lane (REP): at most one per connection.
    var urgentPending = 0
    /// TLS (`tls+tcp://`): frames are encrypted into `sealed`, which is what the socket gets.
    var tls: TLSChannel?
    var sealed: [UInt8] = []
    var sealedOffset = 0
    /// The epoll interest currently registered.
    var interest: UInt32 = 0
    var closed = false
    /// Accepted on a listener that serves SP over TCP and SP over WebSocket: the first
    /// bytes decide, and this side sends nothing before them.
    var sniffing = false
    /// WebSocket: the request's path (accepted), or the path asked for (dialed).
    var resource: String?
    /// WebSocket, dialed: the key whose accept value the server must return.
    var webSocketKey: String?
    /// WebSocket: a fragmented message being put together.
    var fragments: [UInt8] = []
    var fragmenting = false

    init(id: UInt64, fd: Int32, framing: SPFraming, origin: Origin, peerName: String, phase: Phase, deadlineMillis: UInt64) {
        self.id = id
        self.fd = fd
        self.framing = framing
        self.origin = origin
        self.peerName = peerName
        self.phase = phase
        self.deadlineMillis = deadlineMillis
    }

    var unparsed: Int { inbound.count - inboundOffset }

    var isDialed: Bool {
        if case .dialed = origin { return true }
        return false
    }

    /// Drops parsed bytes from the front once they are most of the buffer.
    func compactInbound() {
        if inboundOffset == inbound.count {
            inbound.removeAll(keepingCapacity: inbound.capacity <= 1 << 20)
            inboundOffset = 0
        } else if inboundOffset > 0 && inboundOffset >= inbound.count / 2 {
            inbound.removeFirst(inboundOffset)
            inboundOffset = 0
        }
    }
}

/// One message to write: its prefix and its body, kept apart so a body published to
/// many connections is shared, not copied.
struct SPOutFrame {
    let prefix: [UInt8]
    let body: [UInt8]
    var count: Int { prefix.count + body.count }
}
