@preconcurrency import Glibc
import CNNG
import HomeroomNode
import Synchronization

/// Many SUB sockets on one address and topic, received asynchronously (one nng aio
/// each, no thread per socket): the members of a large room, for benchmarks.
///
/// `handler(index, bytes)` runs on nng's callback threads, several at once (each
/// socket's messages in order); the bytes are valid only during the call.
public final class NNGSubscriberGroup: Sendable {
    final class Member: Sendable {
        let index: Int
        let socket: NNGSocket
        /// The nng_aio, as its address (C pointers are not Sendable); 0 once freed.
        let aioAddress = Atomic<UInt>(0)
        var aio: OpaquePointer? { OpaquePointer(bitPattern: aioAddress.load(ordering: .acquiring)) }
        let group: Shared

        init(index: Int, socket: NNGSocket, group: Shared) {
            self.index = index
            self.socket = socket
            self.group = group
        }

        func arm() {
            guard !group.closing.load(ordering: .acquiring), let aio else { return }
            nng_recv_aio(socket.raw, aio)
        }
    }

    final class Shared: Sendable {
        let closing = Atomic<Bool>(false)
        let received = Atomic<Int>(0)
        let handler: @Sendable (Int, UnsafeRawBufferPointer) -> Void
        init(handler: @escaping @Sendable (Int, UnsafeRawBufferPointer) -> Void) { self.handler = handler }
    }

    private let members: [Member]
    private let shared: Shared
    private let retained: [Unmanaged<Member>]

    /// Opens `count` SUB sockets, each dialed to `url` and subscribed to `topic`. A dial
    /// that times out is tried again, up to `dialAttempts` times in all (nng gives a
    /// ws:// upgrade 2 s, which a loaded machine can miss).
    public init(count: Int, url: String, topic: [UInt8], receiveBuffer: Int = 1_024, dialAttempts: Int = 1,
                handler: @escaping @Sendable (Int, UnsafeRawBufferPointer) -> Void) throws(NNGError) {
        let shared = Shared(handler: handler)
        var members: [Member] = []
        var retained: [Unmanaged<Member>] = []
        members.reserveCapacity(count)
        do {
            for index in 0..<count {
                let socket = try NNGSocket(.sub)
                try socket.setReceiveBuffer(receiveBuffer)
                try socket.setMaxReceiveSize(64 << 20)
                try socket.subscribe(topic)
                let member = Member(index: index, socket: socket, group: shared)
                let unmanaged = Unmanaged.passRetained(member)
                retained.append(unmanaged)
                var aio: OpaquePointer?
                try nngCheck(nng_aio_alloc(&aio, subscriberGroupCallback, unmanaged.toOpaque()), "allocate a receive aio")
                member.aioAddress.store(UInt(bitPattern: aio.map { Int(bitPattern: UnsafeRawPointer($0)) } ?? 0), ordering: .releasing)
                members.append(member)
                var attempt = 1
                while true {
                    do {
                        try socket.dial(url, blocking: true)
                        break
                    } catch where error.code == .timedOut && attempt < dialAttempts {
                        attempt += 1
                    }
                }
                member.arm()
            }
        } catch {
            shared.closing.store(true, ordering: .releasing)
            Self.release(members, retained)
            throw error
        }
        self.members = members
        self.shared = shared
        self.retained = retained
    }

    deinit { close() }

    public var count: Int { members.count }
    /// Messages received by all members so far.
    public var received: Int { shared.received.load(ordering: .relaxed) }

    /// Closes every socket (pending receives end with "closed") and frees the aios.
    public func close() {
        guard !shared.closing.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Self.release(members, retained)
    }

    /// Closes the sockets, then frees their aios. Close only when no message flows to
    /// them any more: nng 1.5.2 can hang in `nng_close` otherwise (issue 1543). If one
    /// close does hang, every later one would too (the nng reaper is stuck), so the
    /// rest are left open, with their aios, until the process exits.
    private static func release(_ members: [Member], _ retained: [Unmanaged<Member>]) {
        let stalledBefore = NNGSocket.stalledCloses
        var closed = 0
        for member in members {
            guard NNGSocket.stalledCloses == stalledBefore else { break }
            member.socket.close(timeout: .milliseconds(500))
            closed += 1
        }
        guard NNGSocket.stalledCloses == stalledBefore else { return }
        for member in members.prefix(closed) {
            if let aio = OpaquePointer(bitPattern: member.aioAddress.exchange(0, ordering: .acquiringAndReleasing)) {
                nng_aio_stop(aio)
                nng_aio_free(aio)
            }
        }
        for unmanaged in retained { unmanaged.release() }
    }

    fileprivate static func completed(_ member: Member) {
        guard let aio = member.aio else { return }
        let rv = nng_aio_result(aio)
        if rv == 0, let message = nng_aio_get_msg(aio) {
            let body = UnsafeRawBufferPointer(start: nng_msg_body(message), count: nng_msg_len(message))
            member.group.received.add(1, ordering: .relaxed)
            member.group.handler(member.index, body)
            nng_msg_free(message)
        }
        if rv == 0 || rv == Int32(bitPattern: NNG_ETIMEDOUT.rawValue) { member.arm() }
    }
}

private func subscriberGroupCallback(_ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    NNGSubscriberGroup.completed(Unmanaged<NNGSubscriberGroup.Member>.fromOpaque(argument).takeUnretainedValue())
}
