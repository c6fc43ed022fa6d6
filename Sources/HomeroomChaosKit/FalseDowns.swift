import HomeroomHarness
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
            // A silence longer than the run (nothing was silent before the harness started)
            // is a node's clock arithmetic gone wrong: only a fault running at the down explains it.
            downs.append(DeclaredDown(node: node, peer: names[address] ?? address, silentFrom: at >= silent ? at - silent : at, at: at))
        }
        return downs
    }
}

/// One fault as it ran: when, and which nodes it touched (nil: any pair may be cut).
struct FaultSpan {
    var kind: FaultKind
    var plannedAt: UInt64
    var affected: Set<Int>?
    var from: UInt64
    /// When it was healed; nil while it runs (or if it never was).
    var to: UInt64?
}

/// False downs: a peer declared down although no fault touching either node (or able to
/// cut any pair: partitions, loss on every link) ran at any moment of its silence.
/// Under load a node must not lose a peer nothing separated it from; each such down
/// ends sessions on every replica.
enum FalseDowns {
    /// `index` maps node names to their index in the cluster; `until` is when the
    /// harness began stopping the nodes (downs from then on are the stop's).
    static func find(_ downs: [DeclaredDown], spans: [FaultSpan], index: [String: Int], until: UInt64) -> [DeclaredDown] {
        downs.filter { down in down.at < until && explaining(down, spans: spans, index: index).isEmpty }
    }

    /// The faults that explain a down: each touched its pair at some moment of the silence.
    static func explaining(_ down: DeclaredDown, spans: [FaultSpan], index: [String: Int]) -> [FaultKind] {
        let pair = [index[down.node], index[down.peer]].compactMap { $0 }
        return spans.filter { span in
            let overlaps = span.from <= down.at && (span.to ?? .max) >= down.silentFrom
            guard overlaps else { return false }
            guard let affected = span.affected else { return true }
            return pair.contains { affected.contains($0) }
        }.map(\.kind)
    }

    /// "isolate 8, partition-halves 12, ..." : the downs before `until`, each counted under
    /// the kinds of fault that explain it (a down inside two faults counts under both joined by +).
    static func byFault(_ downs: [DeclaredDown], spans: [FaultSpan], index: [String: Int], until: UInt64) -> String {
        var counts: [String: Int] = [:]
        for down in downs where down.at < until {
            let kinds = Set(explaining(down, spans: spans, index: index).map(\.rawValue)).sorted()
            counts[kinds.isEmpty ? "none" : kinds.joined(separator: "+"), default: 0] += 1
        }
        return counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
    }
}
