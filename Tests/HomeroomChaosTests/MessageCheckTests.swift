import HomeroomCore
import Testing
@testable import HomeroomChaosKit

/// The chaos run's message check (issue 40, item 4): a clean history passes; a message
/// delivered twice, out of its sender's order without the late mark, or never delivered
/// to a client that joined before it was sent each fail it; nothing sent, nothing claimed.
@Suite struct MessageCheckTests {
    static func sent(_ sender: UserID, _ counter: UInt64, to recipient: UserID? = nil, at millis: UInt64, acknowledged: Bool = true) -> WriteRecord {
        WriteRecord(client: sender, operation: recipient == nil ? "send-message" : "send-peer-message", invokedAt: millis,
                    completedAt: millis + 5,
                    outcome: acknowledged ? .acknowledged(Dot(origin: ReplicaID(1), sequence: counter)) : .indeterminate("timeout"),
                    message: MessageMark(sender: sender, recipient: recipient, counter: counter))
    }

    static func delivery(_ sender: UserID, _ counter: UInt64, to recipient: UserID? = nil, late: Bool = false) -> DeliveryMark {
        DeliveryMark(key: MessageMark(sender: sender, recipient: recipient, counter: counter), late: late)
    }

    /// s1 sends two room messages and a peer message to s2; s2 and t1 joined before.
    static let history = [sent("s1", 1, at: 100), sent("s1", 2, at: 200), sent("s1", 3, to: "s2", at: 300)]
    static func s2(_ deliveries: [DeliveryMark]) -> ClientInbox { ClientInbox(writer: "s2", instance: 0, joinedAt: 50, deliveries: deliveries) }
    static let t1 = ClientInbox(writer: "t1", instance: 0, joinedAt: 50, deliveries: [delivery("s1", 1), delivery("s1", 2)])
    static let everyone: Set<String> = ["s2#0", "t1#0"]

    static func run(_ s2: [DeliveryMark], history: [WriteRecord] = history, final: Set<String> = everyone) -> Check {
        MessageCheck(history: history, inboxes: [Self.s2(s2), t1], finalClients: final, reference: nil).check()
    }

    @Test func aCleanHistoryPasses() {
        let check = Self.run([Self.delivery("s1", 1), Self.delivery("s1", 2), Self.delivery("s1", 3, to: "s2")])
        #expect(check.passed, "\(check.detail)")
        #expect(check.detail.hasPrefix("3 acknowledged messages (1 peer): 5 deliveries to 2 clients"), "\(check.detail)")
    }

    @Test func aMessageDeliveredTwiceFails() {
        let check = Self.run([Self.delivery("s1", 1), Self.delivery("s1", 2), Self.delivery("s1", 2, late: true), Self.delivery("s1", 3, to: "s2")])
        #expect(!check.passed)
        #expect(check.detail.contains("s2#0 delivered s1#2 twice"), "\(check.detail)")
    }

    @Test func aMessageOutOfItsSendersOrderFailsUnlessMarkedLate() {
        let unmarked = Self.run([Self.delivery("s1", 2), Self.delivery("s1", 1), Self.delivery("s1", 3, to: "s2")])
        #expect(!unmarked.passed)
        #expect(unmarked.detail.contains("s2#0 delivered s1#1 after #2 without marking it late"), "\(unmarked.detail)")
        let marked = Self.run([Self.delivery("s1", 2), Self.delivery("s1", 1, late: true), Self.delivery("s1", 3, to: "s2")])
        #expect(marked.passed, "\(marked.detail)")
        #expect(marked.detail.contains("(1 late after a hold)"))
    }

    @Test func aMessageNeverDeliveredToAClientThereSinceBeforeFails() {
        let check = Self.run([Self.delivery("s1", 1), Self.delivery("s1", 3, to: "s2")])
        #expect(!check.passed)
        #expect(check.detail.contains("s2#0 never delivered s1#2, acknowledged after it joined"), "\(check.detail)")
        // Not owed: a client gone at the end, or one that joined after the send, or a
        // message that was never acknowledged.
        #expect(Self.run([Self.delivery("s1", 1), Self.delivery("s1", 3, to: "s2")], final: ["t1#0"]).passed)
        let late = MessageCheck(history: Self.history, inboxes: [ClientInbox(writer: "s2", instance: 1, joinedAt: 250)],
                                finalClients: ["s2#1"], reference: nil)
        #expect(late.missing(in: late.inboxes[0]) == [MessageMark(sender: "s1", recipient: "s2", counter: 3)])
        let unanswered = [Self.sent("s1", 1, at: 100), Self.sent("s1", 2, at: 200, acknowledged: false), Self.sent("s1", 3, to: "s2", at: 300)]
        #expect(Self.run([Self.delivery("s1", 1), Self.delivery("s1", 3, to: "s2")], history: unanswered).passed)
    }

    @Test func aPeerMessageIsOwedOnlyToItsTwoUsers() {
        // t1 is neither sender nor recipient of s1#3: not owed, and t1 passes without it.
        let check = MessageCheck(history: Self.history, inboxes: [Self.t1], finalClients: ["t1#0"], reference: nil)
        #expect(check.missing(in: Self.t1).isEmpty)
    }

    @Test func messagesSentButNothingDeliveredClaimNothing() {
        let check = MessageCheck(history: Self.history, inboxes: [ClientInbox(writer: "s2", instance: 0)], finalClients: [], reference: nil).check()
        #expect(!check.passed)
        #expect(check.detail.contains("nothing to check"), "\(check.detail)")
    }
}
