/// A PUB/SUB message is `topic bytes + payload`; subscribers filter on the prefix.
/// These helpers build and split such messages. To send without building an array
/// at all, use `NNGSocket.send(topic:payload:)`.
public enum NNGTopic {
    /// `topic + payload` in one array, allocated once.
    @inlinable
    public static func frame(topic: [UInt8], payload: [UInt8]) -> [UInt8] {
        var message = [UInt8]()
        message.reserveCapacity(topic.count + payload.count)
        message.append(contentsOf: topic)
        message.append(contentsOf: payload)
        return message
    }

    /// True when `message` starts with `topic`.
    @inlinable
    public static func matches(_ message: [UInt8], topic: [UInt8]) -> Bool {
        message.count >= topic.count && message[..<topic.count].elementsEqual(topic)
    }

    /// The bytes after `topic`, or nil if `message` does not start with it.
    @inlinable
    public static func payload(of message: [UInt8], topic: [UInt8]) -> ArraySlice<UInt8>? {
        matches(message, topic: topic) ? message[topic.count...] : nil
    }
}
