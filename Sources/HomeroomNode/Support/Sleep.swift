@preconcurrency import Glibc

enum NNGSleep {
    static func milliseconds(_ value: UInt64) { usleep(useconds_t(min(value, 1_000_000) * 1000)) }
}
