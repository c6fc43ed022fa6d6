@preconcurrency import Glibc
import HomeroomHarness

/// One line to stderr, with the elapsed time.
func say(_ message: String) {
    let millis = Clock.now
    fputs(String(format3(millis)) + " " + message + "\n", stderr)
}

private func format3(_ millis: UInt64) -> String {
    let seconds = millis / 1000
    let rest = millis % 1000
    let padded = rest < 10 ? "00\(rest)" : rest < 100 ? "0\(rest)" : "\(rest)"
    return "[\(seconds).\(padded)s]"
}
