import HomeroomCore

/// One write of a property as a node held it: its rank in the merge and its lineage.
struct SeenPropertyWrite: Sendable, Hashable {
    var dot: Dot
    var revision: UInt64
    var stamp: Stamp
    /// The writes it replaced at its origin, newest first: `lineage[i]` made revision `revision - 1 - i`.
    var lineage: [Dot]
    var value: String

    init?(_ register: Register<PropertyValue>?) {
        guard let register, register.stamp.sequence != 0 else { return nil }
        dot = register.stamp.dot
        revision = register.value.revision
        stamp = register.stamp
        lineage = register.value.lineage
        value = String(decoding: register.value.bytes ?? [], as: UTF8.self)
    }

    /// Whether the merge keeps this write over `other` (an unguarded key): the higher
    /// revision, then the later stamp (docs/MESSAGING.md, "Properties with revisions").
    func outranks(_ other: SeenPropertyWrite) -> Bool {
        revision != other.revision ? revision > other.revision : other.stamp < stamp
    }
}

/// The writes a property's final value descends from, revision by revision, as far as
/// the lineages seen reach: the final value names up to 8 writes before it, and each of
/// those the observers saw on a node names up to 8 more. A write at a revision the chain
/// covers is kept when it is the chain's write there, and lost otherwise.
struct CompareAndSetChain {
    /// The chain's write at each revision it covers.
    private(set) var byRevision: [UInt64: Dot] = [:]
    /// Lineages that name two different writes at one revision of the chain: impossible
    /// when every origin records what it replaced.
    private(set) var contradictions: [String] = []

    init(final: SeenPropertyWrite, seen: [Dot: SeenPropertyWrite]) {
        byRevision[final.revision] = final.dot
        var expanded = Set<Dot>()
        var next: SeenPropertyWrite? = final
        // Each round extends the chain below its lowest known revision: at most `revision` rounds.
        var rounds: UInt64 = 0
        while let write = next, rounds <= final.revision {
            rounds += 1
            expanded.insert(write.dot)
            for (offset, dot) in write.lineage.enumerated() where UInt64(offset) + 1 < write.revision {
                let revision = write.revision - 1 - UInt64(offset)
                if let known = byRevision[revision], known != dot {
                    contradictions.append("revision \(revision): \(known) on the chain, \(dot) in the lineage of \(write.dot)")
                } else {
                    byRevision[revision] = dot
                }
            }
            // The chain write seen on a node whose lineage reaches lowest, if it reaches lower than the chain does.
            let lowest = byRevision.keys.min() ?? final.revision
            next = byRevision.compactMap { revision, dot -> (SeenPropertyWrite, UInt64)? in
                guard !expanded.contains(dot), let seenWrite = seen[dot], seenWrite.revision == revision else { return nil }
                return (seenWrite, revision - min(revision, UInt64(seenWrite.lineage.count)))
            }.filter { $0.1 < lowest }.min { $0.1 < $1.1 }?.0
        }
    }

    /// Whether the write `dot`, which made `revision`, is on the chain; nil when the chain does not reach that revision.
    func keeps(_ dot: Dot, revision: UInt64) -> Bool? { byRevision[revision].map { $0 == dot } }

    func covers(_ revision: UInt64) -> Bool { byRevision[revision] != nil }

    var lowestRevision: UInt64? { byRevision.keys.min() }
}
