@preconcurrency import Glibc
import CNNG
import HomeroomNode
import Synchronization

/// One nng socket (PUB, SUB, REQ or REP), owning its handle.
///
/// The C handle is a plain socket id, so the class is `Sendable`: every method may be
/// called from any thread. Blocking calls (`receive`, `send` when the queue is full,
/// a blocking `dial`) block the calling thread, so call them from a dedicated thread
/// (see `NNGSubscriber`, `NNGReplier`) and not from the Swift concurrency pool.
///
/// `close()` is idempotent, may race with itself and with a blocked `receive()`
/// (which then throws `.closed`), and runs at `deinit` if not called before.
public final class NNGSocket: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case pub, sub, req, rep
    }

    public let kind: Kind
    /// The nng socket id (`nng_socket.id`); kept as a plain integer so no C type leaks.
    let id: UInt32
    private let closed = Atomic<Bool>(false)

    var raw: nng_socket { nng_socket(id: id) }

    public init(_ kind: Kind) throws(NNGError) {
        var socket = nng_socket()
        let rv: Int32
        switch kind {
        case .pub: rv = nng_pub0_open(&socket)
        case .sub: rv = nng_sub0_open(&socket)
        case .req: rv = nng_req0_open(&socket)
        case .rep: rv = nng_rep0_open(&socket)
        }
        try nngCheck(rv, "open \(kind.rawValue) socket")
        self.kind = kind
        self.id = socket.id
    }

    deinit { close() }

    /// True once `close()` has been called.
    public var isClosed: Bool { closed.load(ordering: .acquiring) }

    /// Closes the socket, its listeners, dialers and contexts; blocked calls on it
    /// throw `.closed`. Only the first call does anything; later ones return true.
    ///
    /// Returns false when `nng_close` did not finish within `timeout`. nng 1.5.2 can
    /// deadlock in `nng_close` when messages are still flowing over TCP (nng issues
    /// 1543 and 1813, fixed in nng 1.8.0; reproduced here within a few dozen closes
    /// at 10k messages/s, none in 100 at 1k/s). When that happens the call is left
    /// stuck on a helper thread and this returns, so a node can still shut down;
    /// the process's nng reaper is stuck from then on, so later closes stall too
    /// (they wait only briefly), while opening, sending and receiving still work.
    /// `NNGSocket.stalledCloses` counts such closes. To make it unlikely, stop your
    /// own traffic first (the loop helpers do) and avoid closing busy SUB sockets
    /// before process exit.
    @discardableResult
    public func close(timeout: Duration = .seconds(2)) -> Bool {
        let (exchanged, _) = closed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing)
        guard exchanged else { return true }
        return NNGCloser.close(raw, timeout: timeout)
    }

    /// How many `nng_close` calls in this process have not finished within their
    /// timeout and are still stuck (see `close(timeout:)`). Non-zero means the nng
    /// reaper is stuck; restarting the process is the only cure with nng 1.5.2.
    public static var stalledCloses: Int { NNGCloser.stalled.load(ordering: .relaxed) }

    // MARK: Endpoints

    /// Listens on `url` and returns the URL actually bound: for `tcp://host:0`
    /// the port the system picked is filled in, other URLs come back unchanged.
    @discardableResult
    public func listen(_ url: String) throws(NNGError) -> String {
        try nngListen(raw, url)
    }

    /// Dials `url`. Without `blocking`, returns at once and nng keeps retrying in the
    /// background (at the reconnect interval) until the peer is there; address errors
    /// found only when resolving (such as a non-numeric port) then never surface.
    /// With `blocking`, waits for the first connection and throws if it fails.
    public func dial(_ url: String, blocking: Bool = false) throws(NNGError) {
        let flags = blocking ? Int32(0) : Int32(NNG_FLAG_NONBLOCK)
        try nngCheck(nng_dial(raw, url, nil, flags), "dial \(url)", addressOperation: true)
    }

    /// Dials `url` with a dialer of its own, without blocking (as `dial`), and returns
    /// the dialer's id so that this one connection can later be closed alone with
    /// `closeDialer(_:)` while the socket's other connections stay up.
    public func dialer(_ url: String) throws(NNGError) -> UInt32 {
        var dialer = nng_dialer()
        try nngCheck(nng_dial(raw, url, &dialer, Int32(NNG_FLAG_NONBLOCK)), "dial \(url)", addressOperation: true)
        return dialer.id
    }

    /// Closes a dialer made by `dialer(_:)` and its connection; a no-op when it or its
    /// socket is already closed. Bounded like `close(timeout:)` (the same nng 1.5.2
    /// hang applies to a busy connection), so it blocks for at most `timeout`.
    @discardableResult
    public static func closeDialer(_ id: UInt32, timeout: Duration = .seconds(2)) -> Bool {
        NNGCloser.close(nng_dialer(id: id), timeout: timeout)
    }

    // MARK: Sending

    /// Sends one message (copied by nng).
    public func send(_ bytes: [UInt8]) throws(NNGError) {
        let rv = bytes.withUnsafeBytes { nng_send(raw, UnsafeMutableRawPointer(mutating: $0.baseAddress), $0.count, 0) }
        try nngCheck(rv, "send \(bytes.count) bytes on \(kind.rawValue) socket")
    }

    /// Sends one message from a raw buffer (copied by nng).
    public func send(_ buffer: UnsafeRawBufferPointer) throws(NNGError) {
        let rv = nng_send(raw, UnsafeMutableRawPointer(mutating: buffer.baseAddress), buffer.count, 0)
        try nngCheck(rv, "send \(buffer.count) bytes on \(kind.rawValue) socket")
    }

    /// Sends `topic + payload` as one message, copying each straight into the nng
    /// message with no intermediate array.
    public func send(topic: [UInt8], payload: [UInt8]) throws(NNGError) {
        let rv = topic.withUnsafeBytes { t in
            payload.withUnsafeBytes { p in nngSendParts(raw, t, p) }
        }
        try nngCheck(rv, "send \(topic.count)+\(payload.count) bytes on \(kind.rawValue) socket")
    }

    // MARK: Receiving

    /// Receives one message, waiting up to the receive timeout (forever by default).
    /// Throws `.timedOut` when the timeout passes and `.closed` once the socket closes.
    public func receive() throws(NNGError) -> [UInt8] {
        try receive { [UInt8]($0) }
    }

    /// Receives one message and hands its bytes to `body` without copying them into
    /// an array first; the buffer is valid only inside `body`.
    public func receive<R>(_ body: (UnsafeRawBufferPointer) -> R) throws(NNGError) -> R {
        try receive(flags: 0, body)!
    }

    /// Receives one message if one is queued, else returns nil at once. Polling this
    /// avoids the receive-timeout path of SUB sockets in nng 1.5.2 (issue 1523).
    public func tryReceive() throws(NNGError) -> [UInt8]? {
        try receive(flags: Int32(NNG_FLAG_NONBLOCK)) { [UInt8]($0) }
    }

    private func receive<R>(flags: Int32, _ body: (UnsafeRawBufferPointer) -> R) throws(NNGError) -> R? {
        var buffer: UnsafeMutableRawPointer? = nil
        var size = 0
        let rv = withUnsafeMutablePointer(to: &buffer) { nng_recv(raw, $0, &size, flags | Int32(NNG_FLAG_ALLOC)) }
        if rv == .nngAgain && flags & Int32(NNG_FLAG_NONBLOCK) != 0 { return nil }
        try nngCheck(rv, "receive on \(kind.rawValue) socket")
        defer { nng_free(buffer, size) }
        return body(UnsafeRawBufferPointer(start: buffer, count: size))
    }

    // MARK: Subscriptions (SUB only)

    /// Delivers messages whose bytes start with `topic` (an empty topic means all).
    public func subscribe(_ topic: [UInt8]) throws(NNGError) {
        let rv = topic.withUnsafeBytes { nng_socket_set(raw, NNG_OPT_SUB_SUBSCRIBE, $0.baseAddress, $0.count) }
        try nngCheck(rv, "subscribe to a \(topic.count)-byte topic on \(kind.rawValue) socket")
    }

    public func subscribe(_ topic: String) throws(NNGError) { try subscribe(Array(topic.utf8)) }

    /// Removes a subscription made with the same bytes.
    public func unsubscribe(_ topic: [UInt8]) throws(NNGError) {
        let rv = topic.withUnsafeBytes { nng_socket_set(raw, NNG_OPT_SUB_UNSUBSCRIBE, $0.baseAddress, $0.count) }
        try nngCheck(rv, "unsubscribe from a \(topic.count)-byte topic on \(kind.rawValue) socket")
    }

    public func unsubscribe(_ topic: String) throws(NNGError) { try unsubscribe(Array(topic.utf8)) }

    // MARK: Options

    /// Messages queued for sending (for PUB: per subscriber, oldest dropped when full). 0...8192.
    public func setSendBuffer(_ messages: Int) throws(NNGError) {
        try setInt(NNG_OPT_SENDBUF, messages, "set send buffer to \(messages) messages")
    }

    /// Messages queued after receipt (for SUB: newest dropped when full). 0...8192.
    public func setReceiveBuffer(_ messages: Int) throws(NNGError) {
        try setInt(NNG_OPT_RECVBUF, messages, "set receive buffer to \(messages) messages")
    }

    /// How long `receive()` waits; nil waits forever (the default).
    public func setReceiveTimeout(_ timeout: Duration?) throws(NNGError) {
        try setMilliseconds(NNG_OPT_RECVTIMEO, timeout, "set receive timeout to \(timeout.map { "\($0)" } ?? "forever")")
    }

    /// How long `send()` waits for queue space or a peer; nil waits forever (the default).
    public func setSendTimeout(_ timeout: Duration?) throws(NNGError) {
        try setMilliseconds(NNG_OPT_SENDTIMEO, timeout, "set send timeout to \(timeout.map { "\($0)" } ?? "forever")")
    }

    /// Reconnect back-off for dialers created after this call: first retry after `min`,
    /// doubling up to `max` (nil: always wait `min`).
    public func setReconnectTime(min: Duration, max: Duration? = nil) throws(NNGError) {
        try setMilliseconds(NNG_OPT_RECONNMINT, min, "set reconnect minimum to \(min)")
        let maxMillis = max.map { nngMilliseconds($0) } ?? 0
        try nngCheck(nng_socket_set_ms(raw, NNG_OPT_RECONNMAXT, maxMillis), "set reconnect maximum to \(max.map { "\($0)" } ?? "none")")
    }

    /// Largest message accepted from a peer, in bytes; larger ones are dropped and the
    /// connection closed. 0 means no limit.
    public func setMaxReceiveSize(_ bytes: Int) throws(NNGError) {
        let rv = nng_socket_set_size(raw, NNG_OPT_RECVMAXSZ, bytes)
        try nngCheck(rv, "set maximum receive size to \(bytes) bytes")
    }

    private func setInt(_ option: String, _ value: Int, _ operation: @autoclosure () -> String) throws(NNGError) {
        guard let v = Int32(exactly: value) else {
            throw NNGError(Int32(bitPattern: NNG_EINVAL.rawValue), operation())
        }
        try nngCheck(nng_socket_set_int(raw, option, v), operation())
    }

    private func setMilliseconds(_ option: String, _ value: Duration?, _ operation: @autoclosure () -> String) throws(NNGError) {
        try nngCheck(nng_socket_set_ms(raw, option, nngMilliseconds(value)), operation())
    }
}

