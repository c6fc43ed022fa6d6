import HomeroomCore
import HomeroomNode
import HomeroomHarness

/// One delivery to a client, as its inbox handed it over.
struct DeliveryMark: Sendable, Hashable {
    var key: MessageMark
    /// Delivered after a later message of its conversation (its hold had expired).
    var late: Bool

    init(key: MessageMark, late: Bool) {
        self.key = key
        self.late = late
    }

    init(_ delivery: MessageInbox.Delivery) {
        key = MessageMark(sender: delivery.message.key.sender, recipient: delivery.message.recipient, counter: delivery.message.key.counter)
        late = delivery.late
    }
}

/// What one client of a writer delivered, in order (a writer makes a new client after a
/// kick or a refusal for good, or to return home; each starts from the history it joins with).
struct ClientInbox: Sendable {
    var writer: UserID
    var instance: Int
    /// When its join completed (nil: it never joined); messages sent later must reach it.
    var joinedAt: UInt64?
    var deliveries: [DeliveryMark] = []

    init(writer: UserID, instance: Int, joinedAt: UInt64? = nil, deliveries: [DeliveryMark] = []) {
        self.writer = writer
        self.instance = instance
        self.joinedAt = joinedAt
        self.deliveries = deliveries
    }
}

/// Messages under the faults (docs/MESSAGING.md): every client delivers each message
/// at most once and, unless marked late, in its sender's order; a client that joined
/// before a message was sent, and is still there at the end, delivered it (through the
/// stream, or through a sync or a resume after a cut: catch-up).
struct MessageCheck {
    var history: [WriteRecord]
    /// Every writer's clients; `finalClients` names the ones still connected at the end.
    var inboxes: [ClientInbox]
    var finalClients: Set<String>
    /// The converged room as an observer holds it: a room message its history no longer
    /// holds (trimmed) is not owed.
    var reference: RoomState?

    static func label(_ inbox: ClientInbox) -> String { "\(inbox.writer)#\(inbox.instance)" }

    /// The acknowledged messages `inbox` still owes, by the rules above.
    func missing(in inbox: ClientInbox) -> [MessageMark] {
        guard let joinedAt = inbox.joinedAt, finalClients.contains(Self.label(inbox)) else { return [] }
        let delivered = Set(inbox.deliveries.map(\.key))
        var owed: [MessageMark] = []
        for record in history {
            guard let mark = record.message, case .acknowledged = record.outcome, record.invokedAt >= joinedAt else { continue }
            guard mark.recipient == nil || mark.recipient == inbox.writer || mark.sender == inbox.writer else { continue }
            // A room message the history no longer holds (trimmed) is not owed; the reference
            // (an observer) holds no peer messages, so those are always owed.
            if mark.recipient == nil, let reference,
               !reference.messages.entries.keys.contains(MessageKey(sender: mark.sender, counter: mark.counter)) { continue }
            if !delivered.contains(mark) { owed.append(mark) }
        }
        return owed
    }

    func check() -> Check {
        var problems: [String] = []
        var acknowledged = 0, peer = 0
        for record in history {
            guard let mark = record.message, case .acknowledged = record.outcome else { continue }
            acknowledged += 1
            if mark.recipient != nil { peer += 1 }
        }
        var deliveries = 0, late = 0, owedChecked = 0
        for inbox in inboxes {
            let label = Self.label(inbox)
            deliveries += inbox.deliveries.count
            var seen = Set<MessageMark>()
            var lastInOrder: [String: UInt64] = [:]
            for delivery in inbox.deliveries {
                if !seen.insert(delivery.key).inserted {
                    problems.append("\(label) delivered \(delivery.key.sender)#\(delivery.key.counter) twice")
                }
                if delivery.late { late += 1; continue }
                let conversation = delivery.key.sender + ">" + (delivery.key.recipient ?? "")
                if let last = lastInOrder[conversation], delivery.key.counter <= last {
                    problems.append("\(label) delivered \(delivery.key.sender)#\(delivery.key.counter) after #\(last) without marking it late")
                }
                lastInOrder[conversation] = max(lastInOrder[conversation] ?? 0, delivery.key.counter)
            }
            let owed = missing(in: inbox)
            if finalClients.contains(label) { owedChecked += 1 }
            for mark in owed.prefix(3) {
                problems.append("\(label) never delivered \(mark.sender)#\(mark.counter)\(mark.recipient.map { " (to \($0))" } ?? ""), acknowledged after it joined")
            }
            if owed.count > 3 { problems.append("\(label): \(owed.count - 3) more acknowledged messages never delivered") }
        }
        // Messages were sent but none acknowledged or delivered: nothing was checked.
        let attempted = history.contains { $0.operation == "send-message" || $0.operation == "send-peer-message" }
        if attempted && (acknowledged == 0 || deliveries == 0) {
            problems.append("messages were sent, but \(acknowledged) acknowledged and \(deliveries) delivered: nothing to check")
        }
        return Check(name: "messages", passed: problems.isEmpty,
                     detail: problems.isEmpty
                         ? "\(acknowledged) acknowledged messages (\(peer) peer): \(deliveries) deliveries to \(inboxes.count) clients, none twice, each sender's order kept (\(late) late after a hold); \(owedChecked) clients connected at the end delivered every message sent after they joined"
                         : "\(problems.count) problems, first: \(problems[0])")
    }
}
