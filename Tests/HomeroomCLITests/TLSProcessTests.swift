import Foundation
import HomeroomTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// TLS (`tls+tcp://`) with real `homeroom node` processes and the CLI, certificates
/// made by `Deploy/tls-certs.sh` as docs/SECURITY.md ("TLS") says.
@Suite(.serialized) struct TLSProcessTests {
    /// A CA and a node certificate (localhost, 127.0.0.1) in a temporary directory.
    final class Certificates {
        let directory: String
        var authority: String { directory + "/ca.pem" }
        var nodeFlags: [String] { ["--tls-cert", directory + "/node.pem", "--tls-key", directory + "/node.key", "--tls-ca", authority] }

        init(_ label: String) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-tls-\(label)-\(UInt32.random(in: 0...UInt32.max))").path
            let made = try CLI.run(["Deploy/tls-certs.sh", directory], executable: "/bin/bash")
            guard made.status == 0 else { throw NodeProcessError("Deploy/tls-certs.sh failed: \(made.stderr)") }
        }

        func remove() { try? FileManager.default.removeItem(atPath: directory) }
    }

    static func tlsNode(_ name: String, _ certificates: Certificates, seeds: [String] = [], extra: [String] = []) throws -> NodeChild {
        try NodeChild(name: name, seeds: seeds, listen: "tls+tcp://127.0.0.1:0", publish: "tls+tcp://127.0.0.1:0",
                      extra: certificates.nodeFlags + extra)
    }

    static func run(_ arguments: [String], timeout: Double = 20) throws -> CLI.Result {
        let result = try CLI.run(arguments, timeout: timeout)
        #expect(!result.timedOut, "\(arguments) timed out")
        return result
    }

    static func waitUntil(_ seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return true }
            usleep(100_000)
        }
        return try condition()
    }

    @Test func threeNodesOnTLSFormAClusterAndTheCLIJoinsWritesAndListsThroughIt() throws {
        let certificates = try Certificates("cluster")
        defer { certificates.remove() }
        let first = try Self.tlsNode("tls-a", certificates)
        defer { first.stop() }
        let second = try Self.tlsNode("tls-b", certificates, seeds: [first.listen])
        defer { second.stop() }
        let third = try Self.tlsNode("tls-c", certificates, seeds: [first.listen])
        defer { third.stop() }
        #expect(first.listen.hasPrefix("tls+tcp://127.0.0.1:") && third.publish.hasPrefix("tls+tcp://127.0.0.1:"))
        let ca = ["--tls-ca", certificates.authority]

        // The nodes find each other over TLS: each lists the other two alive.
        let members = try Self.waitUntil(15) {
            let listed = try Self.run(["cluster", "--node", second.listen, "--json"] + ca)
            return listed.status == 0 && [first.listen, third.listen].allSatisfy(listed.stdout.contains)
                && listed.stdout.components(separatedBy: "\"alive").count >= 4
        }
        if !members {
            let listed = try Self.run(["cluster", "--node", second.listen] + ca)
            Issue.record("the TLS nodes did not form a cluster: \(listed.stdout) \(listed.stderr)")
        }

        // A one-shot write through one node reaches the other two (node-to-node over TLS).
        let room = ["--room", "tls-room"]
        let raised = try Self.run(["hand", "up", "--user", "bob", "--node", third.listen] + room + ca)
        #expect(raised.status == 0 && raised.stdout == "your hand is up\n", "\(raised.stderr)")
        let staged = try Self.run(["stage", "add", "bob", "--node", third.listen] + room + ca)
        #expect(staged.status == 0, "\(staged.stderr)")
        for node in [first, second, third] {
            let seen = try Self.waitUntil(10) {
                let roster = try Self.run(["roster", "--json", "--node", node.listen] + room + ca)
                return roster.status == 0 && roster.stdout.contains("\"stage\":[\"bob\"]")
            }
            #expect(seen, "\(node.name) never showed bob on stage")
        }
        // HOMEROOM_TLS_CA does what --tls-ca does.
        let fromEnvironment = try CLI.run(["roster", "--node", first.listen] + room, environment: ["HOMEROOM_TLS_CA": certificates.authority])
        #expect(fromEnvironment.status == 0 && fromEnvironment.stdout.contains("bob"), "\(fromEnvironment.stderr)")
    }

    @Test func clientsRefuseWhatTheyCannotVerifyAndSayWhyAndTheNodeLeaksNothing() throws {
        let certificates = try Certificates("refusals")
        defer { certificates.remove() }
        let other = try Certificates("stranger")
        defer { other.remove() }
        let node = try Self.tlsNode("tls-refusals", certificates)
        defer { node.stop() }
        let plain = try NodeChild(name: "plain-refusals")
        defer { plain.stop() }
        let room = ["--room", "tls-refusals", "--timeout-ms", "500"]
        #expect(try Self.run(["hand", "up", "--user", "ann", "--node", node.listen, "--tls-ca", certificates.authority] + room).status == 0)
        let baseline = ProcessCounts.descriptors(of: node.process.processIdentifier)

        let wrongAuthority = try Self.run(["hand", "up", "--user", "ann", "--node", node.listen, "--tls-ca", other.authority] + room)
        #expect(wrongAuthority.status == 1)
        #expect(wrongAuthority.stderr.contains("TLS failed: the node's certificate did not verify"), "\(wrongAuthority.stderr)")

        let plainToTLS = try Self.run(["hand", "up", "--user", "ann", "--node", node.listen.replacingOccurrences(of: "tls+tcp://", with: "tcp://")] + room)
        #expect(plainToTLS.status == 1)
        #expect(plainToTLS.stderr.contains("a tls+tcp:// node (dial it as tls+tcp://)"), "\(plainToTLS.stderr)")

        let tlsToPlain = try Self.run(["hand", "up", "--user", "ann", "--node", plain.listen.replacingOccurrences(of: "tcp://", with: "tls+tcp://"),
                                       "--tls-ca", certificates.authority] + room)
        #expect(tlsToPlain.status == 1)
        #expect(tlsToPlain.stderr.contains("the address does not speak TLS"), "\(tlsToPlain.stderr)")

        let noAuthority = try Self.run(["hand", "up", "--user", "ann", "--node", node.listen] + room)
        #expect(noAuthority.status == 64)
        #expect(noAuthority.stderr.contains("a tls+tcp:// node needs --tls-ca"), "\(noAuthority.stderr)")

        let nodeWithoutKey = try Self.run(["node", "--name", "half", "--listen", "tls+tcp://127.0.0.1:0", "--publish", "tcp://127.0.0.1:0",
                                           "--tls-cert", certificates.directory + "/node.pem"])
        #expect(nodeWithoutKey.status == 64)
        #expect(nodeWithoutKey.stderr.contains("needs --tls-cert, --tls-key and --tls-ca"), "\(nodeWithoutKey.stderr)")

        // Garbage and half-open TLS handshakes, 40 of them: every descriptor comes back.
        let port = try #require(UInt16(node.listen.split(separator: ":").last ?? ""))
        for round in 0..<40 {
            guard let raw = RawConnection(port: port) else { continue }
            if round % 2 == 0 { raw.write(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) } else { raw.write([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2]) }
            raw.close()
        }
        let recovered = Self.waitUntil(10) { ProcessCounts.descriptors(of: node.process.processIdentifier) <= baseline + 2 }
        #expect(recovered, "descriptors: \(baseline) before, \(ProcessCounts.descriptors(of: node.process.processIdentifier)) after")
        #expect(try Self.run(["hand", "down", "--user", "ann", "--node", node.listen, "--tls-ca", certificates.authority] + room).status == 0,
                "the node stopped serving after the bad handshakes")
    }

    @Test func aReaderBetweenClientAndNodeSeesNoTokenRoomOrTextOverTLSButDoesOverTCP() throws {
        let certificates = try Certificates("reader")
        defer { certificates.remove() }
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-tls-keys-\(UInt32.random(in: 0...UInt32.max))").path
        defer { try? FileManager.default.removeItem(atPath: keys) }
        #expect(try CLI.run(["keys", "generate", "--out", keys]).status == 0)
        let closed = ["--token-key", keys + "/token-signing.pub", "--cluster-key", keys + "/cluster.key"]
        let secure = try Self.tlsNode("tls-reader", certificates, extra: closed)
        defer { secure.stop() }
        let clear = try NodeChild(name: "tcp-reader", extra: closed)
        defer { clear.stop() }
        let room = "secret-room-\(UInt32.random(in: 0...UInt32.max))"
        let made = try CLI.run(["token", "create", "--key", keys + "/token-signing.key", "--room", room, "--user", "tina", "--role", "teacher"])
        let token = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(made.status == 0 && token.hasPrefix("hr1."))
        let signature = String(token.split(separator: ".").last ?? "")

        for (node, isTLS) in [(clear, false), (secure, true)] {
            let port = try #require(UInt16(node.listen.split(separator: ":").last ?? ""))
            let relay = try Relay(to: port)
            defer { relay.stop() }
            let text = "page-\(UInt32.random(in: 0...UInt32.max))"
            let scheme = isTLS ? "tls+tcp" : "tcp"
            let sent = try Self.run(["send", text, "--token", token, "--node", "\(scheme)://127.0.0.1:\(relay.port)", "--tls-ca", certificates.authority])
            #expect(sent.status == 0, "\(scheme): \(sent.stderr)")
            let seen = relay.bytes
            #expect(seen.count > 200, "\(scheme): the relay carried only \(seen.count) bytes")
            let found = [room, signature, text].filter { Self.contains(seen, $0) }
            if isTLS {
                #expect(found.isEmpty, "over TLS the relay read \(found)")
                #expect(seen.first == 0x16, "not a TLS record first: \(Array(seen.prefix(4)))")
            } else {
                // The control: the same reader on tcp:// reads them all, so the check above can fail.
                #expect(found.count == 3, "over tcp:// the relay read only \(found)")
            }
        }
    }

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let bytes = Array(needle.utf8)
        guard !bytes.isEmpty, haystack.count >= bytes.count else { return false }
        for start in 0...(haystack.count - bytes.count) where haystack[start] == bytes[0] && haystack[start..<(start + bytes.count)].elementsEqual(bytes) {
            return true
        }
        return false
    }
}