/// Builds one nng message from two buffers and sends it; frees it if the send fails.
func nngSendParts(_ socket: nng_socket, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int32 {
    var msg: OpaquePointer? = nil
    var rv = nng_msg_alloc(&msg, first.count + second.count)
    guard rv == 0, let msg else { return rv }
    let body = nng_msg_body(msg)!
    if let base = first.baseAddress, first.count > 0 { memcpy(body, base, first.count) }
    if let base = second.baseAddress, second.count > 0 { memcpy(body + first.count, base, second.count) }
    rv = nng_sendmsg(socket, msg, 0)
    if rv != 0 { nng_msg_free(msg) }
    return rv
}

/// `nng_listen`, returning the bound URL (the real port for `tcp://host:0`).
func nngListen(_ socket: nng_socket, _ url: String) throws(NNGError) -> String {
    var listener = nng_listener()
    try nngCheck(nng_listen(socket, url, &listener, 0), "listen on \(url)", addressOperation: true)
    // Port 0 (tcp://H:0, ws://H:0/path): the URL with the port the system chose.
    guard url.hasPrefix("tcp") || url.hasPrefix("ws://"), let scheme = url.firstRange(of: "://") else { return url }
    let authorityEnd = url[scheme.upperBound...].firstIndex(of: "/") ?? url.endIndex
    guard let colon = url[..<authorityEnd].lastIndex(of: ":"), colon > scheme.lowerBound,
          url[url.index(after: colon)..<authorityEnd] == "0" else { return url }
    var port: Int32 = 0
    try nngCheck(nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port), "read the bound port of \(url)")
    return String(url[...colon]) + String(port) + url[authorityEnd...]
}
