import HomeroomNode
import HomeroomSupport

/// A node with a store in `directory` and no rate limits, for the suites that time
/// acknowledged writes in process (`lock-scope`, `rooms`); nil when it does not start.
func storedBenchNode(name: String, directory: String, synchronousFull: Bool = false) -> ClusterNode? {
    var config = NodeConfig(name: name, listen: "tcp://127.0.0.1:0", publish: "tcp://127.0.0.1:0")
    config.dataDirectory = directory
    config.synchronousFull = synchronousFull
    config.writesPerSecond = 10_000_000
    config.writeBytesPerSecond = 1 << 40
    config.joinsPerSecond = 10_000_000
    config.roomCreationsPerSecond = 10_000_000
    return try? ClusterNode(config: config, logger: Logger(label: "bench", level: .error))
}
