/// Delivers new messages to one user in each sender's order, once each. Pure: time
/// is passed in, so a client shell drives it from its receive path and its timer.
///
/// A message names the sender's previous message in the same conversation (the
/// room, or the same recipient). The inbox holds a message until that one has been
/// delivered (or is already in the history), so a message repaired late by a sync
/// (it was lost on the way while the next one was not) is still delivered first.
/// A predecessor that never comes (it left the history, or its send failed) holds a
/// message for at most `holdMillis`.
public struct MessageInbox: Sendable {
    public struct Delivery: Hashable, Sendable {
        public var message: Message
        /// Delivered after a later message of its conversation, because it arrived
        /// after that one's hold expired.
        public var late: Bool
        /// Delivered without its predecessor, after waiting `holdMillis` for it.
        public var gap: Bool

        public init(message: Message, late: Bool, gap: Bool) {
            self.message = message
            self.late = late
            self.gap = gap
        }
    }

    public var holdMillis: UInt64
    /// How many delivered keys are remembered to refuse a second delivery.
    public var memory: Int

    private var delivered: Set<MessageKey> = []
    private var deliveredOrder: [MessageKey] = []
    private var held: [MessageKey: (message: Message, since: UInt64)] = [:]
    /// Predecessor -> messages held for it.
    private var waiting: [MessageKey: [MessageKey]] = [:]
    /// Per conversation, the highest counter delivered (to mark late deliveries).
    private var highest: [Conversation: UInt64] = [:]

    struct Conversation: Hashable, Sendable {
        var sender: UserID
        var recipient: UserID?
    }

    public init(holdMillis: UInt64 = 2_000, memory: Int = 20_000) {
        self.holdMillis = holdMillis
        self.memory = memory
    }

    public var heldCount: Int { held.count }

    /// Marks messages as already known without delivering them (the history a client
    /// got with its first snapshot).
    public mutating func markKnown(_ keys: [MessageKey]) {
        for key in keys { remember(key) }
    }

    /// Offers messages that just entered the replica's history; returns those that can
    /// be delivered now, in order. `present` tells whether a key is in the history.
    public mutating func offer(_ messages: [Message], nowMillis: UInt64, present: (MessageKey) -> Bool) -> [Delivery] {
        var out: [Delivery] = []
        let batch = messages.filter { !delivered.contains($0.key) && held[$0.key] == nil }.sorted { $0.stamp < $1.stamp }
        let inBatch = Set(batch.map(\.key))
        for message in batch { held[message.key] = (message, nowMillis) }
        for message in batch where held[message.key] != nil {
            let predecessor = MessageKey(sender: message.sender, counter: message.previous)
            let ready = message.previous == 0 || message.previous >= message.key.counter || delivered.contains(predecessor)
                || (present(predecessor) && held[predecessor] == nil && !inBatch.contains(predecessor))
            if ready {
                deliver(message.key, gap: false, into: &out)
            } else {
                waiting[predecessor, default: []].append(message.key)
            }
        }
        return out
    }

    /// Delivers what has waited `holdMillis` for a predecessor that did not come.
    public mutating func tick(nowMillis: UInt64) -> [Delivery] {
        var out: [Delivery] = []
        let expired = held.values.filter { nowMillis &- $0.since >= holdMillis }.map(\.message).sorted { $0.stamp < $1.stamp }
        for message in expired where held[message.key] != nil {
            deliver(message.key, gap: true, into: &out)
        }
        return out
    }

    private mutating func deliver(_ key: MessageKey, gap: Bool, into out: inout [Delivery]) {
        var queue = [(key, gap)]
        while !queue.isEmpty {
            let (next, isGap) = queue.removeFirst()
            guard let entry = held.removeValue(forKey: next) else { continue }
            let message = entry.message
            let conversation = Conversation(sender: message.sender, recipient: message.recipient)
            let late = (highest[conversation] ?? 0) > message.key.counter
            if !late { highest[conversation] = message.key.counter }
            remember(next)
            out.append(Delivery(message: message, late: late, gap: isGap))
            if let followers = waiting.removeValue(forKey: next) {
                for follower in followers { queue.append((follower, false)) }
            }
        }
    }

