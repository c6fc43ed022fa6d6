@preconcurrency import Glibc
import Foundation
import Synchronization
import Testing
import HomeroomTestSupport

/// A thousand slow HTTP clients (one byte every 250 ms, reconnecting when dropped) at a
/// real node's --http port: its liveness probe is still answered within the kubelet's
/// second, so a k8s liveness probe never restarts a healthy node under them (issue 39).
@Suite(.serialized) struct SlowHTTPClientsProcessTests {
    /// A connection that dials without waiting (the backlog may be full: a blocking
    /// connect would stall the attacker, not the node).
    struct SlowConnection {
        var fd: Int32

        init?(port: UInt16) {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { return nil }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rv = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if rv != 0 && errno != EINPROGRESS { Glibc.close(fd); return nil }
        }

        /// Sends one byte; false once the node dropped the connection.
        func trickle(_ byte: UInt8) -> Bool {
            var one = byte
            let sent = Glibc.send(fd, &one, 1, Int32(MSG_NOSIGNAL))
            return sent == 1 || (sent < 0 && (errno == EAGAIN || errno == ENOTCONN || errno == EINPROGRESS))
        }

        func close() { Glibc.close(fd) }
    }

    @Test func aThousandSlowClientsLeaveTheProbeAnsweredWithinASecond() throws {
        let node = try NodeProcess(name: "slow-http", extra: ["--http", "http://127.0.0.1:0"])
        defer { node.stop() }
        guard let port = UInt16(node.http.split(separator: ":").last ?? "") else {
            Issue.record("the node did not say where --http listens: \(node.http)")
            return
        }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        var slow = (0..<1_000).compactMap { _ in SlowConnection(port: port) }
        #expect(slow.count == 1_000, "only \(slow.count) slow connections opened")
        defer { for connection in slow { connection.close() } }
        let probes = Mutex<[Duration]>([])
        let failures = Mutex<[String]>([])
        let done = Atomic<Bool>(false)
        // Probes from another thread, as a kubelet would, while the trickle goes on.
        let prober = Thread {
            for round in 0..<6 {
                Thread.sleep(forTimeInterval: 0.5)
                let started = ContinuousClock.now
                guard let probe = RawConnection(port: port) else {
                    failures.withLock { $0.append("probe \(round): connect failed") }
                    continue
                }
                probe.write(request)
                let answer = String(decoding: probe.read(1 << 16), as: UTF8.self)
                probe.close()
                let took = ContinuousClock.now - started
                if answer.hasPrefix("HTTP/1.1 200 ") {
                    probes.withLock { $0.append(took) }
                } else {
                    failures.withLock { $0.append("probe \(round): \(answer.prefix(40).debugDescription) after \(took)") }
                }
            }
            done.store(true, ordering: .releasing)
        }
        prober.start()
        var reconnects = 0
        // One byte of "GET /healthz..." every 250 ms per connection, for as long as the
        // probes take (bounded: 40 rounds is 10 s).
        for round in 0..<40 where !done.load(ordering: .acquiring) {
            let byte = request[round % request.count]
            for index in slow.indices where !slow[index].trickle(byte) {
                slow[index].close()
                if let again = SlowConnection(port: port) { slow[index] = again; reconnects += 1 }
            }
            Thread.sleep(forTimeInterval: 0.25)
        }
        for _ in 0..<100 where !done.load(ordering: .acquiring) { Thread.sleep(forTimeInterval: 0.1) }
        let answered = probes.withLock { $0 }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(answered.count == 6, "probes answered: \(answered)")
        // What restarts a node: Deploy/k8s/statefulset.yaml's livenessProbe fails after
        // `failureThreshold` (3) probes in a row that time out (the kubelet's default
        // timeoutSeconds, 1 s). Idle, each probe here takes a few milliseconds; one slow
        // probe on a loaded machine is not a restart, three in a row are.
        let probeTimeout = Duration.seconds(1), failureThreshold = 3
        var run = 0, longestRun = 0
        for took in answered {
            run = took >= probeTimeout ? run + 1 : 0
            longestRun = max(longestRun, run)
        }
        print("SlowHTTPClientsProcessTests: probes answered in \(answered) (slow reconnects: \(reconnects))")
        #expect(longestRun < failureThreshold, "\(longestRun) probes in a row waited a second or more behind slow clients: \(answered) (slow reconnects: \(reconnects))")
        // The node is still up.
        #expect(node.process.isRunning)
    }
}
