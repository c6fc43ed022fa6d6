@preconcurrency import Glibc

/// Wall-clock milliseconds since the epoch: the only place the node reads the time
/// for hybrid logical clocks (Core itself never reads a clock).
public enum WallClock {
    public static func nowMillis() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }

    /// Monotonic milliseconds, for timeouts and failure detection.
    public static func monotonicMillis() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1000 + UInt64(spec.tv_nsec) / 1_000_000
    }
}
