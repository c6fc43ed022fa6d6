/// A peer a node declared down, read from the node's log ("peer declared down" carries
/// the node's CLOCK_MONOTONIC and how long the peer had been silent).
struct DeclaredDown {
    var node: String
    /// The peer's name when its address is one of the cluster's, else the address.
    var peer: String
    /// Harness time (ms) when the peer was last heard, and when it was declared down.
    var silentFrom: UInt64
    var at: UInt64

    var description: String { "\(node) declared \(peer) down at \(at) ms (silent since \(silentFrom) ms)" }

    /// The downs in one node's log. `names` maps listen addresses to node names;
    /// `origin` is the harness clock's origin on CLOCK_MONOTONIC.
    static func parse(log: String, node: String, names: [String: String], origin: UInt64) -> [DeclaredDown] {
        var downs: [DeclaredDown] = []
        for line in log.split(separator: "\n") where line.contains("peer declared down") {
            var fields: [Substring: Substring] = [:]
            for token in line.split(separator: " ") {
                guard let equals = token.firstIndex(of: "=") else { continue }
                fields[token[..<equals]] = token[token.index(after: equals)...]
            }
            guard let monotonic = fields["monotonic_ms"].flatMap({ UInt64($0) }),
                  let silent = fields["silent_ms"].flatMap({ UInt64($0) }), monotonic >= origin else { continue }
            let address = fields["address"].map(String.init) ?? "?"
            let at = monotonic - origin
            downs.append(DeclaredDown(node: node, peer: names[address] ?? address, silentFrom: at >= silent ? at - silent : 0, at: at))
        }
        return downs
    }
}

/// False downs: a peer declared down although it fell silent inside a fault-free window
/// (after the heal that began it, before the next fault) and was declared down before
/// that window ended. Under load and without faults a node must not lose its peers;
/// each such down ends sessions on every replica.
enum FalseDowns {
    static func find(_ downs: [DeclaredDown], quietWindows: [(from: UInt64, to: UInt64)]) -> [DeclaredDown] {
        downs.filter { down in
            quietWindows.contains { window in down.silentFrom >= window.from && down.at < window.to }
        }
    }
}
