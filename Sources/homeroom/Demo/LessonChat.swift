import HomeroomSupport
import HomeroomContext
import Synchronization

/// The demo's chat: every client's received room messages, and what was sent, so the
/// summary can check that each message reached every client once and a whisper only
/// its two ends.
final class LessonChat: Sendable {
    private struct State {
        var sent: [MessageKey] = []
        var received: [String: [MessageKey]] = [:]
        var whisper: (key: MessageKey, from: String, to: String)?
    }
    private let state = Mutex(State())

    /// Counts what `pool` receives from now on (call before any message is sent).
    func follow(_ user: String, _ pool: ContextPool) {
        pool.addEventListener { [weak self] event in
            guard case let .roomMessageReceived(message) = event else { return }
            self?.state.withLock { $0.received[user, default: []].append(message.key) }
        }
    }

    func sent(_ key: MessageKey) { state.withLock { $0.sent.append(key) } }
    func whispered(_ key: MessageKey, from: String, to: String) { state.withLock { $0.whisper = (key, from, to) } }

    /// (text, ok) lines for the summary. Waits (bounded) for deliveries still on their way.
    func checks(active: [(user: String, node: Int, pool: ContextPool)]) -> [(String, Bool)] {
        func deliveredOnce() -> [String] {
            state.withLock { state in
                let expected = Set(state.sent)
                return active.map(\.user).filter { user in
                    let got = state.received[user] ?? []
                    // Each sender's messages in the order it sent them (its counter grows).
                    var last: [String: UInt64] = [:]
                    let ordered = got.allSatisfy { key in
                        defer { last[key.sender] = key.counter }
                        return key.counter > last[key.sender] ?? 0
                    }
                    return Set(got) != expected || got.count != expected.count || !ordered
                }
            }
        }
        _ = waitUntil(millis: 3_000) { deliveredOnce().isEmpty }
        let missing = deliveredOnce()
        let count = state.withLock { $0.sent.count }
        var checks: [(String, Bool)] = [
            ("\(count) room messages, each delivered once, in order, to all \(active.count) clients"
             + (missing.isEmpty ? "" : " (not to: \(missing.joined(separator: ", ")))"), missing.isEmpty && count > 0),
        ]
        if let whisper = state.withLock({ $0.whisper }) {
            let holders = active.filter { entry in entry.pool.message.history().contains { $0.key == whisper.key } }.map(\.user).sorted()
            checks.append(("the whisper from \(whisper.from) reached only \(whisper.to) and its sender (held by: \(holders.joined(separator: ", ")))",
                           holders == [whisper.from, whisper.to].sorted()))
        }
        return checks
    }
}
