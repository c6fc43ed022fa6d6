/// What one replica has seen from one origin: every sequence up to `contiguous`,
/// plus those that arrived early (after a gap), kept sorted until the gap fills.
public struct OriginProgress: Hashable, Sendable {
    public var contiguous: UInt64
    public var early: [UInt64]

    public init(contiguous: UInt64 = 0, early: [UInt64] = []) {
        self.contiguous = contiguous
        self.early = early
    }

    public func contains(_ sequence: UInt64) -> Bool {
        sequence <= contiguous || (!early.isEmpty && binarySearch(sequence) != nil)
    }

    /// Records a sequence; returns false when it was already there.
    @discardableResult
    public mutating func insert(_ sequence: UInt64) -> Bool {
        if sequence <= contiguous { return false }
        if sequence == contiguous + 1 && early.isEmpty {
            contiguous = sequence
            return true
        }
        var low = 0, high = early.count
        while low < high {
            let mid = (low + high) / 2
            if early[mid] < sequence { low = mid + 1 } else { high = mid }
        }
        if low < early.count && early[low] == sequence { return false }
        early.insert(sequence, at: low)
        fold()
        return true
    }

    public mutating func formUnion(_ other: OriginProgress) {
        if other.contiguous > contiguous {
            contiguous = other.contiguous
        }
        if !other.early.isEmpty {
            early = Array(Set(early).union(other.early)).sorted()
        }
        fold()
    }

    /// The missing sequence ranges below the highest one seen.
    public var gaps: [ClosedRange<UInt64>] {
        var result: [ClosedRange<UInt64>] = []
        var next = contiguous + 1
        for sequence in early {
            if sequence > next { result.append(next...(sequence - 1)) }
            next = sequence + 1
        }
        return result
    }

    public var highest: UInt64 { early.last ?? contiguous }

    private mutating func fold() {
        var dropped = 0
        for sequence in early {
            if sequence <= contiguous { dropped += 1; continue }
            if sequence == contiguous + 1 { contiguous = sequence; dropped += 1 } else { break }
        }
        if dropped > 0 { early.removeFirst(dropped) }
    }

    private func binarySearch(_ sequence: UInt64) -> Int? {
        var low = 0, high = early.count
        while low < high {
            let mid = (low + high) / 2
            if early[mid] < sequence { low = mid + 1 } else { high = mid }
        }
        return low < early.count && early[low] == sequence ? low : nil
    }
}

/// A version vector keyed by the sequencing replicas (nodes), never by user or session.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    public private(set) var origins: [ReplicaID: OriginProgress]

    public init(_ origins: [ReplicaID: OriginProgress] = [:]) { self.origins = origins }

    public init(contiguous: [ReplicaID: UInt64]) {
        self.origins = contiguous.mapValues { OriginProgress(contiguous: $0) }
    }

    public static let empty = VersionVector()

    /// Sequence 0 is no delta (sequences start at 1): it stands for "never written",
    /// and every vector contains it.
    @inline(__always)
    public func contains(_ dot: Dot) -> Bool {
        dot.sequence == 0 || (origins[dot.origin]?.contains(dot.sequence) ?? false)
    }

    @discardableResult
    public mutating func insert(_ dot: Dot) -> Bool {
        origins[dot.origin, default: OriginProgress()].insert(dot.sequence)
    }

    public mutating func formUnion(_ other: VersionVector) {
        for (origin, progress) in other.origins {
            origins[origin, default: OriginProgress()].formUnion(progress)
        }
    }

    public func contiguous(_ origin: ReplicaID) -> UInt64 { origins[origin]?.contiguous ?? 0 }

    /// Forgets an origin (a retired one: its later deltas are refused at the door).
    public mutating func remove(_ origin: ReplicaID) { origins[origin] = nil }

    /// True when this vector has seen every dot `other` has.
    public func dominates(_ other: VersionVector) -> Bool {
        for (origin, progress) in other.origins {
            let mine = origins[origin] ?? OriginProgress()
            if progress.contiguous > mine.contiguous {
                // Everything in (mine.contiguous, progress.contiguous] must be early here;
                // `early` is sorted and unique, so counting is enough.
                let needed = progress.contiguous - mine.contiguous
                let present = mine.early.lazy.filter { $0 <= progress.contiguous }.count
                if UInt64(present) != needed { return false }
            }
            for sequence in progress.early where !mine.contains(sequence) { return false }
        }
        return true
    }

    /// Total number of dots seen (for metrics and tests).
    public var count: UInt64 {
        origins.values.reduce(0) { $0 + $1.contiguous + UInt64($1.early.count) }
    }

    public var description: String {
        origins.keys.sorted().map { key in
            let progress = origins[key]!
            return progress.early.isEmpty ? "\(key):\(progress.contiguous)" : "\(key):\(progress.contiguous)+\(progress.early)"
        }.joined(separator: ",")
    }
}

/// `VersionVector.contains` for the many dots of one cut (`missing(since:)` checks
/// every register of every user): with a handful of origins, their contiguous
/// prefixes sit in two small arrays, scanned instead of hashed per dot.
struct SeenCheck {
    let seen: VersionVector
    private var origins: [ReplicaID] = []
    private var contiguous: [UInt64] = []
    private var hasEarly: [Bool] = []
    private let scans: Bool

    static let maxScannedOrigins = 16

    init(_ seen: VersionVector) {
        self.seen = seen
        scans = seen.origins.count <= Self.maxScannedOrigins
        guard scans else { return }
        for (origin, progress) in seen.origins {
            origins.append(origin)
            contiguous.append(progress.contiguous)
            hasEarly.append(!progress.early.isEmpty)
        }
    }

    @inline(__always)
    func contains(_ dot: Dot) -> Bool {
        if dot.sequence == 0 { return true }
        guard scans else { return seen.contains(dot) }
        for index in origins.indices where origins[index] == dot.origin {
            return dot.sequence <= contiguous[index] || (hasEarly[index] && seen.contains(dot))
        }
        return false
    }
}
