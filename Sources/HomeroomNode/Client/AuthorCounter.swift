import Synchronization
import HomeroomSupport

/// Author counters of Homeroom's own client (docs/PROTOCOL.md, Flow 6). A counter
/// must grow across all of a user's connections and restarts and must never be used
/// by two client instances of the same user: a reward is keyed by (author, counter).
///
/// Layout: `(Unix ms x 4 + n) x 2^19 + tag`, stepping by 2^19 per write. The 19-bit
/// tag is fixed per client instance (instances in one process get consecutive tags
/// from a random start), so two clients of one user, even started in the same
/// millisecond, never produce the same counter unless their tags are equal (1 in
/// 524,288 for two processes), and a restarted client starts above its previous
/// counters unless it wrote more than 4 writes per millisecond on average (a node
/// allows 60 per second). Counters stay below 2^63 until the year 2109.
public enum AuthorCounter {
    public static let tagBits = 19
    public static let stride: UInt64 = 1 << 19

    private static let nextTag = Atomic<UInt64>(UInt64.random(in: 0..<(1 << 19)))

    /// The first counter of a new client instance; its first write uses `initial + stride`.
    public static func initial(nowMillis: UInt64 = WallClock.nowMillis()) -> UInt64 {
        initial(nowMillis: nowMillis, tag: nextTag.add(1, ordering: .relaxed).oldValue)
    }

    public static func initial(nowMillis: UInt64, tag: UInt64) -> UInt64 {
        (nowMillis &* 4) << UInt64(tagBits) | (tag & (stride - 1))
    }

    /// The instance tag of a counter this layout made.
    public static func tag(of counter: UInt64) -> UInt64 { counter & (stride - 1) }
}