/// A TCP relay on 127.0.0.1 that forwards to `port` and records every byte both ways:
/// the network reader of the threat model. Threads end when either side closes; `stop`
/// closes every descriptor it opened.
final class Relay: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let target: UInt16
    private let recorded = Mutex<[UInt8]>([])
    private let descriptors = Mutex<[Int32]>([])
    private let stopped = Atomic<Bool>(false)

    init(to target: UInt16) throws {
        self.target = target
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 16) == 0 else { Glibc.close(fd); throw NodeProcessError("relay: cannot listen") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let acceptor = Thread { [self] in acceptLoop() }
        acceptor.start()
    }

    var bytes: [UInt8] { recorded.withLock { $0 } }

    private func acceptLoop() {
        while !stopped.load(ordering: .acquiring) {
            var poll = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 100) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            guard let upstream = RawConnection(port: target) else { Glibc.close(client); continue }
            let server = upstream.fd
            descriptors.withLock { $0.append(contentsOf: [client, server]) }
            for (from, to) in [(client, server), (server, client)] {
                Thread { [self] in pumpLoop(from: from, to: to) }.start()
            }
        }
    }

    private func pumpLoop(from: Int32, to: Int32) {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while !stopped.load(ordering: .acquiring) {
            var poll = pollfd(fd: from, events: Int16(POLLIN), revents: 0)
            guard Glibc.poll(&poll, 1, 100) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(from, $0.baseAddress, $0.count) }
            guard n > 0 else { shutdown(to, Int32(SHUT_WR)); return }
            recorded.withLock { $0.append(contentsOf: buffer[0..<n]) }
            _ = buffer.withUnsafeBytes { Glibc.send(to, $0.baseAddress, n, Int32(MSG_NOSIGNAL)) }
        }
    }

    func stop() {
        stopped.store(true, ordering: .releasing)
        // Threads poll with a 100 ms timeout: give them time to see it before closing.
        usleep(300_000)
        for fd in descriptors.withLock({ $0 }) { Glibc.close(fd) }
        Glibc.close(listener)
    }
}
