/// A tiny protobuf writer for hand-made (often invalid) test inputs.
struct ProtoWriter {
    var bytes: [UInt8] = []

    mutating func rawVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7f) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func varint(_ field: UInt64, _ value: UInt64) {
        rawVarint(field << 3)
        rawVarint(value)
    }

    mutating func zigzag(_ field: UInt64, _ value: Int64) {
        varint(field, UInt64(bitPattern: (value << 1) ^ (value >> 63)))
    }

    mutating func fixed64(_ field: UInt64, _ value: UInt64) {
        rawVarint(field << 3 | 1)
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func bytes(_ field: UInt64, _ value: [UInt8]) {
        rawVarint(field << 3 | 2)
        rawVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ field: UInt64, _ value: String) { bytes(field, Array(value.utf8)) }

    mutating func message(_ field: UInt64, _ build: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        build(&inner)
        bytes(field, inner.bytes)
    }

    static func build(_ build: (inout ProtoWriter) -> Void) -> [UInt8] {
        var writer = ProtoWriter()
        build(&writer)
        return writer.bytes
    }
}
