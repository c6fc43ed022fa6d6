@preconcurrency import Glibc
import Foundation
import Testing
import Synchronization
import HomeroomTestSupport
@testable import HomeroomNode

/// The /healthz and /metrics server: routes, errors, and slow clients that hold nothing up.
@Suite struct HTTPEndpointTests {
    func get(_ port: UInt16, _ request: String) -> String {
        guard let c = RawConnection(port: port) else { return "" }
        defer { c.close() }
        c.write(Array(request.utf8))
        return String(decoding: c.read(1 << 20), as: UTF8.self)
    }

    /// A POST route runs only with its X-Homeroom-Action header (a web page cannot send
    /// one without a preflight), never on GET.
    @Test func aPostRouteNeedsItsActionHeader() throws {
        let calls = Mutex(0)
        let endpoint = try HTTPEndpoint(address: "http://127.0.0.1:0", routes: [
            "POST /drain": {
                calls.withLock { $0 += 1 }
                return HTTPEndpoint.Response(status: 202, contentType: "application/json", body: "{}\n")
            },
        ])
        defer { endpoint.stop() }
        #expect(get(endpoint.port, "POST /drain HTTP/1.0\r\nContent-Type: text/plain\r\n\r\n").hasPrefix("HTTP/1.1 403 "))
        #expect(get(endpoint.port, "POST /drain HTTP/1.0\r\nX-Homeroom-Action: other\r\n\r\n").hasPrefix("HTTP/1.1 403 "))
        #expect(get(endpoint.port, "GET /drain HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
        #expect(calls.withLock { $0 } == 0)
        #expect(get(endpoint.port, "POST /drain HTTP/1.0\r\nx-homeroom-action:  drain\r\n\r\n").hasPrefix("HTTP/1.1 202 "))
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func routesErrorsAndSlowClients() throws {
        let endpoint = try HTTPEndpoint(address: "http://127.0.0.1:0", routes: [
            "/healthz": { HTTPEndpoint.Response(status: 200, contentType: "application/json", body: "{\"status\":\"ok\"}\n") },
        ])
        defer { endpoint.stop() }
        let ok = get(endpoint.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(ok.hasPrefix("HTTP/1.1 200 OK\r\n") && ok.contains("Content-Length: 16\r\n") && ok.hasSuffix("{\"status\":\"ok\"}\n"))
        #expect(get(endpoint.port, "GET /nope HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 404 "))
        #expect(get(endpoint.port, "POST /healthz HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 405 "))
        #expect(get(endpoint.port, "garbage\r\n\r\n").hasPrefix("HTTP/1.1 400 "))
        #expect(get(endpoint.port, "GET /" + String(repeating: "a", count: 10_000)).hasPrefix("HTTP/1.1 431 "))
        // Fifty clients that never finish their request: a real one is still answered at once.
        let slow = (0..<50).compactMap { _ in RawConnection(port: endpoint.port) }
        defer { for c in slow { c.close() } }
        for c in slow { c.write(Array("GET /hea".utf8)) }
        let started = ContinuousClock.now
        #expect(get(endpoint.port, "GET /healthz HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        #expect(ContinuousClock.now - started < .seconds(2), "slow clients held up a fast one")
        // And the slow ones are dropped after the 5 s request deadline.
        // (each wait is at most 3 s: two of them cover the deadline)
        let closed = slow.first.map { $0.peerClosed() || $0.peerClosed() } ?? false
        #expect(closed, "a client that never finished its request was kept past the deadline")
    }

    @Test func aBadAddressSaysWhatToUse() {
        #expect(throws: TransportError.self) { _ = try HTTPEndpoint(address: "tcp://127.0.0.1:0", routes: [:]) }
    }
}
