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

    /// Operator routes (drain, the listings) need the operator token when the node has one,
    /// from loopback too; /healthz stays open. Without a token they answer loopback only.
    @Test func operatorRoutesNeedTheTokenAndProbesDoNot() throws {
        let token: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xFF) }
        let drains = Mutex(0)
        let routes: [String: HTTPEndpoint.Route] = [
            "POST /drain": {
                drains.withLock { $0 += 1 }
                return HTTPEndpoint.Response(status: 202, contentType: "application/json", body: "{}\n")
            },
            "/rooms": { HTTPEndpoint.Response(status: 200, contentType: "application/json", body: "[\"secret-room\"]\n") },
            "/healthz": { HTTPEndpoint.Response(status: 200, contentType: "application/json", body: "{}\n") },
        ]
        let endpoint = try HTTPEndpoint(address: "http://127.0.0.1:0", routes: routes,
                                        access: HTTPEndpoint.OperatorAccess(routes: ["POST /drain", "/rooms"], token: token))
        defer { endpoint.stop() }
        let action = "X-Homeroom-Action: drain\r\n"
        let wrong = "Authorization: Bearer \(KeyFiles.hex(token.dropLast() + [0]))\r\n", right = "Authorization: bearer  \(KeyFiles.hex(token))\r\n"
        for headers in ["", wrong, "Authorization: Bearer \(KeyFiles.hex(Array(token.prefix(16))))\r\n", "Authorization: Basic \(KeyFiles.hex(token))\r\n"] {
            let refused = get(endpoint.port, "POST /drain HTTP/1.0\r\n\(action)\(headers)\r\n")
            #expect(refused.hasPrefix("HTTP/1.1 401 ") && refused.contains("--http-token-file"), "\(headers): \(refused)")
            let listing = get(endpoint.port, "GET /rooms HTTP/1.0\r\n\(headers)\r\n")
            #expect(listing.hasPrefix("HTTP/1.1 401 ") && !listing.contains("secret-room"), "\(headers): \(listing)")
        }
        #expect(drains.withLock { $0 } == 0)
        #expect(get(endpoint.port, "GET /healthz HTTP/1.0\r\n\r\n").hasPrefix("HTTP/1.1 200 "))
        #expect(get(endpoint.port, "GET /rooms HTTP/1.0\r\n\(right)\r\n").contains("secret-room"))
        // The token does not stand in for the action header (a page must not drain with a stolen header set).
        #expect(get(endpoint.port, "POST /drain HTTP/1.0\r\n\(right)\r\n").hasPrefix("HTTP/1.1 403 "))
        #expect(get(endpoint.port, "POST /drain HTTP/1.0\r\n\(action)\(right)\r\n").hasPrefix("HTTP/1.1 202 "))
        #expect(drains.withLock { $0 } == 1)

        // No token: loopback peers only (this test's peer is loopback).
        let open = try HTTPEndpoint(address: "http://127.0.0.1:0", routes: routes,
                                    access: HTTPEndpoint.OperatorAccess(routes: ["POST /drain", "/rooms"], token: nil))
        defer { open.stop() }
        #expect(get(open.port, "GET /rooms HTTP/1.0\r\n\r\n").contains("secret-room"))
        let access = HTTPEndpoint.OperatorAccess(routes: ["/rooms"], token: nil)
        guard case .refused(403, let why) = access.check(route: "/rooms", headers: [], loopback: false) else {
            Issue.record("a listing was served to a peer off loopback without a token")
            return
        }
        #expect(why.contains("--http-token-file"))
        #expect(access.check(route: "/healthz", headers: [], loopback: false) == .allowed)
    }

    @Test func loopbackPeersAreTellingApart() {
        func v4(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Bool {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyBytes(from: [a, b, c, d]) }
            return withUnsafeBytes(of: &address) { HTTPEndpoint.isLoopback(family: AF_INET, address: $0) }
        }
        func v6(_ bytes: [UInt8]) -> Bool {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafeBytes(of: &address) { HTTPEndpoint.isLoopback(family: AF_INET6, address: $0) }
        }
        #expect(v4(127, 0, 0, 1) && v4(127, 3, 2, 1))
        #expect(!v4(10, 77, 0, 11) && !v4(0, 0, 0, 0) && !v4(192, 168, 127, 1))
        #expect(v6([UInt8](repeating: 0, count: 15) + [1]))
        #expect(v6([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]))
        #expect(!v6([UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 10, 0, 0, 1]) && !v6([0xFE, 0x80] + [UInt8](repeating: 0, count: 13) + [1]))
        #expect(HTTPEndpoint.OperatorAccess.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!HTTPEndpoint.OperatorAccess.constantTimeEqual([1, 2, 3], [1, 2]) && !HTTPEndpoint.OperatorAccess.constantTimeEqual([], [0]))
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
        // And the slow ones are dropped after the 2 s request deadline.
        // (each wait is at most 3 s: two of them cover the deadline)
        let closed = slow.first.map { $0.peerClosed() || $0.peerClosed() } ?? false
        #expect(closed, "a client that never finished its request was kept past the deadline")
    }

    @Test func aBadAddressSaysWhatToUse() {
        #expect(throws: TransportError.self) { _ = try HTTPEndpoint(address: "tcp://127.0.0.1:0", routes: [:]) }
    }
}
