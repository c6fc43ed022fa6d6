@preconcurrency import Glibc
import HomeroomNode
import HomeroomWire

/// `homeroom cluster check`: one line and an exit code an alerting system can act on,
/// as `nats server check` gives (0 OK, 1 WARNING, 2 CRITICAL).
enum ClusterCheck {
    enum Verdict: Int32, Comparable {
        case ok = 0, warning = 1, critical = 2

        var word: String { self == .ok ? "OK" : self == .warning ? "WARNING" : "CRITICAL" }
        static func < (a: Verdict, b: Verdict) -> Bool { a.rawValue < b.rawValue }
    }

    /// The verdict on one node's answer: what is wrong, worst first.
    static func judge(_ hello: WireMessage.Heartbeat, maxBehind: UInt64) -> (Verdict, [String]) {
        var findings: [(Verdict, String)] = []
        if hello.health != "ok" && !hello.health.isEmpty { findings.append((.warning, "health \(hello.health)")) }
        let others = hello.peers.filter { $0.node != hello.node }
        let alive = others.filter { $0.status == .alive }
        if !others.isEmpty && alive.isEmpty {
            findings.append((.critical, "no other member is alive: this node is cut off from all \(others.count)"))
        }
        for peer in others.sorted(by: { ClusterCommand.shownName($0) < ClusterCommand.shownName($1) }) {
            let name = ClusterCommand.shownName(peer)
            switch peer.status {
            case .alive where peer.draining: findings.append((.warning, "\(name) draining"))
            case .alive where peer.heardMillisAgo != .max && peer.behind > maxBehind:
                findings.append((.warning, "\(name) \(peer.behind) writes behind (more than \(maxBehind))"))
            case .alive: break
            case .suspect: findings.append((.warning, "\(name) suspect"))
            case .dead: findings.append((.warning, "\(name) down"))
            }
        }
        let verdict = findings.map(\.0).max() ?? .ok
        return (verdict, findings.sorted { $0.0 > $1.0 }.map(\.1))
    }

    static func run(address: String, token: String?, timeoutMillis: UInt64, maxBehind: UInt64) -> Never {
        let hello: WireMessage.Heartbeat
        do {
            hello = try NodeProbe.hello(address, token: token, timeoutMillis: timeoutMillis)
        } catch {
            print("CRITICAL: \(address) does not answer: \(error.description)")
            exit(Verdict.critical.rawValue)
        }
        let members = 1 + hello.peers.filter { $0.node != hello.node }.count
        let alive = 1 + hello.peers.filter { $0.node != hello.node && $0.status == .alive }.count
        let (verdict, findings) = judge(hello, maxBehind: maxBehind)
        let who = hello.nodeName.isEmpty ? address : "\(hello.nodeName) (\(address))"
        var line = "\(verdict.word): \(alive) of \(members) members alive as \(who) sees them"
        if !findings.isEmpty { line += "; " + findings.joined(separator: "; ") }
        if hello.peers.isEmpty && hello.sentAtMillis == 0 && token == nil {
            line += " (this node lists its peers only with a join token: add --token)"
        }
        print(line)
        exit(verdict.rawValue)
    }
}
