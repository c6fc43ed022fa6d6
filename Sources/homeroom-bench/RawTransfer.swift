@preconcurrency import Glibc
import HomeroomNode
import HomeroomNNG

/// The raw baseline of a large reply: nng REQ/REP on tcp loopback, a small request
/// answered with `replyBytes` prebuilt bytes, nothing decoded. What a join's snapshot
/// or a sync's patch would cost if moving the bytes were all there was to it.
enum RawTransfer {
    struct Result {
        var best: Double
        var median: Double
        var count: Int
    }

    static func requestReply(replyBytes: Int, count: Int) -> Result? {
        guard let rep = try? NNGSocket(.rep), let req = try? NNGSocket(.req) else { return nil }
        defer { _ = req.close(); _ = rep.close() }
        guard let url = try? rep.listen("tcp://127.0.0.1:0") else { return nil }
        try? req.setMaxReceiveSize(max(replyBytes * 2, 1 << 20))
        try? req.setReceiveTimeout(.seconds(10))
        guard (try? req.dial(url, blocking: true)) != nil else { return nil }
        let reply = [UInt8](repeating: 0x5A, count: max(replyBytes, 1))
        // Answers every request with the reply; an empty request ends it.
        let server = RawThread {
            while let request = try? rep.receive() {
                try? rep.send(request.isEmpty ? [] : reply)
                if request.isEmpty { return }
            }
        }
        defer {
            _ = try? req.send([UInt8]())
            _ = try? req.receive()
            server.join()
        }
        var samples: [Double] = []
        for _ in 0..<count {
            var received = 0
            let seconds = measure {
                guard (try? req.send([1])) != nil, let bytes = try? req.receive() else { return }
                received = bytes.count
            }
            guard received == reply.count else { return nil }
            samples.append(seconds)
        }
        samples.sort()
        guard let best = samples.first else { return nil }
        return Result(best: best, median: samples[samples.count / 2], count: samples.count)
    }
}

/// A plain POSIX thread for the baseline's server side.
final class RawThread: Sendable {
    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private let thread: pthread_t

    init(_ run: @escaping @Sendable () -> Void) {
        var thread = pthread_t()
        let body = Unmanaged.passRetained(Body(run)).toOpaque()
        let created = pthread_create(&thread, nil, { raw in
            Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue().run()
            return nil
        }, body)
        precondition(created == 0, "pthread_create failed: \(created)")
        self.thread = thread
    }

    func join() { pthread_join(thread, nil) }
}
