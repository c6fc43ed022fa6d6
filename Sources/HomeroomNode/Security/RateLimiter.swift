/// Token buckets per key (a user): messages and bytes per second, with a burst.
/// Pure apart from the time passed in; the node keeps it under its lock.
struct RateLimiter {
    struct Bucket {
        var messages: Double
        var bytes: Double
        var lastMillis: UInt64
    }

    let messagesPerSecond: Double
    let bytesPerSecond: Double
    let burstSeconds: Double
    private var buckets: [String: Bucket] = [:]

    init(messagesPerSecond: Int, bytesPerSecond: Int, burstSeconds: Double = 2) {
        self.messagesPerSecond = Double(messagesPerSecond)
        self.bytesPerSecond = Double(bytesPerSecond)
        self.burstSeconds = burstSeconds
    }

    /// Takes one message of `size` bytes from `key`'s bucket; false when over the limit.
    mutating func allow(_ key: String, size: Int, nowMillis: UInt64) -> Bool {
        let capacityMessages = messagesPerSecond * burstSeconds
        let capacityBytes = bytesPerSecond * burstSeconds
        var bucket = buckets[key] ?? Bucket(messages: capacityMessages, bytes: capacityBytes, lastMillis: nowMillis)
        let elapsed = Double(nowMillis &- bucket.lastMillis) / 1000
        bucket.messages = min(capacityMessages, bucket.messages + elapsed * messagesPerSecond)
        bucket.bytes = min(capacityBytes, bucket.bytes + elapsed * bytesPerSecond)
        bucket.lastMillis = nowMillis
        defer { buckets[key] = bucket }
        guard bucket.messages >= 1, bucket.bytes >= Double(size) else { return false }
        bucket.messages -= 1
        bucket.bytes -= Double(size)
        return true
    }

    /// Takes `bytes` from `key`'s byte budget after the fact (a reply whose size was
    /// known only once built); the budget may go below zero, and then `allow` refuses
    /// until it has refilled.
    mutating func charge(_ key: String, bytes: Int, nowMillis: UInt64) {
        let capacityMessages = messagesPerSecond * burstSeconds
        let capacityBytes = bytesPerSecond * burstSeconds
        var bucket = buckets[key] ?? Bucket(messages: capacityMessages, bytes: capacityBytes, lastMillis: nowMillis)
        let elapsed = Double(nowMillis &- bucket.lastMillis) / 1000
        bucket.messages = min(capacityMessages, bucket.messages + elapsed * messagesPerSecond)
        bucket.bytes = min(capacityBytes, bucket.bytes + elapsed * bytesPerSecond) - Double(bytes)
        bucket.lastMillis = nowMillis
        buckets[key] = bucket
    }

    /// Keys with a bucket now (tests, diagnostics).
    var count: Int { buckets.count }

    /// Forgets buckets that have refilled, so the table does not grow with every user ever seen.
    mutating func prune(nowMillis: UInt64) {
        let full = burstSeconds * 1000
        buckets = buckets.filter { Double(nowMillis &- $0.value.lastMillis) < full }
    }
}
