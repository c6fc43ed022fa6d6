@preconcurrency import Glibc

enum HeapUsage {
    /// Resident memory of this process, from /proc/self/statm (pages * page size).
    /// Measured around building a large room, the difference is what the room costs.
    static func bytesInUse() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return 0 }
        defer { fclose(file) }
        var size = 0, resident = 0
        guard withUnsafeMutablePointer(to: &size, { sizePointer in
            withUnsafeMutablePointer(to: &resident) { residentPointer in
                vfscanf_wrapper(file, sizePointer, residentPointer)
            }
        }) else { return 0 }
        return resident * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static func vfscanf_wrapper(_ file: UnsafeMutablePointer<FILE>, _ size: UnsafeMutablePointer<Int>, _ resident: UnsafeMutablePointer<Int>) -> Bool {
        var buffer = [CChar](repeating: 0, count: 128)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return false }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: " ")
        guard parts.count >= 2, let a = Int(parts[0]), let b = Int(parts[1]) else { return false }
        size.pointee = a
        resident.pointee = b
        return true
    }
}
