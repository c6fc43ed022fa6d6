import HomeroomCore

/// A bounded set of message keys, oldest forgotten first: per room, the messages that
/// left this node's history, so a retried send of one is answered DUPLICATE rather than
/// stored again (local to the node, not replicated).
public struct EvictedKeys: Sendable {
    private var keys: Set<MessageKey> = []
    private var order: [MessageKey] = []
    public static let capacity = 20_000

    public init() {}

    public func contains(_ key: MessageKey) -> Bool { keys.contains(key) }

    public var count: Int { keys.count }

    public mutating func insert(_ new: [MessageKey]) {
        for key in new where keys.insert(key).inserted { order.append(key) }
        if order.count > Self.capacity {
            let drop = order.count - Self.capacity
            for key in order.prefix(drop) { keys.remove(key) }
            order.removeFirst(drop)
        }
    }
}
