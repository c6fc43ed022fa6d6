import HomeroomCore
import HomeroomNode
import HomeroomSupport
import HomeroomHarness
import Synchronization

/// `homeroom verify`'s join storm: `count` students join at once, spread over the nodes;
/// each measures the time from its join until its own replica shows every one of them
/// online (the full roster). Every client must get there within `boundMillis`.
struct JoinStorm {
    let room: String
    let nodes: [NodeEndpoint]
    let count: Int
    let boundMillis: UInt64
    let logger: Logger

    struct Outcome {
        /// Per client that saw the full roster: milliseconds from the storm's start.
        var latencies: [UInt64]
        var problems: [String]
        var check: Check {
            let spread = Percentiles(latencies)
            let passed = problems.isEmpty && !latencies.isEmpty
            return Check(name: "join-storm", passed: passed,
                         detail: passed ? "\(latencies.count) clients joined at once; each saw the full roster: \(spread.text)"
                                        : "\(problems.count) problems, first: \(problems.first ?? "no client joined")")
        }
    }

    func run() -> Outcome {
        let users = (1...max(1, count)).map { "storm-\($0)" }
        let clients = Mutex<[RoomClient]>([])
        let results = Mutex<(latencies: [UInt64], problems: [String])>(([], []))
        let started = Clock.now
        let bound = boundMillis
        let workers = users.enumerated().map { index, user in
            let endpoints = (0..<nodes.count).map { nodes[(index + $0) % nodes.count] }
            return Worker { [room, logger] in
                let client = RoomClient(room: room, user: user, role: .student, name: user, endpoints: endpoints,
                                        options: Writer.options(syncMillis: 300, room: room, user: user, role: .student), logger: logger)
                clients.withLock { $0.append(client) }
                do {
                    try client.connect()
                } catch {
                    results.withLock { $0.problems.append("\(user) could not join: \(error)") }
                    return
                }
                while Clock.now - started <= bound {
                    let replica = client.replica
                    if users.allSatisfy({ replica.isOnline($0) }) {
                        let took = Clock.now - started
                        results.withLock { $0.latencies.append(took) }
                        return
                    }
                    Clock.sleep(millis: 20)
                }
                let missing = users.filter { !client.replica.isOnline($0) }.count
                results.withLock { $0.problems.append("\(user) still missed \(missing) of \(users.count) after \(bound) ms") }
            }
        }
        for worker in workers { _ = worker.wait(millis: bound + 30_000) }
        for client in clients.withLock({ $0 }) { client.close() }
        let (latencies, problems) = results.withLock { $0 }
        return Outcome(latencies: latencies, problems: problems)
    }
}
