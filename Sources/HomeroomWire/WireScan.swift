/// A walk over the top level of a protobuf message, before protobuf-c parses
/// it: it tells a truncated message from a malformed one (protobuf-c reports
/// only failure) and reads the envelope's protocol version, so a message of
/// an unknown version is refused before anything else is read.
enum WireScan {
    /// Checks the top-level framing of `bytes` and returns the last value of
    /// varint field `versionField`, if asked and present.
    static func scan(_ bytes: UnsafeRawBufferPointer, versionField: UInt64? = nil) throws(WireError) -> UInt64? {
        var position = 0
        let count = bytes.count
        var version: UInt64?

        func varint() throws(WireError) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard position < count else { throw .truncated(needed: position - count + 1, available: 0) }
                let byte = bytes[position]
                position += 1
                if shift == 63 && byte > 1 { throw .malformed("varint longer than 64 bits at byte \(position - 1)") }
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
                if shift > 63 { throw .malformed("varint longer than 10 bytes at byte \(position - 1)") }
            }
        }

        while position < count {
            let start = position
            let tag = try varint()
            let field = tag >> 3
            if field == 0 { throw .malformed("field number 0 at byte \(start)") }
            if field > 536_870_911 { throw .malformed("field number \(field) out of range at byte \(start)") }
            switch tag & 7 {
            case 0:
                let value = try varint()
                if field == versionField { version = value }
            case 1:
                guard count - position >= 8 else { throw .truncated(needed: 8, available: count - position) }
                position += 8
            case 2:
                let length = try varint()
                let available = count - position
                guard length <= UInt64(available) else {
                    throw .truncated(needed: length > UInt64(Int.max) ? Int.max : Int(length), available: available)
                }
                position += Int(length)
            case 5:
                guard count - position >= 4 else { throw .truncated(needed: 4, available: count - position) }
                position += 4
            case let wireType:
                throw .malformed("wire type \(wireType) of field \(field) at byte \(start) is not used by homeroom.v1")
            }
        }
        return version
    }
}
