@preconcurrency import Glibc
import Synchronization

/// What the loop hands a socket's owner: its messages, and its end.
protocol WebSocketHandler: AnyObject, Sendable {
    /// A text message from the page. Called on the loop's thread: hand the work off.
    func received(_ text: String)
    /// The socket is gone (closed by either side, timed out or dropped). Once.
    func ended()
}

/// Frames and closes for the loop to carry out, posted from any thread; the loop
/// wakes on the eventfd and takes them all.
final class Mailbox: Sendable {
    enum Mail: Sendable {
        case send(connection: UInt64, frame: [UInt8])
        case close(connection: UInt64, code: UInt16, reason: String)
    }

    let wake: Int32
    /// The mails, and whether the eventfd is closed: a session thread may post after the
    /// loop ended, and must not write to a closed (or by then reused) descriptor.
    private let box = Mutex<(mails: [Mail], closed: Bool)>(([], false))

    init(wake: Int32) { self.wake = wake }

    func post(_ mail: Mail) {
        box.withLock { box in
            guard !box.closed else { return }
            box.mails.append(mail)
            Self.signal(wake)
        }
    }

    /// Wakes the loop without a mail (to stop it); nothing once closed.
    func wakeUp() { box.withLock { box in if !box.closed { Self.signal(wake) } } }

    func takeAll() -> [Mail] { box.withLock { box in defer { box.mails = [] }; return box.mails } }

    /// Closes the eventfd; later posts are dropped. The loop's, once, as it ends.
    func close() {
        box.withLock { box in
            guard !box.closed else { return }
            box.closed = true
            box.mails = []
            Glibc.close(wake)
        }
    }

    private static func signal(_ wake: Int32) {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(wake, $0.baseAddress, 8) }
    }
}

/// A session's way to its browser. Sends are queued through the loop; `queuedBytes`
/// counts what is posted and not yet written (the loop's own frames too: the handshake,
/// pongs, pings, closes), so the session can hold back while a
/// page is slow (the loop drops a page whose queue passes `WebLimits.maxQueued`).
public final class WebSocketLink: Sendable {
    let connection: UInt64
    private let mailbox: Mailbox
    let queued = Atomic<Int>(0)
    /// Set by the session once its login joined a pool: until then the loop holds the
    /// socket only for `WebLimits.loginTimeoutMillis`.
    let loggedIn = Atomic<Bool>(false)

    init(connection: UInt64, mailbox: Mailbox) {
        self.connection = connection
        self.mailbox = mailbox
    }

    public var queuedBytes: Int { queued.load(ordering: .relaxed) }

    public func send(text: String) {
        let frame = WebSocketFrame.encode(.text, Array(text.utf8))
        queued.add(frame.count, ordering: .relaxed)
        mailbox.post(.send(connection: connection, frame: frame))
    }

    /// Sends a close frame after what is queued, then the loop closes the socket.
    public func close(_ code: UInt16 = WebSocketCloseCode.normal, reason: String = "") {
        mailbox.post(.close(connection: connection, code: code, reason: reason))
    }
}