    private mutating func remember(_ key: MessageKey) {
        guard delivered.insert(key).inserted else { return }
        deliveredOrder.append(key)
        if deliveredOrder.count > memory {
            let drop = deliveredOrder.count - memory
            for old in deliveredOrder.prefix(drop) { delivered.remove(old) }
            deliveredOrder.removeFirst(drop)
        }
    }
}

/// Presence events as a client shows them: each join, leave, timeout and state
/// change at once in a small room; above `threshold` online users, gathered into one
/// interval event every `intervalMillis`, so a 10,000-user lecture hall does not
/// flood every client (RTM 2.x's interval mode). Pure: time is passed in.
public struct PresenceBatcher: Sendable {
    public enum Event: Hashable, Sendable {
        case joined(UserID)
        case left(UserID)
        case timedOut(UserID)
        case stateChanged(UserID, [String: [UInt8]])
        /// Everything since the last interval: each user appears in at most one of the
        /// three lists (its latest transition), with its latest state.
        case interval(PresenceInterval)
    }

    public struct PresenceInterval: Hashable, Sendable {
        public var joined: [UserID] = []
        public var left: [UserID] = []
        public var timedOut: [UserID] = []
        public var states: [UserID: [String: [UInt8]]] = [:]
        public var isEmpty: Bool { joined.isEmpty && left.isEmpty && timedOut.isEmpty && states.isEmpty }

        public init(joined: [UserID] = [], left: [UserID] = [], timedOut: [UserID] = [], states: [UserID: [String: [UInt8]]] = [:]) {
            self.joined = joined
            self.left = left
            self.timedOut = timedOut
            self.states = states
        }
    }

    public var threshold: Int
    public var intervalMillis: UInt64
    private var transitions: [UserID: Event] = [:]
    private var states: [UserID: [String: [UInt8]]] = [:]
    private var lastFlush: UInt64?

    public init(threshold: Int = 50, intervalMillis: UInt64 = 1_000) {
        self.threshold = threshold
        self.intervalMillis = intervalMillis
    }

    /// Events in, events out: the same events in a small room, nothing (until the
    /// next interval) in a large one.
    public mutating func offer(_ events: [Event], onlineCount: Int, nowMillis: UInt64) -> [Event] {
        if lastFlush == nil { lastFlush = nowMillis }
        guard onlineCount > threshold else {
            // Back to a small room: what was gathered goes first.
            var out = flush(nowMillis: nowMillis)
            out.append(contentsOf: events)
            return out
        }
        // A first join's snapshot brings every user at once: grow the table once.
        if events.count > 1_000 { transitions.reserveCapacity(transitions.count + events.count) }
        for event in events {
            switch event {
            case let .joined(user), let .left(user), let .timedOut(user): transitions[user] = event
            case let .stateChanged(user, state): states[user] = state
            case .interval: break
            }
        }
        return nowMillis &- (lastFlush ?? nowMillis) >= intervalMillis ? flush(nowMillis: nowMillis) : []
    }

    /// The interval event, when one is due.
    public mutating func tick(nowMillis: UInt64) -> [Event] {
        if lastFlush == nil { lastFlush = nowMillis }
        return nowMillis &- (lastFlush ?? nowMillis) >= intervalMillis ? flush(nowMillis: nowMillis) : []
    }

    private mutating func flush(nowMillis: UInt64) -> [Event] {
        lastFlush = nowMillis
        guard !transitions.isEmpty || !states.isEmpty else { return [] }
        var interval = PresenceInterval()
        for user in transitions.keys.sorted() {
            switch transitions[user]! {
            case .joined: interval.joined.append(user)
            case .left: interval.left.append(user)
            case .timedOut: interval.timedOut.append(user)
            default: break
            }
        }
        interval.states = states
        transitions.removeAll()
        states.removeAll()
        return [.interval(interval)]
    }
}
