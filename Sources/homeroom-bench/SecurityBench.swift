@preconcurrency import Glibc
import Foundation
import HomeroomCore
import HomeroomNode
import HomeroomWire
import Synchronization
import HomeroomSupport

/// Security suite: what sealing a closed room's topics costs per published message
/// (against encoding the same envelope alone, in the same run), and how a victim's
/// acknowledged writes fare while another user floods one node with each request kind
/// (against the victim's quiet latency, in the same run). docs/SECURITY.md.
enum SecurityBench {
    static func run(quick: Bool, emit: (BenchRow) -> Void) {
        sealing(quick: quick, emit: emit)
        transportTLS(quick: quick, emit: emit)
        floods(quick: quick, emit: emit)
    }

    // MARK: - TLS

    /// Request/reply round trips over tls+tcp:// against tcp:// (the baseline), in the same
    /// run, same sizes: what TLS costs a client request, and a whole-room reply's transfer.
    static func transportTLS(quick: Bool, emit: (BenchRow) -> Void) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("homeroom-bench-tls-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/bin/bash")
        script.arguments = ["Deploy/tls-certs.sh", directory]
        script.standardError = FileHandle.nullDevice
        guard (try? script.run()) != nil else { return }
        script.waitUntilExit()
        guard script.terminationStatus == 0,
              (try? TransportTLS.configure(TLSSettings(certificateFile: directory + "/node.pem", keyFile: directory + "/node.key",
                                                        authorityFile: directory + "/ca.pem"))) != nil else {
            FileHandle.standardError.write(Data("bench: TLS rows skipped (run from the repository root: Deploy/tls-certs.sh makes the certificates)\n".utf8))
            return
        }
        let rounds = quick ? 500 : 3_000
        let request = [UInt8](repeating: 0x61, count: 1_024)
        let reply = [UInt8](repeating: 0x62, count: 16 << 10)
        let room = [UInt8](repeating: 0x63, count: 16 << 20)
        var baseline: (p50: Double, p99: Double, transfer: Double)?
        for scheme in ["tcp", "tls+tcp"] {
            guard let replier = try? SPReplier(limits: SPLimitsConfig(maxMessageBytes: 1 << 20)),
                  let requester = try? SPRequester(limits: SPLimitsConfig(maxMessageBytes: 64 << 20)),
                  let bound = try? replier.listen("\(scheme)://127.0.0.1:0"),
                  (try? replier.serve(workers: 2, handler: { body in body.count == 1 ? room : reply })) != nil,
                  (try? requester.dial(bound)) != nil else { continue }
            defer { requester.close(); replier.close() }
            _ = try? requester.request(request, timeout: .seconds(10)) // connected, handshake done
            var latencies: [Double] = []
            for _ in 0..<rounds {
                latencies.append(measure { _ = try? requester.request(request, timeout: .seconds(10)) } * 1e6)
            }
            latencies.sort()
            let p50 = latencies[latencies.count / 2], p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
            var transfer = Double.infinity
            for _ in 0..<3 { transfer = min(transfer, measure { _ = try? requester.request([1], timeout: .seconds(30)) }) }
            let tls = scheme == "tls+tcp"
            emit(BenchRow(suite: "security", name: "\(scheme)-request-1KiB-reply-16KiB", n: rounds, p50Micros: p50, p99Micros: p99,
                          ratioVsRaw: baseline.map { $0.p50 / p50 }, target: tls ? "p50 within 2x of tcp://" : nil,
                          note: tls ? "vs the tcp:// row of this run (ratio = tcp p50 / tls p50)" : "baseline"))
            emit(BenchRow(suite: "security", name: "\(scheme)-reply-16MiB", n: 3, opsPerSecond: Double(room.count) / transfer,
                          bytesPerOp: Double(room.count), seconds: transfer, ratioVsRaw: baseline.map { $0.transfer / transfer },
                          note: tls ? "bytes/s; vs the tcp:// row of this run" : "bytes/s; baseline"))
            if !tls { baseline = (p50, p99, transfer) }
        }
    }

    // MARK: - Sealing

    static func sealing(quick: Bool, emit: (BenchRow) -> Void) {
        let keyring = TopicKeyring()
        let topic = Topics.clientRoom("math-101")
        for size in [1, 100] {
            var sequencer = Sequencer(replica: ReplicaID(3))
            var deltas: [Delta] = []
            for index in 0..<size {
                let write = Write(author: "tina", authorRole: .teacher, authorCounter: UInt64(index + 1),
                                  operation: .setStage(user: "student-\(index)", on: index % 2 == 0))
                let now: UInt64 = 1_764_000_000_000 + UInt64(index)
                deltas.append(sequencer.stamp(write, nowMillis: now))
            }
            let envelope = WireEnvelope(roomID: "math-101", sender: ReplicaID(3), sequence: 1, clock: .zero,
                                        message: .deltaBatch(WireMessage.DeltaBatch(origin: ReplicaID(3), deltas: deltas)))
            let rounds = (quick ? 20_000 : 100_000) / (size == 1 ? 1 : 20)
            var plainBytes = 0, sealedBytes = 0
            var plain = Double.infinity, sealed = Double.infinity, opened = Double.infinity
            var sample: [UInt8] = []
            for _ in 0..<3 {
                plain = min(plain, measure {
                    for _ in 0..<rounds { plainBytes = WireCodec.encode(envelope).count }
                })
                // What the node does per message: encode, derive the room key, seal.
                sealed = min(sealed, measure {
                    for _ in 0..<rounds {
                        sample = TopicSeal.seal(WireCodec.encode(envelope), topic: topic, key: keyring.roomKey("math-101", epoch: 7))
                        sealedBytes = sample.count
                    }
                })
                let key = keyring.roomKey("math-101", epoch: 7)
                opened = min(opened, measure {
                    for _ in 0..<rounds {
                        guard case .opened = TopicSeal.open(sample[...], topic: topic[...], keys: [key]) else { fatalError("a sealed message did not open") }
                    }
                })
            }
            emit(BenchRow(suite: "security", name: "encode-\(size)-delta-envelope", n: rounds, opsPerSecond: Double(rounds) / plain,
                          bytesPerOp: Double(plainBytes), seconds: plain, note: "baseline: what an open room publishes"))
            emit(BenchRow(suite: "security", name: "encode-and-seal-\(size)-delta-envelope", n: rounds, opsPerSecond: Double(rounds) / sealed,
                          bytesPerOp: Double(sealedBytes), seconds: sealed, ratioVsRaw: plain / sealed,
                          target: size == 1 ? ">= 0.25 of encoding alone" : ">= 0.5 of encoding alone",
                          note: "closed room: key derivation and XChaCha20-Poly1305 per message; ratio is throughput vs encoding alone"))
            emit(BenchRow(suite: "security", name: "open-\(size)-delta-envelope", n: rounds, opsPerSecond: Double(rounds) / opened,
                          bytesPerOp: Double(sealedBytes), seconds: opened, note: "what each client does per message"))
        }
    }

    // MARK: - Floods

    /// One flooding user's request, as bytes ready to send.
    enum FloodKind: String, CaseIterable {
        case write, sync, join, digest, hello
    }

    static func floods(quick: Bool, emit: (BenchRow) -> Void) {
        let keys = SigningKeys.generate()
        let app = "bench"
        var config = NodeConfig(name: "bench-flood", listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0", seeds: [])
        config.tokenVerifier = TokenVerifier(publicKeys: [keys.publicKey], app: app)
        let (logger, _) = Logger.capturing(label: "bench-flood", level: .error)
        guard let node = try? ClusterNode(config: config, logger: logger) else {
            fputs("security bench: the node did not start\n", stderr)
            return
        }
        defer { node.stop() }
        func token(_ user: String, _ role: Role) -> String {
            let now = Int64(Date().timeIntervalSince1970)
            return JoinToken.create(TokenClaims(app: app, room: "flood", user: user, role: role, issuedAt: now, expiresAt: now + 3_600), keys: keys)
        }
        var options = RoomClient.Options()
        options.token = token("tina", .teacher)
        options.requestTimeoutMillis = 5_000
        let victim = RoomClient(room: "flood", user: "tina", role: .teacher, name: "Tina", endpoints: [NodeEndpoint(node.listenAddress)],
                                options: options, logger: logger)
        defer { victim.close() }
        do {
            try victim.connect()
            // A room worth pulling: 40 KiB of properties, so every full sync is heavy.
            for index in 0..<40 { _ = try victim.write(.setRoomProperty(key: "page-\(index)", value: [UInt8](repeating: 0x61, count: 1_000), cause: "fill")) }
        } catch {
            fputs("security bench: the victim could not join: \(error)\n", stderr)
            return
        }
        let writes = quick ? 200 : 1_000
        func victimLatencies() -> [Double] {
            var micros: [Double] = []
            micros.reserveCapacity(writes)
            let clock = ContinuousClock()
            for index in 0..<writes {
                let begin = clock.now
                _ = try? victim.write(.setRoomProperty(key: "slide", value: [UInt8(truncatingIfNeeded: index)], cause: "next"))
                let elapsed = clock.now - begin
                micros.append(Double(elapsed.components.seconds) * 1e6 + Double(elapsed.components.attoseconds) / 1e12)
            }
            return micros.sorted()
        }
        func percentile(_ sorted: [Double], _ fraction: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
        _ = victimLatencies()  // warm-up
        let quiet = victimLatencies()
        var quietP99 = percentile(quiet, 0.99)
        emit(BenchRow(suite: "security", name: "victim-write-quiet", n: writes, p50Micros: percentile(quiet, 0.5), p99Micros: quietP99,
                      note: "baseline: one teacher's acknowledged writes, nobody else on the node"))
        var rows: [BenchRow] = []

        let eve = Array(token("eve", .student).utf8)
        for kind in FloodKind.allCases {
            let flood = Flood(kind: kind, address: node.listenAddress, credential: eve, connections: 2)
            Sleep.milliseconds(200)
            let during = victimLatencies()
            let report = flood.stop()
            let p99 = percentile(during, 0.99)
            rows.append(BenchRow(suite: "security", name: "victim-write-during-\(kind.rawValue)-flood", n: writes,
                          opsPerSecond: report.rate, p50Micros: percentile(during, 0.5), p99Micros: p99, ratioVsRaw: p99 / quietP99,
                          target: "p99 <= 5x quiet p99",
                          note: "ops/s is the flood's requests/s (2 connections, each waiting for its reply); \(report.refusedPercent)% refused rate-limited; ratio is p99 vs the lower quiet p99"))
        }
        // Quiet again after the floods; the ratios are against the lower of the two quiet p99s.
        let after = victimLatencies()
        emit(BenchRow(suite: "security", name: "victim-write-quiet-after-floods", n: writes, p50Micros: percentile(after, 0.5),
                      p99Micros: percentile(after, 0.99), note: "baseline again, after the floods"))
        quietP99 = min(quietP99, percentile(after, 0.99))
        for var row in rows {
            row.ratioVsRaw = row.p99Micros.map { $0 / quietP99 }
            emit(row)
        }
    }

    /// A user flooding one node with one request kind from several connections, each
    /// sending its next request when the last reply came.
    final class Flood: @unchecked Sendable {
        private let stopping = Atomic<Bool>(false)
        private let sent = Atomic<Int>(0)
        private let refused = Atomic<Int>(0)
        private var threads: [Thread] = []
        private let done = DispatchGroup()
        private let started = Date()

        init(kind: FloodKind, address: String, credential: [UInt8], connections: Int) {
            for connection in 0..<connections {
                done.enter()
                let thread = Thread { [self] in
                    defer { done.leave() }
                    guard let requester = try? SPRequester() else { return }
                    defer { requester.close() }
                    guard (try? requester.dial(address)) != nil else { return }
                    var round = 0
                    if kind == .write {
                        // Writes need a session: join once.
                        _ = try? requester.request(Self.request(.join, credential: credential, round: -1 - connection), timeout: .seconds(5))
                    }
                    while !stopping.load(ordering: .relaxed) {
                        round += 1
                        guard let reply = try? requester.request(Self.request(kind, credential: credential, round: round * 10 + connection),
                                                                 timeout: .seconds(5)) else { continue }
                        sent.add(1, ordering: .relaxed)
                        if let decoded = try? WireCodec.decode(reply, limits: .largeReplies) {
                            if case let .error(error) = decoded.message, error.code == "rate-limited" { refused.add(1, ordering: .relaxed) }
                            if case let .writeAck(ack) = decoded.message, ack.errorCode == "rate-limited" { refused.add(1, ordering: .relaxed) }
                        }
                    }
                }
                thread.start()
                threads.append(thread)
            }
        }

        static func request(_ kind: FloodKind, credential: [UInt8], round: Int) -> [UInt8] {
            let message: WireMessage
            switch kind {
            case .write:
                let write = Write(author: "eve", authorRole: .student, authorCounter: UInt64(1_000 + abs(round)),
                                  operation: .setHand(user: "eve", raised: round % 2 == 0))
                message = .writeRequest(WireMessage.WriteRequest(requestID: UInt64(abs(round)), write: write))
            case .sync:
                message = .syncRequest(WireMessage.SyncRequest(seen: VersionVector(), user: "eve"))
            case .join:
                message = .joinRequest(WireMessage.JoinRequest(user: "eve", role: .student, session: "eve-\(round)", name: "Eve"))
            case .digest:
                message = .digest(VersionVector())
            case .hello:
                message = .heartbeat(WireMessage.Heartbeat(node: ReplicaID(0), incarnation: 0, address: ""))
            }
            let envelope = WireEnvelope(roomID: "flood", sender: ReplicaID(0), sequence: 0, clock: .zero,
                                        credential: kind == .hello ? [] : credential, message: message)
            return WireCodec.encode(envelope)
        }

        func stop() -> (rate: Double, refusedPercent: Int) {
            stopping.store(true, ordering: .relaxed)
            _ = done.wait(timeout: .now() + 15)
            let seconds = max(0.001, Date().timeIntervalSince(started))
            let total = sent.load(ordering: .relaxed)
            return (Double(total) / seconds, total == 0 ? 0 : refused.load(ordering: .relaxed) * 100 / total)
        }
    }
}

