@preconcurrency import Glibc

/// What this process holds, read from /proc (Linux): descriptors and threads.
enum ProcessResources {
    /// Open file descriptors of this process.
    static func openDescriptors() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(dir) }
        var count = 0
        // The name is read in place: an entry is only as long as its name (d_reclen), so
        // copying the whole `dirent` (`entry.pointee`) can read past the end of the
        // directory buffer, which crashed a node holding 10,000 descriptors.
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
        while let entry = readdir(dir) {
            let name = UnsafeRawPointer(entry).advanced(by: nameOffset).assumingMemoryBound(to: CChar.self)
            if name[0] == 0x2e && (name[1] == 0 || (name[1] == 0x2e && name[2] == 0)) { continue }
            count += 1
        }
        return count - 1 // the directory stream's own descriptor
    }

    /// Threads of this process (the `Threads:` line of /proc/self/status).
    static func threads() -> Int {
        guard let file = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), file) != nil {
            let text = String(cString: line)
            if text.hasPrefix("Threads:") {
                let digits = text.dropFirst("Threads:".count).filter { $0.isNumber }
                return Int(String(digits)) ?? -1
            }
        }
        return -1
    }

    /// The soft descriptor limit.
    static func descriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return limit.rlim_cur >= rlim_t(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// Raises the soft descriptor limit to the hard one (at most `cap`): the default soft
    /// limit (1,024) is below what a node with thousands of clients needs.
    @discardableResult
    static func raiseDescriptorLimit(cap: Int = 65_536) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return descriptorLimit() }
        let wanted = min(limit.rlim_max, rlim_t(cap))
        if limit.rlim_cur < wanted {
            limit.rlim_cur = wanted
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return descriptorLimit()
    }
}

/// Decides whether a node is wedged: pure, so the rule is tested without a process.
struct WedgeRule: Sendable, Equatable {
    /// Descriptors at or past which the node steps aside.
    var maxDescriptors: Int
    /// An event loop silent this long is stuck (they wake at least every second).
    var loopStallMillis: UInt64 = 10_000

    struct Reading: Sendable {
        var descriptors: Int
        /// Milliseconds since each transport loop last turned, by loop name.
        var loopSilenceMillis: [String: UInt64]
    }

    /// Why the node is wedged, or nil. Once wedged, it recovers only below 90% of the
    /// descriptor bound, so it does not flap around the threshold.
    func verdict(_ reading: Reading, wedgedNow: Bool) -> String? {
        let bound = wedgedNow ? maxDescriptors * 9 / 10 : maxDescriptors
        if reading.descriptors >= bound {
            return "\(reading.descriptors) open descriptors (the bound is \(maxDescriptors))"
        }
        for (name, silence) in reading.loopSilenceMillis.sorted(by: { $0.key < $1.key }) where silence >= loopStallMillis {
            return "the \(name) event loop has not turned for \(silence) ms"
        }
        return nil
    }
}
