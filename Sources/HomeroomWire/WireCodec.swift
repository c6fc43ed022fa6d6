import CHomeroomProto
import HomeroomCore

/// Encodes and decodes Homeroom messages (`homeroom.v1`, see Proto/ and
/// docs/PROTOCOL.md). Encoding is canonical: equal values give identical bytes.
/// Decoding is bounded by `WireLimits`, validates every field, and either
/// returns a whole value or throws a `WireError`: never a partial result.
public enum WireCodec {
    // MARK: Envelope

    /// The bytes of `envelope` (a `homeroom.v1.Envelope`).
    public static func encode(_ envelope: WireEnvelope) -> [UInt8] {
        let arena = Arena()
        let message = CEncoder(arena: arena).envelope(envelope)
        return withExtendedLifetime(arena) {
            pack(message, size: homeroom__v1__envelope__get_packed_size, pack: homeroom__v1__envelope__pack)
        }
    }

    public static func decode(_ bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> WireEnvelope {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WireError) in try decode(buffer, limits: limits) }
        }
        return try result.get()
    }

    public static func decode(_ bytes: UnsafeRawBufferPointer, limits: WireLimits = .default) throws(WireError) -> WireEnvelope {
        try checkSize(bytes, limits)
        let version = try WireScan.scan(bytes, versionField: 1) ?? 0
        if version == 0 { throw .missingField("envelope.protocol_version") }
        guard version <= UInt64(UInt32.max), WireProtocol.supportedVersions.contains(UInt32(version)) else {
            throw .unsupportedVersion(got: UInt32(truncatingIfNeeded: version), supported: WireProtocol.supportedVersions)
        }
        return try unpack(bytes, limits, "homeroom.v1.Envelope", homeroom__v1__envelope__unpack) { message throws(WireError) in
            try CDecoder(limits: limits).envelope(message)
        }
    }

    // MARK: Hot path: a bare DeltaBatch

    /// The bytes of a `homeroom.v1.DeltaBatch` (no envelope).
    public static func encodeBatch(origin: ReplicaID, deltas: [Delta]) -> [UInt8] {
        let arena = Arena()
        let message = CEncoder(arena: arena).deltaBatch(origin: origin, deltas: deltas)
        return withExtendedLifetime(arena) {
            pack(message, size: homeroom__v1__delta_batch__get_packed_size, pack: homeroom__v1__delta_batch__pack)
        }
    }

    public static func decodeBatch(_ bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> WireMessage.DeltaBatch {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WireError) in try decodeBatch(buffer, limits: limits) }
        }
        return try result.get()
    }

    public static func decodeBatch(_ bytes: UnsafeRawBufferPointer, limits: WireLimits = .default) throws(WireError) -> WireMessage.DeltaBatch {
        try checkSize(bytes, limits)
        _ = try WireScan.scan(bytes)
        return try unpack(bytes, limits, "homeroom.v1.DeltaBatch", homeroom__v1__delta_batch__unpack) { message throws(WireError) in
            try CDecoder(limits: limits).deltaBatch(message, "delta_batch")
        }
    }

    // MARK: A bare RoomPatch (snapshot or patch)

    /// The bytes of a `homeroom.v1.RoomPatch` (no envelope). Canonical: two
    /// equal states give identical bytes, whatever order they were built in.
    public static func encodePatch(_ state: RoomState) -> [UInt8] {
        let arena = Arena()
        let message = PatchEncoder.encode(state, with: CEncoder(arena: arena))
        return withExtendedLifetime(arena) {
            pack(message, size: homeroom__v1__room_patch__get_packed_size, pack: homeroom__v1__room_patch__pack)
        }
    }

    /// `encodePatch` with every user built as C structures for protobuf-c: the
    /// reference the written plain users are compared with in tests.
    static func encodePatchThroughStructs(_ state: RoomState) -> [UInt8] {
        let arena = Arena()
        let message = PatchEncoder.encode(state, with: CEncoder(arena: arena), writesPlainUsers: false)
        return withExtendedLifetime(arena) {
            pack(message, size: homeroom__v1__room_patch__get_packed_size, pack: homeroom__v1__room_patch__pack)
        }
    }

    /// A `RoomState` with its derived indexes rebuilt, ready to merge.
    public static func decodePatch(_ bytes: [UInt8], limits: WireLimits = .default) throws(WireError) -> RoomState {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(WireError) in try decodePatch(buffer, limits: limits) }
        }
        return try result.get()
    }

    public static func decodePatch(_ bytes: UnsafeRawBufferPointer, limits: WireLimits = .default) throws(WireError) -> RoomState {
        try checkSize(bytes, limits)
        _ = try WireScan.scan(bytes)
        return try unpack(bytes, limits, "homeroom.v1.RoomPatch", homeroom__v1__room_patch__unpack) { message throws(WireError) in
            try CDecoder(limits: limits).roomPatch(message, "room_patch")
        }
    }

    // MARK: Transport helpers

    /// The pub/sub topic of a room: its id's UTF-8 bytes and a 0 byte, so that
    /// no room's topic is a prefix of another's (see docs/PROTOCOL.md).
    public static func topic(forRoom roomID: String) -> [UInt8] {
        Array(roomID.utf8) + [0]
    }

    // MARK: Internals

    @inline(__always)
    private static func checkSize(_ bytes: UnsafeRawBufferPointer, _ limits: WireLimits) throws(WireError) {
        if bytes.count > limits.maxMessageBytes { throw .oversized(limit: limits.maxMessageBytes, actual: bytes.count) }
    }

    private static func pack<M>(_ message: UnsafeMutablePointer<M>,
                                size: (UnsafePointer<M>?) -> Int,
                                pack: (UnsafePointer<M>?, UnsafeMutablePointer<UInt8>?) -> Int) -> [UInt8] {
        let length = size(message)
        if length == 0 { return [] }
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            initialized = pack(message, buffer.baseAddress!)
            precondition(initialized == length, "protobuf-c packed \(initialized) bytes, announced \(length)")
        }
    }

    /// Parses `bytes` with protobuf-c into an arena bounded by `maxDecodedBytes`,
    /// maps the result, and frees everything in one go.
    private static func unpack<M, R>(_ bytes: UnsafeRawBufferPointer, _ limits: WireLimits, _ typeName: String,
                                     _ unpack: (UnsafeMutablePointer<ProtobufCAllocator>?, Int, UnsafePointer<UInt8>?) -> UnsafeMutablePointer<M>?,
                                     _ map: (UnsafeMutablePointer<M>) throws(WireError) -> R) throws(WireError) -> R {
        let arena = Arena(budget: limits.maxDecodedBytes)
        let result: Result<R, WireError> = arena.withAllocator { allocator in
            let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self)
            // protobuf-c wants a non-null pointer even for an empty message.
            var empty: UInt8 = 0
            let message = withUnsafePointer(to: &empty) { emptyPointer in
                unpack(allocator, bytes.count, base ?? emptyPointer)
            }
            guard let message else {
                if arena.budgetExceeded {
                    return .failure(.limitExceeded(what: "memory to parse one message (bytes)", limit: limits.maxDecodedBytes,
                                                   actual: arena.allocated))
                }
                return .failure(.malformed("protobuf-c could not parse the bytes as a \(typeName)"))
            }
            return Result { () throws(WireError) in try map(message) }
        }
        return try result.get()
    }
}
