import HomeroomContext
import Synchronization
import HomeroomSupport

/// What the demo did: narration, writes acknowledged and refused (by code, and which
/// refusals the script meant to provoke), and rewards as acknowledged per student.
final class DemoLog: Sendable {
    struct Entry: Sendable {
        var elapsedMillis: UInt64
        var text: String
    }

    private struct State {
        var entries: [Entry] = []
        var acknowledged = 0
        var refused: [String: Int] = [:]
        var expected: [String: Int] = [:]
        var unexpected: [String] = []
        var rewards: [UserID: Int64] = [:]
        var step = 0
    }

    let started = WallClock.monotonicMillis()
    let steps: Int
    private let state = Mutex(State())
    private let onEntry: @Sendable (Entry) -> Void

    init(steps: Int, onEntry: @escaping @Sendable (Entry) -> Void) {
        self.steps = steps
        self.onEntry = onEntry
    }

    var elapsedMillis: UInt64 { WallClock.monotonicMillis() - started }

    func say(_ text: String) {
        let entry = Entry(elapsedMillis: elapsedMillis, text: text)
        state.withLock { $0.entries.append(entry) }
        onEntry(entry)
    }

    func nextStep() { state.withLock { $0.step += 1 } }

    /// Performs one write; counts it. `expecting` names the refusal the script provokes.
    @discardableResult
    func write(_ label: String, expecting code: String? = nil, _ body: () throws(ContextError) -> Void) -> ContextError? {
        do {
            try body()
            state.withLock { state in
                state.acknowledged += 1
                if let code { state.unexpected.append("\(label): expected a refusal [\(code)], but it was acknowledged") }
            }
            return nil
        } catch {
            state.withLock { state in
                state.refused[error.code, default: 0] += 1
                if error.code == code {
                    state.expected[error.code, default: 0] += 1
                } else {
                    state.unexpected.append("\(label): refused [\(error.code)]: \(error.message)")
                }
            }
            return error
        }
    }

    func rewarded(_ user: UserID, _ amount: Int) { state.withLock { $0.rewards[user, default: 0] += Int64(amount) } }

    var entries: [Entry] { state.withLock { $0.entries } }
    var acknowledged: Int { state.withLock { $0.acknowledged } }
    var refused: [String: Int] { state.withLock { $0.refused } }
    var expectedRefusals: [String: Int] { state.withLock { $0.expected } }
    var unexpected: [String] { state.withLock { $0.unexpected } }
    var rewards: [UserID: Int64] { state.withLock { $0.rewards } }
    var step: Int { state.withLock { $0.step } }

    var refusedText: String {
        let refused = self.refused
        guard !refused.isEmpty else { return "none refused" }
        return "\(refused.values.reduce(0, +)) refused: " + refused.keys.sorted().map { "\($0) \(refused[$0]!)" }.joined(separator: ", ")
    }

    /// "not-allowed 2, stage-full 1", or "nothing".
    var refusedByCode: String {
        let refused = self.refused
        return refused.isEmpty ? "nothing" : refused.keys.sorted().map { "\($0) \(refused[$0]!)" }.joined(separator: ", ")
    }

    static func stamp(_ millis: UInt64) -> String {
        let tenths = millis / 100
        let text = "\(tenths / 10).\(tenths % 10)"
        return "[" + String(repeating: " ", count: max(0, 5 - text.count)) + text + " s]"
    }
}
