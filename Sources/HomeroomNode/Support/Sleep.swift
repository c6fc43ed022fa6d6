@preconcurrency import Glibc

/// Sleeps the calling OS thread (at most a second per call).
public enum Sleep {
    public static func milliseconds(_ value: UInt64) { usleep(useconds_t(min(value, 1_000_000) * 1000)) }
}
