@preconcurrency import Glibc

/// Keys on disk as hex text. Secret key files must be private (mode 600 or
/// stricter): a readable one is refused, never used.
public enum KeyFiles {
    public static func write(_ bytes: [UInt8], to path: String, secret: Bool) throws(SecurityError) {
        let text = hex(bytes) + "\n"
        let flags = O_WRONLY | O_CREAT | O_TRUNC
        let mode: mode_t = secret ? 0o600 : 0o644
        let descriptor = open(path, flags, mode)
        guard descriptor >= 0 else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        if secret { fchmod(descriptor, 0o600) }
        let written = text.utf8CString.withUnsafeBufferPointer { buffer in Glibc.write(descriptor, buffer.baseAddress, buffer.count - 1) }
        guard written == text.utf8.count else { throw .keyFile(path: path, reason: "short write") }
    }

    public static func read(_ path: String, secret: Bool) throws(SecurityError) -> [UInt8] {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        if secret && info.st_mode & 0o077 != 0 { throw .unsafePermissions(path: path, mode: UInt32(info.st_mode & 0o777)) }
        guard let file = fopen(path, "r") else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 512)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { throw .keyFile(path: path, reason: "empty") }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).filter { !$0.isWhitespace }
        guard let bytes = unhex(text) else { throw .keyFile(path: path, reason: "not a hex key") }
        return bytes
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 15)])
        }
        return out
    }

    public static func unhex(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count / 2)
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: return c - 48
            case 97...102: return c - 87
            case 65...70: return c - 55
            default: return nil
            }
        }
        var index = 0
        while index < chars.count {
            guard let high = value(chars[index]), let low = value(chars[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
