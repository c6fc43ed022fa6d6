#if canImport(Glibc)
@preconcurrency import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CHomeroomProto

/// Bump allocator for the C structures of one encode or decode. Everything it
/// hands out lives until the arena is released, which frees it in one go: no
/// per-struct `malloc`/`free`, and no leak on any error path.
///
/// Not thread-safe; one arena serves one call.
final class Arena {
    private static let blockSize = 64 * 1024

    private var blocks: [UnsafeMutableRawPointer] = []
    private var cursor: UnsafeMutableRawPointer?
    private var remaining = 0
    /// Bytes handed out so far, plus the refused request once the budget is exceeded.
    private(set) var allocated = 0
    /// When non-nil, `allocate` fails (returns nil) past this many bytes.
    let budget: Int?
    private(set) var budgetExceeded = false

    init(budget: Int? = nil) {
        self.budget = budget
    }

    deinit {
        for block in blocks { free(block) }
    }

    /// Raw, 16-byte aligned memory, or nil when the budget is spent or memory is out.
    @inline(__always)
    func allocateRaw(_ size: Int) -> UnsafeMutableRawPointer? {
        let rounded = (max(size, 1) + 15) & ~15
        if let budget, allocated + rounded > budget {
            budgetExceeded = true
            allocated += rounded
            return nil
        }
        allocated += rounded
        if rounded <= remaining, let pointer = cursor {
            cursor = pointer + rounded
            remaining -= rounded
            return pointer
        }
        return allocateSlow(rounded)
    }

    @inline(never)
    private func allocateSlow(_ rounded: Int) -> UnsafeMutableRawPointer? {
        if rounded > Self.blockSize / 4 {
            // Large: a block of its own, so the current block keeps its tail.
            guard let block = malloc(rounded) else { return nil }
            blocks.append(block)
            return block
        }
        guard let block = malloc(Self.blockSize) else { return nil }
        blocks.append(block)
        cursor = block + rounded
        remaining = Self.blockSize - rounded
        return block
    }

    /// Typed, uninitialized memory for `count` values (encode side: never fails).
    @inline(__always)
    func allocate<T>(_: T.Type, count: Int = 1) -> UnsafeMutablePointer<T> {
        precondition(MemoryLayout<T>.alignment <= 16)
        guard let raw = allocateRaw(MemoryLayout<T>.stride * count) else {
            fatalError("Homeroom wire encoder: out of memory")
        }
        return raw.bindMemory(to: T.self, capacity: count)
    }

    /// A NUL-terminated copy of `string`'s UTF-8 bytes. protobuf-c strings are
    /// C strings: a string with an embedded NUL is cut at the NUL.
    @inline(__always)
    func cString(_ string: String) -> UnsafeMutablePointer<CChar> {
        var string = string
        return string.withUTF8 { utf8 in
            let pointer = allocate(CChar.self, count: utf8.count + 1)
            if let base = utf8.baseAddress {
                UnsafeMutableRawPointer(pointer).copyMemory(from: base, byteCount: utf8.count)
            }
            pointer[utf8.count] = 0
            return pointer
        }
    }

    /// A copy of `bytes` as protobuf-c binary data.
    func binary(_ bytes: [UInt8]) -> ProtobufCBinaryData {
        if bytes.isEmpty { return ProtobufCBinaryData(len: 0, data: nil) }
        let pointer = allocate(UInt8.self, count: bytes.count)
        bytes.withUnsafeBufferPointer { source in
            pointer.initialize(from: source.baseAddress!, count: source.count)
        }
        return ProtobufCBinaryData(len: bytes.count, data: pointer)
    }

    /// A copy of `values` for a repeated uint64 field: its count and elements (nil when empty).
    func uint64s(_ values: [UInt64]) -> (Int, UnsafeMutablePointer<UInt64>?) {
        guard !values.isEmpty else { return (0, nil) }
        let pointer = allocate(UInt64.self, count: values.count)
        values.withUnsafeBufferPointer { pointer.initialize(from: $0.baseAddress!, count: $0.count) }
        return (values.count, pointer)
    }

    /// An array of `count` pointers, for a repeated message field.
    @inline(__always)
    func pointers<T>(_: T.Type, count: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?> {
        allocate(UnsafeMutablePointer<T>?.self, count: max(count, 1))
    }
}

/// The C empty string, for string fields left unset.
nonisolated(unsafe) let emptyCString: UnsafeMutablePointer<CChar> = {
    let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
    pointer.initialize(to: 0)
    return pointer
}()

// MARK: - protobuf-c allocator over an arena (decode side)

private func arenaAlloc(_ data: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
    guard let data else { return nil }
    return Unmanaged<Arena>.fromOpaque(data).takeUnretainedValue().allocateRaw(size)
}

private func arenaFree(_: UnsafeMutableRawPointer?, _: UnsafeMutableRawPointer?) {
    // Freed with the arena.
}

extension Arena {
    /// Runs `body` with a protobuf-c allocator that draws from this arena.
    /// Messages unpacked with it need no `free_unpacked`: the arena frees them.
    func withAllocator<R>(_ body: (UnsafeMutablePointer<ProtobufCAllocator>) -> R) -> R {
        var allocator = ProtobufCAllocator(alloc: arenaAlloc, free: arenaFree,
                                           allocator_data: Unmanaged.passUnretained(self).toOpaque())
        return withExtendedLifetime(self) { withUnsafeMutablePointer(to: &allocator) { body($0) } }
    }
}
