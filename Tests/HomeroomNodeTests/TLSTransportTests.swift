@preconcurrency import Glibc
import Foundation
import Synchronization
import Testing
@testable import HomeroomNode

/// The SP transport's `tls+tcp://` in one process: request/reply and pub/sub with large
/// and many messages. (nng's own tls+tcp, through pynng's mbedtls, is Tests/interop's.)
/// The TLS contexts are per process (`TransportTLS`), so this suite sets them once, from
/// certificates `Deploy/tls-certs.sh` makes; the only other suite of this target that
/// uses TLS (`RedirectTrustTests`) takes them through `directory()`.
@Suite("TLS transport", .serialized)
struct TLSTransportTests {
    static let certificates: String? = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-tls-unit-\(UInt32.random(in: 0...UInt32.max))").path
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = ["Deploy/tls-certs.sh", directory]
        script.standardError = FileHandle.nullDevice
        guard (try? script.run()) != nil else { return nil }
        script.waitUntilExit()
        guard script.terminationStatus == 0 else { return nil }
        do {
            try TransportTLS.configure(TLSSettings(certificateFile: directory + "/node.pem", keyFile: directory + "/node.key", authorityFile: directory + "/ca.pem"))
        } catch {
            return nil
        }
        // The contexts hold what they loaded: the files can go now.
        try? FileManager.default.removeItem(atPath: directory)
        return directory
    }()

    static func directory() throws -> String {
        try #require(certificates, "Deploy/tls-certs.sh or TransportTLS.configure failed")
    }

    @Test("req/rep over tls+tcp: 100 requests at once, and a 12 MiB reply through the 256 KiB encryption window")
    func requestReply() async throws {
        _ = try Self.directory()
        let replier = try SPReplier(limits: SPLimitsConfig(maxMessageBytes: 1 << 20))
        let requester = try SPRequester(limits: SPLimitsConfig(maxMessageBytes: 64 << 20))
        defer { requester.close(); replier.close() }
        let bound = try replier.listen("tls+tcp://127.0.0.1:0")
        #expect(bound.hasPrefix("tls+tcp://127.0.0.1:") && !bound.hasSuffix(":0"))
        let big = (0..<(12 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try replier.serve(workers: 3) { request in request == Array("big".utf8) ? big : request.reversed() }
        try requester.dial(bound)
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<100 {
                group.addTask {
                    let body = Array("request \(i)".utf8)
                    return (try? await requester.request(body, timeout: .seconds(20))) == body.reversed()
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 100 && results.allSatisfy { $0 })
        let reply: [UInt8] = try await requester.request(Array("big".utf8), timeout: .seconds(30))
        #expect(reply == big, "the 12 MiB reply came back altered (\(reply.count) bytes)")
    }

    @Test("pub/sub over tls+tcp: 3,000 messages of 1 KiB arrive whole and in order")
    func pubSub() throws {
        _ = try Self.directory()
        let publisher = try SPPublisher()
        defer { publisher.close() }
        let bound = try publisher.listen("tls+tcp://127.0.0.1:0")
        let received = Mutex<[[UInt8]]>([])
        let subscriber = try SPSubscriber { message in received.withLock { $0.append(message) } }
        defer { subscriber.close() }
        subscriber.subscribe(Array("t/".utf8))
        try subscriber.dial(bound)
        #expect(eventually(5) {
            try? publisher.send(topic: Array("t/".utf8), payload: Array("probe".utf8))
            usleep(5_000)
            return received.withLock { !$0.isEmpty }
        }, "the subscriber never attached over TLS")
        received.withLock { $0.removeAll() }
        let count = 3_000
        for i in 0..<count {
            var payload = [UInt8](repeating: UInt8(i % 251), count: 1_024)
            withUnsafeBytes(of: UInt32(i).bigEndian) { payload.replaceSubrange(0..<4, with: $0) }
            try publisher.send(topic: Array("t/".utf8), payload: payload)
            if i % 500 == 499 { usleep(20_000) } // the subscriber's queue holds 8,192; pace well under it
        }
        #expect(eventually(20) { received.withLock { $0.filter { $0.count == 1_026 }.count } >= count })
        let numbers = received.withLock { $0 }.filter { $0.count == 1_026 }.map { message in
            message[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        #expect(numbers == (0..<UInt32(count)).map { $0 }, "out of order or missing: \(numbers.count) of \(count)")
    }

    @Test("a tls+tcp:// address without TLS set up for that side is refused with what to give")
    func unconfiguredSides() throws {
        _ = try Self.directory()
        // This process has both sides; a fresh context without a key shows the server error.
        #expect(throws: TransportError.self) { try TLSContext(side: .server, settings: TLSSettings(authorityFile: "/nonexistent")) }
        let missingKey = #expect(throws: TransportError.self) {
            try TLSContext(side: .server, settings: TLSSettings(certificateFile: "/etc/hostname"))
        }
        #expect(missingKey?.reason.contains("--tls-key") == true)
        let unreadable = #expect(throws: TransportError.self) {
            try TLSContext(side: .client, settings: TLSSettings(authorityFile: "/nonexistent/ca.pem"))
        }
        #expect(unreadable?.reason.contains("cannot read the certificate authority (--tls-ca) /nonexistent/ca.pem") == true)
        #expect(unreadable?.code == .tls)
    }
}
