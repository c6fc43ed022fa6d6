/// Which lane a client's request waits in at the node, read from its bytes before
/// they are decoded (on the transport's loop thread, so it must be cheap): a write
/// whose operation is a teacher's control (`Operation.isTeacherControl`) goes ahead
/// of everything else waiting. A walk over three levels of framing (Envelope ->
/// WriteRequest -> Delta), bounded by the bytes; anything it cannot read is ordinary
/// and is refused, if it must be, by the real decode later.
public enum WireLane {
    /// The Delta `op` field numbers of `Operation.isTeacherControl` (delta.proto):
    /// set_stage, set_privilege, set_board, set_class_state, mute_all, kick, ban,
    /// set_chat_muted, set_device_muted, set_hand_raising, invite_to_stage, answer_invitation.
    static let teacherControlFields: Set<UInt64> = [6, 8, 9, 21, 22, 25, 26, 29, 43, 44, 45, 46]

    /// Control writes are small (a user id, a flag): a request larger than this is
    /// ordinary, so the walk costs the loop thread little whatever a peer sends.
    public static let maxControlBytes = 4_096

    /// Whether `request` (an encoded Envelope) is a write of a teacher's control.
    public static func isTeacherControl(request: [UInt8]) -> Bool {
        guard request.count <= maxControlBytes else { return false }
        return request.withUnsafeBytes { bytes in
            // Envelope: one body, and it is write_request (13); WriteRequest: one write (3).
            guard let write = single(13, in: bytes, 0..<bytes.count, otherFieldsFrom: 7),
                  let delta = single(3, in: bytes, write, otherFieldsFrom: nil) else { return false }
            return operation(in: bytes, delta).map(teacherControlFields.contains) ?? false
        }
    }

    /// The payload of field `number` when it occurs exactly once, is length-delimited, and
    /// no other field numbered `otherFieldsFrom` or more occurs (a oneof's other members);
    /// nil otherwise. The decoder keeps the last of a oneof and merges a repeated message,
    /// so anything but one clean occurrence is ordinary.
    private static func single(_ number: UInt64, in bytes: UnsafeRawBufferPointer, _ range: Range<Int>,
                               otherFieldsFrom: UInt64?) -> Range<Int>? {
        var found: Range<Int>?
        var count = 0
        var walk = Walk(bytes: bytes, position: range.lowerBound, end: range.upperBound)
        while let (field, value) = walk.next() {
            if field == number {
                count += 1
                found = value
            } else if let floor = otherFieldsFrom, field >= floor {
                return nil
            }
        }
        return walk.failed || count != 1 ? nil : found
    }

    /// The Delta's op field number: its one length-delimited field numbered 6 or more,
    /// other than 40 (origin). Two of them, or framing it cannot read: nil.
    private static func operation(in bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> UInt64? {
        var walk = Walk(bytes: bytes, position: range.lowerBound, end: range.upperBound)
        var operation: UInt64?
        while let (field, value) = walk.next() {
            guard field >= 6, field != 40, value != nil else { continue }
            if operation != nil { return nil }
            operation = field
        }
        return walk.failed ? nil : operation
    }

    /// Protobuf fields one after another: (number, payload range if length-delimited).
    private struct Walk {
        let bytes: UnsafeRawBufferPointer
        var position: Int
        let end: Int
        var failed = false

        mutating func varint() -> UInt64? {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while position < end, shift <= 63 {
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }

        mutating func next() -> (UInt64, Range<Int>?)? {
            guard position < end, !failed else { return nil }
            guard let tag = varint() else { failed = true; return nil }
            switch tag & 7 {
            case 0:
                guard varint() != nil else { failed = true; return nil }
                return (tag >> 3, nil)
            case 1, 5:
                let size = tag & 7 == 1 ? 8 : 4
                guard end - position >= size else { failed = true; return nil }
                position += size
                return (tag >> 3, nil)
            case 2:
                guard let length = varint(), length <= UInt64(end - position) else { failed = true; return nil }
                let start = position
                position += Int(length)
                return (tag >> 3, start..<position)
            default:
                failed = true
                return nil
            }
        }
    }
}
