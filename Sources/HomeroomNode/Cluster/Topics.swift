/// PUB/SUB topics. nng matches topics as byte prefixes at the subscriber.
///
/// - `<room id> 0x00`: everything a node applies to a room, from any origin, for
///   the clients attached to it (deltas and repair patches).
/// - `0x01 <room id> 0x00`: deltas the node sequenced itself, for the other nodes.
/// - `0x02`: cluster heartbeats.
/// - `@ <room id> 0x00 <user id> 0x00`: one user's private stream in a room: the peer
///   messages it sends or receives (`@` is outside the room-id alphabet).
public enum Topics {
    public static func clientRoom(_ room: String) -> [UInt8] { Array(room.utf8) + [0] }
    public static func clientUser(_ room: String, _ user: String) -> [UInt8] { [0x40] + Array(room.utf8) + [0] + Array(user.utf8) + [0] }
    /// The kind `split` gives a user's private stream.
    public static let privateKind: UInt8 = 3
    public static func nodeRoom(_ room: String) -> [UInt8] { [1] + Array(room.utf8) + [0] }
    public static let nodeDeltas: [UInt8] = [1]
    public static let heartbeat: [UInt8] = [2]

    /// Splits a received message into its topic kind and payload.
    static func split(_ message: [UInt8]) -> (kind: UInt8, payload: ArraySlice<UInt8>)? {
        guard let first = message.first else { return nil }
        if first == 2 { return (2, message[1...]) }
        guard let end = message.firstIndex(of: 0) else { return nil }
        if first == 0x40 {
            guard let userEnd = message[(end + 1)...].firstIndex(of: 0) else { return nil }
            return (privateKind, message[(userEnd + 1)...])
        }
        return (first == 1 ? 1 : 0, message[(end + 1)...])
    }
}
